/* mem — aborting allocation wrappers; see mem.h. */
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "{\"level\":\"fatal\",\"component\":\"mem\",\"msg\":\"out of memory allocating %zu bytes\"}\n", n);
    abort();
}

void *fg_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *fg_calloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        oom(nmemb * size);
    return p;
}

void *fg_realloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

char *fg_strdup(const char *s)
{
    return fg_strndup(s, strlen(s));
}

char *fg_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = fg_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *fg_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    return out;
}
