/*
 * cm — the simulated kube-controller-manager: one process (`component controllers`) whose
 * controllers turn workloads into pods and clean up after them, as kube's do, through the API only.
 *
 * Every controller shares one set of informers (pods, replica sets, deployments, stateful sets,
 * daemon sets, jobs, nodes, services, endpoint slices), indexed by owner, from the manager's
 * factory; each declares its own controller and watches in its own setup function:
 *   deployment.c   Deployment → ReplicaSets: rolling update (maxSurge, maxUnavailable) and Recreate,
 *                  revisions, status and conditions that `kubectl rollout status` reads;
 *   replicaset.c   ReplicaSet → pods;
 *   statefulset.c  StatefulSet → ordinal pods, created and replaced in order;
 *   daemonset.c    DaemonSet → one pod per eligible node, rolling update;
 *   job.c          Job → pods until completions succeed or backoffLimit fails;
 *   gc.c           the garbage collector: dependents of vanished owners, foreground and orphan
 *                  deletion;
 *   podgc.c        pods bound to nodes that no longer exist;
 *   endpointslice.c  Service → EndpointSlices of its pods with addresses, each with its ready,
 *                  serving and terminating conditions.
 * The helpers below read the shared caches; reconcilers write through the synchronous client.
 */
#ifndef FG_SIM_CM_H
#define FG_SIM_CM_H

#include <json-c/json.h>
#include <stdbool.h>

#include "base/err.h"
#include "e2e/cluster/objects.h"
#include "operator/cache/informer.h"
#include "operator/kube/client.h"
#include "operator/manager/controllers.h"
#include "operator/manager/manager.h"

/* One shared informer and the resource it caches (list items carry no apiVersion and kind: the
 * helpers below put them back from here). */
struct fg_sim_cache {
    struct fg_informer *inf;
    const struct fg_kube_resource *res;
};

struct fg_sim_cm {
    struct fg_manager *m;
    struct fg_kube_client *client;
    struct fg_sim_cache pods, replicasets, deployments, statefulsets, daemonsets, jobs, nodes, services, slices;
    unsigned workers;
};

/* Builds the controller manager on m: informers, indexes, then every controller's setup. */
enum fg_err fg_sim_cm_setup(struct fg_manager *m, char *errmsg) FG_MUST_USE;

/* Each controller's setup (called by fg_sim_cm_setup). */
enum fg_err fg_sim_deployment_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_replicaset_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_statefulset_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_daemonset_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_job_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_gc_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_podgc_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_endpointslice_setup(struct fg_sim_cm *cm, char *errmsg) FG_MUST_USE;

/* The cached object under key as a private tree with its apiVersion and kind (caller puts), or NULL
 * when not cached. */
json_object *fg_sim_cm_get(const struct fg_sim_cache *c, const char *key);
/* The cached objects whose controller ownerReference has uid (index FG_SIM_INDEX_CONTROLLER) or,
 * with FG_SIM_INDEX_OWNERS, any ownerReference: private trees in an array the caller puts. */
json_object *fg_sim_cm_by_owner(const struct fg_sim_cache *c, const char *index, const char *uid);
/* Every cached object as private trees (an array the caller puts). */
json_object *fg_sim_cm_list(const struct fg_sim_cache *c);
/* A map function (controllers.h) from an object to the key of its controller when that controller
 * is of kind `ud` (a const char *): how pods reach their ReplicaSet, ReplicaSets their Deployment. */
void fg_sim_cm_map_controller(void *ud, struct fg_kobj *obj, struct fg_keys *out);
/* Declares a controller on cm's manager (cm->workers workers) for primary's kind. */
enum fg_err fg_sim_cm_controller(struct fg_sim_cm *cm, const char *name, fg_reconcile_fn *fn, void *ud,
                                 const struct fg_sim_cache *primary, struct fg_manager_controller **out,
                                 char *errmsg) FG_MUST_USE;
/* What a controller of pods (ReplicaSet, Job, DaemonSet) works with: the shared caches, and the
 * creations and deletions it made that the pods' cache has not shown yet. */
struct fg_sim_pod_owner {
    struct fg_sim_cm *cm;
    struct fg_sim_assumed *assumed;
};

/* Declares a controller of pods for primary's kind (cm->workers workers; reconcile's ud a new
 * struct fg_sim_pod_owner, freed with the manager): its pods reach it through their controller
 * reference. */
enum fg_err fg_sim_cm_pod_owner_controller(struct fg_sim_cm *cm, const char *name, fg_reconcile_fn *fn,
                                           const struct fg_sim_cache *primary, struct fg_manager_controller **out,
                                           char *errmsg) FG_MUST_USE;
/* Creates n pods from obj's spec.template, named "<obj's name>-" and a random suffix, each with
 * fg_sim_cm_create_pod; stops at the first that fails. */
enum fg_err fg_sim_cm_create_pods(struct fg_sim_pod_owner *po, const char *component, json_object *obj, const char *key,
                                  int64_t n) FG_MUST_USE;
/* Creates pod for owner as kube's ReplicaSet, Job and DaemonSet controllers do, with the Event that
 * says so on the owner (SuccessfulCreate "Created pod: NAME", or FailedCreate "Error creating:
 * WHY"); the pod's assumed creation is recorded under assume_key (objects.h). */
enum fg_err fg_sim_cm_create_pod(struct fg_sim_cm *cm, const char *component, json_object *owner, json_object *pod,
                                 struct fg_sim_assumed *assumed, const char *assume_key) FG_MUST_USE;
/* Deletes pod (its uid as precondition, propagation NULL for none) with the Event SuccessfulDelete
 * "Deleted pod: NAME" on owner; the deletion is recorded under assume_key when assumed is not NULL. */
enum fg_err fg_sim_cm_delete_pod(struct fg_sim_cm *cm, const char *component, json_object *owner, json_object *pod,
                                 const char *propagation, struct fg_sim_assumed *assumed,
                                 const char *assume_key) FG_MUST_USE;
/* Emits an event about obj from component ("deployment-controller"); best effort: a failure is
 * logged at debug level. */
void fg_sim_cm_event(struct fg_sim_cm *cm, const char *component, json_object *obj, const char *type,
                     const char *reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
