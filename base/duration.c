/*
 * duration — parsing and printing durations; see duration.h for the accepted form.
 */
#include "base/duration.h"

#include <stdio.h>
#include <string.h>

enum fg_err fg_duration_parse(const char *s, int64_t *ms, char *errmsg)
{
    if (!s || !*s)
        return fg_errmsg(errmsg, FG_E_PARSE, "empty duration");
    int64_t total = 0;
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9')
            return fg_errmsg(errmsg, FG_E_PARSE, "duration \"%s\": expected a number at \"%s\"", s, p);
        int64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            n = n * 10 + (*p - '0');
            if (n > FG_DURATION_MAX_MS)
                return fg_errmsg(errmsg, FG_E_PARSE, "duration \"%s\" is too long", s);
            p++;
        }
        int64_t unit;
        if (!strncmp(p, "ms", 2)) {
            unit = 1;
            p += 2;
        } else if (*p == 'h' || *p == 'm' || *p == 's') {
            unit = *p == 'h' ? 3600000 : *p == 'm' ? 60000 : 1000;
            p++;
        } else {
            return fg_errmsg(errmsg, FG_E_PARSE, "duration \"%s\": unit must be h, m, s or ms", s);
        }
        if (n > (FG_DURATION_MAX_MS - total) / unit)
            return fg_errmsg(errmsg, FG_E_PARSE, "duration \"%s\" is too long", s);
        total += n * unit;
    }
    *ms = total;
    return FG_OK;
}

void fg_duration_format(int64_t ms, char *out, unsigned long size)
{
    static const struct { int64_t ms; const char *unit; } units[] = {
        { 3600000, "h" }, { 60000, "m" }, { 1000, "s" }, { 1, "ms" },
    };
    size_t used = 0;
    out[0] = '\0';
    if (ms <= 0) {
        snprintf(out, size, "0s");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0] && used < size; i++) {
        int64_t n = ms / units[i].ms;
        ms %= units[i].ms;
        if (n)
            used += (size_t)snprintf(out + used, size - used, "%lld%s", (long long)n, units[i].unit);
    }
}
