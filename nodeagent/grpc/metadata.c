/* gRPC's header value formats (metadata_int.h). */
#include "nodeagent/grpc/metadata_int.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"

static bool needs_escape(uint8_t c)
{
    return c < 0x20 || c > 0x7e || c == '%';
}

char *fg__grpc_percent_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    if (n > FG__GRPC_MESSAGE_MAX) {
        n = FG__GRPC_MESSAGE_MAX;
        while (n > 0 && ((uint8_t)s[n] & 0xc0) == 0x80) /* never cut a UTF-8 character in two */
            n--;
    }
    struct fg_buf b = FG_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (needs_escape(c)) {
            char esc[3] = { '%', hex[c >> 4], hex[c & 0xf] };
            fg_buf_put(&b, esc, 3);
        } else {
            fg_buf_put(&b, &s[i], 1);
        }
    }
    return fg_buf_take(&b);
}

static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *fg__grpc_percent_decode(const uint8_t *v, size_t n)
{
    struct fg_buf b = FG_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '%' && n - i >= 3 && hex_value(v[i + 1]) >= 0 && hex_value(v[i + 2]) >= 0) {
            char c = (char)(hex_value(v[i + 1]) << 4 | hex_value(v[i + 2]));
            fg_buf_put(&b, &c, 1);
            i += 2;
        } else {
            fg_buf_put(&b, &v[i], 1);
        }
    }
    return fg_buf_take(&b);
}

bool fg__grpc_timeout_parse(const uint8_t *v, size_t n, uint64_t *ns)
{
    if (n < 2 || n > 9)
        return false;
    uint64_t value = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        value = value * 10 + (uint64_t)(v[i] - '0');
    }
    uint64_t unit;
    switch (v[n - 1]) {
    case 'H': unit = 3600ull * 1000000000ull; break;
    case 'M': unit = 60ull * 1000000000ull; break;
    case 'S': unit = 1000000000ull; break;
    case 'm': unit = 1000000ull; break;
    case 'u': unit = 1000ull; break;
    case 'n': unit = 1; break;
    default: return false;
    }
    *ns = value > UINT64_MAX / unit ? UINT64_MAX : value * unit;
    return true;
}

void fg__grpc_timeout_format(uint64_t ms, char out[FG__GRPC_TIMEOUT_MAX])
{
    static const struct { char unit; uint64_t ms; } units[] = {
        { 'm', 1 }, { 'S', 1000 }, { 'M', 60000 }, { 'H', 3600000 } };
    for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++) {
        uint64_t v = ms / units[i].ms + (ms % units[i].ms != 0); /* rounded up: never a shorter deadline */
        if (v <= 99999999u) {
            snprintf(out, FG__GRPC_TIMEOUT_MAX, "%llu%c", (unsigned long long)v, units[i].unit);
            return;
        }
    }
    snprintf(out, FG__GRPC_TIMEOUT_MAX, "99999999H");
}

bool fg__grpc_content_type_ok(const uint8_t *v, size_t n)
{
    static const char want[] = "application/grpc";
    size_t w = sizeof(want) - 1;
    if (n < w || memcmp(v, want, w) != 0)
        return false;
    return n == w || v[w] == '+' || v[w] == ';';
}

bool fg__grpc_name_is(const uint8_t *name, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(name, want, n) == 0;
}
