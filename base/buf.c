/* buf — growable buffer; see buf.h. */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "assert.h"
#include "mem.h"

void fg_buf_init(struct fg_buf *b, size_t limit)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = limit;
}

void fg_buf_cleanup(struct fg_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void fg_buf_reset(struct fg_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

const char *fg_buf_str(const struct fg_buf *b)
{
    return b->data ? b->data : "";
}

char *fg_buf_take(struct fg_buf *b)
{
    char *p = b->data ? b->data : fg_strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

static void reserve(struct fg_buf *b, size_t need)
{
    if (need + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap *= 2;
    b->data = fg_realloc(b->data, cap);
    b->cap = cap;
}

enum fg_err fg_buf_append(struct fg_buf *b, const void *data, size_t n)
{
    if (b->limit && (n > b->limit || b->len > b->limit - n))
        return FG_E_TOO_BIG;
    reserve(b, b->len + n);
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return FG_OK;
}

void fg_buf_put(struct fg_buf *b, const void *data, size_t n)
{
    fg_assert(b->limit == 0);
    enum fg_err err = fg_buf_append(b, data, n);
    (void)err;
}

void fg_buf_put_str(struct fg_buf *b, const char *s)
{
    fg_buf_put(b, s, strlen(s));
}

enum fg_err fg_buf_puts(struct fg_buf *b, const char *s)
{
    return fg_buf_append(b, s, strlen(s));
}

enum fg_err fg_buf_printf(struct fg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return FG_E_INVAL;
    if ((size_t)n < sizeof small)
        return fg_buf_append(b, small, (size_t)n);
    if (b->limit && ((size_t)n > b->limit || b->len > b->limit - (size_t)n))
        return FG_E_TOO_BIG;
    reserve(b, b->len + (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return FG_OK;
}

void fg_buf_consume(struct fg_buf *b, size_t n)
{
    if (n >= b->len) {
        fg_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

bool fg_str_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool fg_str_has_suffix(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

bool fg_str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

enum fg_err fg_buf_read_file(struct fg_buf *b, const char *path, char *errmsg)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fg_errmsg(errmsg, FG_E_IO, "cannot open %s: %s", path, strerror(errno));
    enum fg_err err = FG_OK;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        err = fg_buf_append(b, chunk, n);
        if (err) {
            fg_errmsg(errmsg, err, "%s is larger than %zu bytes", path, b->limit);
            goto out_close;
        }
    }
    if (ferror(f))
        err = fg_errmsg(errmsg, FG_E_IO, "cannot read %s: %s", path, strerror(errno));
out_close:
    fclose(f);
    return err;
}

int fg_buf_run_command(struct fg_buf *b, const char *cmd)
{
    fg_buf_reset(b);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        if (fg_buf_append(b, chunk, n) != FG_OK)
            break;
    int status = pclose(p);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool fg_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
    static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
    for (size_t i = 0; s && i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) {
            *out = !strcmp(s, yes[i]);
            return true;
        }
    }
    return false;
}
