/*
 * list_opts — the query parameters of a collection GET, parsed once, as kube-apiserver decodes its
 * ListOptions from the URL.
 *
 * kube-apiserver converts query strings with apimachinery's runtime conversions, and this file keeps
 * their rules so that a client gets the same answer here as from a real cluster:
 * - booleans (watch, allowWatchBookmarks, sendInitialEvents): absent is false; "0" and "false" in any
 *   case are false; every other value — "1", "True", "yes", even "" — is true. kube-apiserver never
 *   refuses a boolean, so neither does this server (Go's strconv.ParseBool, which refuses "yes",
 *   is what kube uses for command-line flags, not for query parameters).
 * - integers (limit, timeoutSeconds): strconv.ParseInt's syntax (optional sign, decimal digits, fits
 *   64 bits); anything else is a 400 BadRequest naming the parameter and its value. Negative values,
 *   and a timeout past a day, are refused here too.
 * resourceVersion and continue keep their own checks where they are read (watch.c, http_list.c).
 */
#include "e2e/apiserver/server.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TIMEOUT_S (24 * 3600L)

static bool query_flag(const struct evkeyvalq *q, const char *key)
{
    const char *v = fg__query_get(q, key);
    return v && strcmp(v, "0") && strcasecmp(v, "false");
}

bool fg__query_int64(const char *s, long long *out)
{
    const char *p = (*s == '+' || *s == '-') ? s + 1 : s;
    if (*p < '0' || *p > '9')
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno == ERANGE)
        return false;
    *out = v;
    return true;
}

/* An absent parameter leaves *out 0; a present one must be an integer in [0, max]. */
static bool query_count(struct evhttp_request *req, const struct evkeyvalq *q, const char *key, long max, long *out)
{
    const char *s = fg__query_get(q, key);
    long long v = 0;
    *out = 0;
    if (!s)
        return true;
    if (!fg__query_int64(s, &v)) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "invalid %s \"%s\": not an integer", key, s);
        return false;
    }
    if (v < 0 || v > max) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "invalid %s \"%s\": must be between 0 and %ld", key, s, max);
        return false;
    }
    *out = (long)v;
    return true;
}

bool fg__list_opts_parse(struct evhttp_request *req, const struct evkeyvalq *q, struct fg__list_opts *out)
{
    out->watch = query_flag(q, "watch");
    out->allow_bookmarks = query_flag(q, "allowWatchBookmarks");
    out->send_initial_events = query_flag(q, "sendInitialEvents");
    return query_count(req, q, "limit", LONG_MAX, &out->limit) &&
           query_count(req, q, "timeoutSeconds", MAX_TIMEOUT_S, &out->timeout_s);
}
