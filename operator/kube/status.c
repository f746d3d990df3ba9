/*
 * status — turning API server refusals into enum fg_err plus a readable struct fg_kube_status.
 *
 * The HTTP code decides the error class; for 409 the Status reason separates AlreadyExists from
 * Conflict, and a Status object without a code (watch ERROR events sometimes omit it) is mapped by
 * its reason alone. Everything in the struct is owned by it and released by fg_kube_status_cleanup;
 * a body that is not a Status leaves reason NULL and puts a short printable excerpt in message.
 */
#include "operator/kube/status.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/internal.h"

#define EXCERPT_MAX 160
#define STATUS_MAX_BYTES (1u << 20)

static const struct {
    const char *reason;
    long code;
} reason_codes[] = {
    { "BadRequest", 400 },       { "Unauthorized", 401 },       { "Forbidden", 403 },
    { "NotFound", 404 },         { "MethodNotAllowed", 405 },   { "AlreadyExists", 409 },
    { "Conflict", 409 },         { "Gone", 410 },               { "Expired", 410 },
    { "UnsupportedMediaType", 415 }, { "Invalid", 422 },        { "TooManyRequests", 429 },
    { "InternalError", 500 },    { "ServiceUnavailable", 503 }, { "Timeout", 504 },
    { "ServerTimeout", 504 },
};

static long code_for_reason(const char *reason)
{
    for (size_t i = 0; reason && i < sizeof reason_codes / sizeof reason_codes[0]; i++)
        if (strcmp(reason, reason_codes[i].reason) == 0)
            return reason_codes[i].code;
    return 0;
}

static enum fg_err err_for_code(long code, const char *reason)
{
    if (code >= 200 && code < 300)
        return FG_OK;
    switch (code) {
    case 400: return FG_E_KUBE_BAD_REQUEST;
    case 401: return FG_E_KUBE_UNAUTHORIZED;
    case 403: return FG_E_KUBE_FORBIDDEN;
    case 404: return FG_E_KUBE_NOT_FOUND;
    case 405: return FG_E_KUBE_METHOD_NOT_ALLOWED;
    case 409: return fg_str_eq(reason, "AlreadyExists") ? FG_E_KUBE_ALREADY_EXISTS : FG_E_KUBE_CONFLICT;
    case 410: return FG_E_KUBE_GONE;
    case 415: return FG_E_KUBE_UNSUPPORTED_MEDIA;
    case 422: return FG_E_KUBE_INVALID;
    case 429: return FG_E_KUBE_TOO_MANY_REQUESTS;
    case 503: return FG_E_KUBE_UNAVAILABLE;
    case 504: return FG_E_KUBE_TIMEOUT;
    default: return code >= 500 && code < 600 ? FG_E_KUBE_INTERNAL : FG_E_KUBE_OTHER;
    }
}

static void fill_causes(json_object *status, struct fg_kube_status *st)
{
    json_object *causes = fg_json_get(status, "details", "causes", NULL);
    if (!json_object_is_type(causes, json_type_array))
        return;
    size_t n = json_object_array_length(causes);
    if (n == 0)
        return;
    st->causes = fg_calloc(n, sizeof *st->causes);
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(causes, i);
        struct fg_kube_cause *dst = &st->causes[st->ncauses];
        if (!json_object_is_type(c, json_type_object))
            continue;
        dst->reason = fg__kube_dup_opt(fg_json_get_str(c, "reason", NULL));
        dst->message = fg__kube_dup_opt(fg_json_get_str(c, "message", NULL));
        dst->field = fg__kube_dup_opt(fg_json_get_str(c, "field", NULL));
        st->ncauses++;
    }
}

/* Fills st from a Status object; http_code 0 means "take Status.code, else the reason's code". */
static void fill_from_status(json_object *status, long http_code, struct fg_kube_status *st)
{
    const char *reason = fg_json_get_str(status, "reason", NULL);
    int64_t code = 0;
    if (http_code == 0 && fg_json_get_int64(status, &code, "code", NULL))
        http_code = (long)code;
    if (http_code == 0)
        http_code = code_for_reason(reason);
    st->http_code = http_code;
    st->reason = fg__kube_dup_opt(reason);
    const char *msg = fg_json_get_str(status, "message", NULL);
    st->message = msg ? fg_strdup(msg) : fg_asprintf("HTTP %ld %s", http_code, reason ? reason : "");
    int64_t retry = 0;
    if (fg_json_get_int64(status, &retry, "details", "retryAfterSeconds", NULL) && retry > 0)
        st->retry_after_s = retry > 86400 ? 86400 : (unsigned)retry;
    fill_causes(status, st);
    st->err = err_for_code(http_code, reason);
}

/* Printable excerpt of a body that is not a Status. */
static char *excerpt(long http_code, const char *body, size_t len)
{
    char text[EXCERPT_MAX + 1];
    size_t n = len < EXCERPT_MAX ? len : EXCERPT_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)body[i];
        text[i] = (isprint(ch) && ch < 0x80) ? (char)ch : (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : '?';
    }
    text[n] = '\0';
    if (n == 0)
        return fg_asprintf("HTTP %ld with an empty body", http_code);
    return fg_asprintf("HTTP %ld: %s%s", http_code, text, len > n ? "..." : "");
}

static unsigned parse_retry_after(const char *v)
{
    if (!v)
        return 0;
    while (*v == ' ')
        v++;
    if (isdigit((unsigned char)*v)) {
        char *end;
        unsigned long s = strtoul(v, &end, 10);
        return s > 86400 ? 86400 : (unsigned)s;
    }
    time_t when = curl_getdate(v, NULL);   /* the HTTP-date form */
    time_t now = time(NULL);
    if (when == -1 || when <= now)
        return 0;
    return when - now > 86400 ? 86400 : (unsigned)(when - now);
}

enum fg_err fg_kube_status_from_reply(long http_code, const char *body, size_t len,
                                      const char *retry_after, struct fg_kube_status *st)
{
    memset(st, 0, sizeof *st);
    st->http_code = http_code;
    st->err = err_for_code(http_code, NULL);
    if (st->err == FG_OK)
        return FG_OK;
    json_object *obj = NULL;
    if (body && len > 0 && fg_json_parse(body, len, STATUS_MAX_BYTES, &obj, NULL) == FG_OK &&
        fg_str_eq(fg_json_get_str(obj, "kind", NULL), "Status")) {
        fill_from_status(obj, http_code, st);
    } else {
        st->message = excerpt(http_code, body, body ? len : 0);
    }
    json_object_put(obj);
    unsigned header = parse_retry_after(retry_after);
    if (header)
        st->retry_after_s = header;
    return st->err;
}

enum fg_err fg_kube_status_from_object(json_object *status, struct fg_kube_status *st)
{
    memset(st, 0, sizeof *st);
    if (!json_object_is_type(status, json_type_object)) {
        st->err = FG_E_KUBE_OTHER;
        st->message = fg_strdup("error event without a Status object");
        return st->err;
    }
    fill_from_status(status, 0, st);
    if (st->err == FG_OK) /* a Status reporting success is not an error event's meaning */
        st->err = FG_E_KUBE_OTHER;
    return st->err;
}

void fg_kube_status_cleanup(struct fg_kube_status *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->ncauses; i++) {
        free(st->causes[i].reason);
        free(st->causes[i].message);
        free(st->causes[i].field);
    }
    free(st->causes);
    free(st->reason);
    free(st->message);
    memset(st, 0, sizeof *st);
}
