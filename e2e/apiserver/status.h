/*
 * status — Kubernetes `Status` objects, the body of every error reply.
 *
 * The HTTP layer decides the code; this module turns (code, reason, message, details) into the
 * metav1.Status JSON that clients decode ({"kind":"Status","apiVersion":"v1","metadata":{},
 * "status":"Failure","message",...,"reason",...,"details",...,"code"}). Callers own what they get.
 */
#ifndef FG_E2E_APISERVER_STATUS_H
#define FG_E2E_APISERVER_STATUS_H

#include <json-c/json.h>

#include "base/err.h"

/* The Kubernetes reason for an HTTP code ("NotFound" for 404, ...); "InternalError" when unknown. */
const char *fg__status_reason(int code);
/* A Failure Status; reason NULL = fg__status_reason(code); details is taken (may be NULL). */
json_object *fg__status_new(int code, const char *reason, const char *message, json_object *details);
/* A Success Status with the given code (binding replies). */
json_object *fg__status_success(int code);
/* details {name, group, kind} as kube-apiserver fills them for object errors. */
json_object *fg__status_details(const char *name, const char *group, const char *kind);
/* Appends one cause {reason, message, field} to details (which must come from fg__status_details). */
void fg__status_add_cause(json_object *details, const char *reason, const char *message, const char *field);

/* The HTTP code of an FG_E_KUBE_* error (500 for anything else). */
int fg__status_code(enum fg_err err);
/* A Failure Status for err: code and reason from the error (AlreadyExists and Conflict both 409). */
json_object *fg__status_from_err(enum fg_err err, const char *message, json_object *details);

#endif
