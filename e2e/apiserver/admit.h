/*
 * admit — what happens to an object between decoding and storing beyond the generic write
 * semantics, in kube-apiserver's order: built-in objects get kube's defaults (defaults.h), pods their
 * priority (kube's Priority plugin), mutating webhooks are called; then CustomResourceDefinitions get
 * checked and their status filled (Established), custom resources get structural-schema validation
 * with defaults, new pods start Pending, new Jobs get their generated selector; then validating
 * webhooks are called.
 *
 * fg__admit runs inside every update and patch (store_write.c), after the write scope is applied
 * and before the commit; a create runs its two halves around the filling of the registry's fields.
 * It may replace *obj (taken and given back): objects share members with request bodies and stored
 * objects, so anything that edits below the root works on a copy (cow.h).
 * fg__crd_sync runs after a write to a CRD has been committed and brings the registry in line.
 */
#ifndef FG_E2E_APISERVER_ADMIT_H
#define FG_E2E_APISERVER_ADMIT_H

#include <json-c/json.h>
#include <stdbool.h>

#include "base/err.h"
#include "e2e/apiserver/store.h"

/* Admission of obj (taken; *obj replaced by what to store) as a successor of cur (NULL on create).
 * FG_OK, or an FG_E_KUBE_* code with *out the Status to send and *obj released. fg__admit is
 * fg__admit_mutate (defaults, built-in admission, mutating webhooks) then fg__admit_validate (the
 * strategy, validating webhooks); a create runs them apart, filling in between what kube-apiserver's
 * registry fills after mutation (the name from generateName, uid, creationTimestamp). */
enum fg_err fg__admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                      json_object **out) FG_MUST_USE;
enum fg_err fg__admit_mutate(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                             json_object **out) FG_MUST_USE;
enum fg_err fg__admit_validate(struct fg__store *st, const struct fg__type *type, json_object *cur,
                               json_object **obj, json_object **out) FG_MUST_USE;

/* priority.c: kube's Priority admission plugin on pods: on create spec.priority and preemptionPolicy
 * from the PriorityClass named by spec.priorityClassName (or the global default class, or 0), 403
 * Forbidden for an unknown class or a conflicting priority or preemptionPolicy; on update the stored
 * ones kept where left out. obj's root must be private to the caller. */
enum fg_err fg__priority_admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object *obj,
                               json_object **out) FG_MUST_USE;

/* crd.c */
bool fg__crd_is_crd_type(const struct fg__type *type);
/* Checks a CRD's spec and sets status (acceptedNames, NamesAccepted, Established, storedVersions). */
enum fg_err fg__crd_admit(const struct fg__type *type, json_object *obj, json_object **out) FG_MUST_USE;
/* Brings the registry in line with the stored CRD `name`: registers or updates the types of its served
 * versions, or, when the CRD is gone, deletes their objects (DELETED events) and disables them. */
void fg__crd_sync(struct fg__store *st, const char *name);
/* fg__crd_sync for every stored CRD (after loading a state file). */
void fg__crd_sync_all(struct fg__store *st);

/* schema.c: validates obj against type->schema (an OpenAPI v3 structural schema): types, required,
 * enum, minimum/maximum, pattern, nullable; applies defaults and prunes unknown fields (on a copy,
 * which replaces *obj). FG_E_KUBE_INVALID with a 422 Status listing every cause. */
enum fg_err fg__schema_admit(const struct fg__type *type, json_object **obj, json_object **out) FG_MUST_USE;

/* webhook.c: a write's webhook calls, kept across its runs. Webhooks are called asynchronously: a
 * write that reaches a webhook not called yet starts the call and fails with FG_E_BUSY (no Status),
 * and its caller runs the same write again once on_ready has run. That run takes up the object the
 * call was given (fg__admission_resume): it skips what led there (the object's making, defaults,
 * built-in admission, the webhooks before, whose patches it holds) and goes on from that webhook's
 * reply, after checking again what may have changed meanwhile (the namespace, a name taken). An
 * update takes it up only while the stored object is still the one it was computed against;
 * otherwise, as before, it runs again from the start, the calls made so far answering from what
 * they got (a call belongs to the same configuration and webhook, in the same order, or is made
 * anew). Writes run while st->admission is NULL (server-side writers: binding, eviction, namespace
 * seeding) call no webhook. */
struct fg__hook_reply;
struct fg__hook_client;
struct fg__hook_call;
struct fg__admission {
    struct fg__hook_client *client; /* borrowed */
    const char *subresource;     /* the write's subresource ("status", "resize"), NULL for the main
                                  * resource; borrowed. a webhook rule must name it */
    struct fg__hook_reply *v;
    size_t n, cap;
    size_t next;                 /* calls consumed by the run in progress */
    struct fg__hook_call *pending; /* the call in flight, or NULL */
    void (*on_ready)(void *ud);  /* a call has ended: run the write again */
    void *ud;
    json_object *resume;         /* the object the last call started was given, or NULL */
    json_object *resume_cur;     /* the stored object it was computed against (NULL: a create) */
    bool resuming;               /* the run in progress took resume up and has not reached its call yet */
};
void fg__admission_init(struct fg__admission *a, struct fg__hook_client *client, void (*on_ready)(void *ud),
                        void *ud);
/* Cancels the call in flight, if any, and frees the replies. */
void fg__admission_cleanup(struct fg__admission *a);
/* For a run of a write that waited for a call: the object that call was given (a new reference), for
 * the write to go on with, when cur is the stored object it was computed against (NULL for a
 * create); else NULL, and the write starts over. a may be NULL (no admission: NULL). */
json_object *fg__admission_resume(struct fg__admission *a, json_object *cur);
/* Is the run in progress taking up a call of the mutating (validating false) or validating webhooks,
 * not reached yet? a may be NULL. */
bool fg__admission_resuming(const struct fg__admission *a, bool validating);

/* webhook_service.c: a webhook's clientConfig.service resolved as kube-apiserver resolves it: *url
 * the https URL of the Service's DNS name, port and path (set whenever the service names a namespace
 * and a name) and, when an endpoint is found, *dial its "ADDRESS:PORT" (both for the caller to
 * free); else kube's reason in errmsg. */
enum fg_err fg__webhook_service(struct fg__store *st, json_object *service, char **url, char **dial,
                                char *errmsg) FG_MUST_USE;

/* The Status sent for a webhook's refusal, as kube-apiserver makes it from the response's status
 * (may be NULL): its code, 400 when absent or below 400; the message "admission webhook \"HOOK\"
 * denied the request: " and status.message, else status.reason, else "admission webhook \"HOOK\"
 * denied the request without explanation"; its reason, else the code's. */
json_object *fg__webhook_denial(const char *hook, json_object *status);

/* Calls the matching mutating (mutating) or validating webhooks for a create or update; FG_OK with
 * *obj possibly replaced by the mutated object, FG_E_BUSY while a call is in flight, or an error with
 * *out the Status. */
enum fg_err fg__webhook_admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                              bool mutating, json_object **out) FG_MUST_USE;

#endif
