/*
 * objects — what the simulated control plane's controllers share about Kubernetes objects:
 * ownership (controller references, indexes by owner), pods stamped from templates, the hash that
 * names a template's revision, pod state as controllers judge it, int-or-percent fields, status
 * writes, and the record of writes a controller made that its cache has not shown yet.
 *
 * That last one is client-go's "expectations" in another shape: a controller that created pods
 * cannot see them in its informer until the watch delivers them, and a reconcile in between would
 * create them again. So every create and delete is remembered (the assumed set, per owner) until
 * the cache shows it or a TTL passes, and reconciles count what they see plus what they assumed.
 */
#ifndef FG_SIM_OBJECTS_H
#define FG_SIM_OBJECTS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/cache/kobj.h"
#include "operator/kube/client.h"
#include "operator/kube/resource.h"

/* Index names every controller's informers share. */
#define FG_SIM_INDEX_CONTROLLER "controller-uid"    /* uid of the controller ownerReference */
#define FG_SIM_INDEX_OWNERS "owner-uids"            /* uids of every ownerReference */

size_t fg_sim_index_controller(void *ud, json_object *obj, const char **values, size_t max);
size_t fg_sim_index_owners(void *ud, json_object *obj, const char **values, size_t max);

/* What the controllers' event handlers read of every cached object, decoded once per event into the
 * object's own allocation (kobj.h's typed value), so that mapping an event to its keys parses
 * nothing. */
struct fg_sim_meta {
    char controller_kind[64];       /* of the controller ownerReference; "" when none */
    char controller_name[254];
    unsigned owners;                /* ownerReferences */
    uint32_t owners_digest;         /* of their text: changes when they do */
    bool terminating;               /* deletionTimestamp set */
    bool gc_finalizer;              /* orphan or foregroundDeletion among the finalizers */
    char node[254];                 /* spec.nodeName of a pod */
};
void fg_sim_meta_decode(void *ud, json_object *obj, void *value);
/* The decoded meta of a cached object (borrowed with it). */
const struct fg_sim_meta *fg_sim_meta(const struct fg_kobj *o);

/* obj's ownerReference with controller: true (borrowed), or NULL. */
json_object *fg_sim_controller_ref(json_object *obj);
/* A new ownerReference to owner (which carries apiVersion and kind, as fg_sim_cm_get's objects do)
 * with controller and blockOwnerDeletion true. */
json_object *fg_sim_owner_ref(json_object *owner);

/* A pod (new tree) from a pod template: its labels, annotations and spec, in namespace ns, named
 * `name` or, when name is NULL, generated from `generate_name`, owned by `owner` (controller ref).
 * extra_labels (may be NULL) are added to the template's. */
json_object *fg_sim_pod_from_template(json_object *tmpl, const char *ns, const char *name, const char *generate_name,
                                      json_object *owner, json_object *extra_labels);
/* The name kube gives a template's revision: FNV-32a over the template with object keys sorted,
 * mixed with collision_count, written in kube's safe alphabet ("5d8f6c7b9"). out: 16 bytes. */
void fg_sim_template_hash(json_object *tmpl, uint32_t collision_count, char out[16]);

/* Pod state as controllers see it. */
bool fg_sim_pod_terminating(json_object *pod);      /* metadata.deletionTimestamp set */
bool fg_sim_pod_finished(json_object *pod);         /* phase Succeeded or Failed */
bool fg_sim_pod_active(json_object *pod);           /* neither of the above */
bool fg_sim_pod_ready(json_object *pod);            /* condition Ready True */
/* Ready for at least min_ready_s seconds at now_ms (kube's IsPodAvailable). */
bool fg_sim_pod_available(json_object *pod, int64_t min_ready_s, int64_t now_ms);
/* The integer at obj.a.b ("spec", "replicas"), or dflt when absent or not an integer. */
int64_t fg_sim_int_at(json_object *obj, const char *a, const char *b, int64_t dflt);
/* A condition of type `type` in obj's status.conditions (borrowed), or NULL. */
json_object *fg_sim_condition(json_object *obj, const char *type);
/* A new condition (type, status, lastTransitionTime, and reason and message unless NULL) as kube's
 * controllers write one: it keeps the lastTransitionTime of obj's condition of that type while
 * the status stays the same, else says now. obj may be NULL. Each kind adds its own times
 * (lastProbeTime, lastHeartbeatTime, lastUpdateTime). */
json_object *fg_sim_condition_new(json_object *obj, const char *type, const char *status, const char *reason,
                                  const char *message, const char *now);
/* Does obj's status already say what status (a status to write) says? Integers and strings equal,
 * a null member absent, conditions of the same status, reason and message (their times aside);
 * any other member counts as a change. Controllers skip writes that would change nothing. */
bool fg_sim_status_holds(json_object *obj, json_object *status);
/* Puts condition c (owned) into the array conds, in place of the one of its type if any. */
void fg_sim_condition_put(json_object *conds, json_object *c);
/* metadata.creationTimestamp in ms (0 when absent). */
int64_t fg_sim_created_ms(json_object *obj);

/* An intOrString field (maxSurge: 1 or "25%") against total, rounding a percentage up or down.
 * v NULL gives dflt. FG_E_PARSE for anything else. */
enum fg_err fg_sim_int_or_percent(json_object *v, int64_t total, bool round_up, int64_t dflt, int64_t *out) FG_MUST_USE;

/* Merge-patches obj's status subresource with {"status": status}; 404 counts as done (the object
 * went). status is borrowed. */
enum fg_err fg_sim_patch_status(struct fg_kube_client *c, const struct fg_kube_resource *res, json_object *obj,
                                json_object *status) FG_MUST_USE;
/* Deletes obj (by namespace and name), preconditioned on its uid, with propagationPolicy (NULL:
 * none); 404 and a uid mismatch (409) count as done. */
enum fg_err fg_sim_delete(struct fg_kube_client *c, const struct fg_kube_resource *res, json_object *obj,
                          const char *propagation) FG_MUST_USE;
/* The same with grace period 0: gone for good at once (a kubelet done with a pod, pod GC). */
enum fg_err fg_sim_delete_now(struct fg_kube_client *c, const struct fg_kube_resource *res,
                              json_object *obj) FG_MUST_USE;

/* The assumed writes of one controller (see the essay). Thread-safe. */
struct fg_sim_assumed;
struct fg_sim_assumed *fg_sim_assumed_new(uint64_t ttl_ns);
void fg_sim_assumed_free(struct fg_sim_assumed *a);
/* Remembers that the controller of owner_key created (or deleted) the object with this uid. */
void fg_sim_assumed_add(struct fg_sim_assumed *a, const char *owner_key, const char *uid, bool deleted);
/* Forgets what `seen` (an array of the owner's dependents in the cache now) already shows:
 * creations it holds, deletions it no longer holds (or holds terminating), and anything past the TTL. */
void fg_sim_assumed_settle(struct fg_sim_assumed *a, const char *owner_key, json_object *seen);
/* Creations by owner_key not in the cache yet. */
size_t fg_sim_assumed_pending_creates(struct fg_sim_assumed *a, const char *owner_key);
/* Did owner_key's controller delete uid (not yet shown by the cache)? */
bool fg_sim_assumed_deleted(struct fg_sim_assumed *a, const char *owner_key, const char *uid);

#endif
