/*
 * review — AdmissionReview (admission.k8s.io/v1) in and out, without I/O.
 *
 * kube-apiserver POSTs one review per admission: {apiVersion, kind, request: {uid, kind, resource,
 * subResource, namespace, operation, object, oldObject, dryRun, ...}} and expects the same envelope
 * back with response {uid, allowed, patchType, patch (base64 of a JSON Patch)}. fg_review_parse
 * refuses — for the server to answer 400 and log — what is not such a review: not JSON, another
 * apiVersion or kind, no request, a request without a uid; a body over FG_REVIEW_MAX is FG_E_TOO_BIG.
 * A review it accepts still may not be for fracgpu: is_pod_create says whether it is the CREATE of a
 * Pod (resource pods in the core group, no subresource, an object of kind Pod). Anything else —
 * UPDATE, DELETE, CONNECT, a subresource, another kind — is answered "allowed" without a patch.
 */
#ifndef FG_WEBHOOK_REVIEW_H
#define FG_WEBHOOK_REVIEW_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* The largest review read: kube objects stop at about 1.5 MiB, and a review may carry two. */
#define FG_REVIEW_MAX (8u << 20)
#define FG_REVIEW_API_VERSION "admission.k8s.io/v1"

struct fg_review {
    json_object *doc;           /* the parsed review, owned */
    const char *uid;            /* borrowed from doc, as the following */
    const char *operation;      /* CREATE, UPDATE, DELETE, CONNECT */
    const char *ns;             /* the request's namespace ("" for cluster-scoped) */
    json_object *object;        /* request.object; NULL for DELETE */
    bool dry_run;
    bool is_pod_create;
};

/* Parses body[0..len). FG_E_PARSE / FG_E_TOO_BIG with errmsg saying what is wrong; nothing to clean
 * up then. */
enum fg_err fg_review_parse(const char *body, size_t len, struct fg_review *out, char *errmsg) FG_MUST_USE;
void fg_review_cleanup(struct fg_review *r);

/* The response review, allowing the request, as a new string: with patch (a JSON Patch array,
 * borrowed) when non-NULL, and warning (shown to the client, as kubectl does) when non-NULL. */
char *fg_review_allow(const char *uid, json_object *patch, const char *warning);

#endif
