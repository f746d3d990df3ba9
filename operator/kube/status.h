/*
 * status — what the API server said when it said no.
 *
 * Every non-2xx reply is decoded here, once, into a `struct fg_kube_status` and an enum fg_err:
 * 404 NotFound, 409 AlreadyExists vs Conflict (by the Status reason), 410 Expired/Gone, 422 Invalid
 * with its field causes, 429 TooManyRequests with Retry-After, 401, 403, 5xx. A reply that is not a
 * Status (an HTML error page, garbage) still maps by HTTP code, with the body's first bytes kept in
 * the message so a person can see what came back. Watch ERROR events carry the same Status object
 * and are decoded by the same function.
 */
#ifndef FG_KUBE_STATUS_H
#define FG_KUBE_STATUS_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"

struct fg_kube_cause {
    char *reason;    /* "FieldValueInvalid" */
    char *message;
    char *field;     /* "spec.compute.minMilli" */
};

struct fg_kube_status {
    long http_code;           /* 0 when the request never got a reply */
    enum fg_err err;
    char *reason;             /* Status.reason, e.g. "AlreadyExists", or NULL */
    char *message;            /* Status.message, or a description of the reply */
    struct fg_kube_cause *causes;
    size_t ncauses;
    unsigned retry_after_s;   /* from Retry-After or details.retryAfterSeconds; 0 when absent */
};

/* Maps an HTTP reply to an error and fills *st (which the caller cleans up). Returns st->err;
 * FG_OK for 2xx. `retry_after` is the Retry-After header value or NULL. */
enum fg_err fg_kube_status_from_reply(long http_code, const char *body, size_t len,
                                      const char *retry_after, struct fg_kube_status *st);

/* Same, from an already parsed Status object (watch ERROR events). */
enum fg_err fg_kube_status_from_object(json_object *status, struct fg_kube_status *st);

void fg_kube_status_cleanup(struct fg_kube_status *st);

#endif
