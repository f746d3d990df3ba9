/*
 * workload_pods — the pods of a workload, found through the caches' controller-uid indexes.
 *
 * A workload's pods are those whose controller is the workload or one of its descendants that the
 * caches hold (a Deployment's ReplicaSets, a CronJob's Jobs, a Notebook's StatefulSet), found
 * breadth-first through the FG_OWNER_INDEX of each store. Of its live pods (not terminating, not
 * finished), a pod *missed the webhook* when it carries the template label fracgpu.io/automate:
 * "true" yet still asks for a whole nvidia.com/gpu although fracgpu would take it: it was created
 * while no operator replica answered (failurePolicy Ignore never blocks a pod). What the live pods
 * hold in GPUs is summed too: a pod fracgpu took its compute fraction (fracgpu.io/compute-milli), any
 * other the nvidia.com/gpu its containers ask for.
 *
 * The other way, from a pod up to its workload (fg_workload_of_pod), the caches back its lookup:
 * fg_owner_lookup finds an owner in the ReplicaSets' cache or its kind's, and holds what it returns
 * until the walk's result has been used.
 */
#ifndef FG_RECONCILERS_WORKLOAD_PODS_H
#define FG_RECONCILERS_WORKLOAD_PODS_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <stdbool.h>

#include "operator/cache/store.h"
#include "reconcilers/workload.h"

#define FG_OWNER_INDEX "controller-uid"

struct fg_workload_pods {
    size_t live;
    size_t missed;
    int64_t gpu_milli;          /* what its live pods hold: a mutated pod its fraction, any other its whole GPUs */
    int64_t newest_missed_ms;   /* creation time of the newest pod that missed the webhook */
};

/* What the count reads of one pod, decoded once per event by the pods' informer (its typed value,
 * kobj.h), so that a count parses no pod. */
struct fg_workload_pod {
    bool live;                  /* not finished, not being deleted */
    bool missed;                /* it missed the webhook (above) */
    int64_t created_ms;         /* when it was created, for a pod that missed the webhook */
    int64_t gpu_milli;          /* what it holds (above) */
};

/* The pods' informer's decode (fg_informer_factory_decode): fills a struct fg_workload_pod. */
void fg_workload_pods_decode(void *ud, json_object *pod, void *value);

/* Counts the pods of the workload with uid `uid`: `pods` and the `n` stores of possible intermediates
 * each have the FG_OWNER_INDEX indexer (fg_index_by_controller_uid); `pods` has the decode above (a
 * pod without it counts as gone). */
void fg_workload_pods_count(struct fg_store *pods, struct fg_store *const *intermediates, size_t n, const char *uid,
                            struct fg_workload_pods *out);

/* The caches a walk from a pod to its workload reads: the ReplicaSets, and owners[i] holding the
 * objects of kinds->v[i]. */
struct fg_owner_caches {
    const struct fg_workload_kinds *kinds;
    struct fg_store *replicasets;
    struct fg_store *const *owners;
};

#define FG_OWNER_LOOKUP_HELD 8

/* One walk's lookup, for a pod of namespace ns: { &caches, ns } to start. */
struct fg_owner_lookup {
    const struct fg_owner_caches *caches;
    const char *ns;
    json_object *held[FG_OWNER_LOOKUP_HELD];
    size_t n;
};

/* An fg_object_lookup (workload.h) whose ctx is a struct fg_owner_lookup: the cached object, held
 * by the lookup; NULL when absent, of a kind no cache holds, or past FG_OWNER_LOOKUP_HELD. */
json_object *fg_owner_lookup(void *ctx, const char *group, const char *kind, const char *name);
/* Lets go of what the lookup holds. */
void fg_owner_lookup_release(struct fg_owner_lookup *l);

#endif
