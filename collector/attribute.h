/*
 * attribute — which GPUWorkload a scraped pod's use belongs to, from the operator's caches alone.
 *
 * The agent names a pod by namespace and name. The pod is looked up in the shared pod informer's
 * store and must be there (else "pod_unknown": not yet seen, or gone) and be bound to the node of the
 * agent that reported it (else "other_node": a stale row, or an agent that is not what it claims).
 * Its owner chain is then walked through the cached ReplicaSets and workload kinds with
 * reconcilers/workload.h's fg_workload_of_pod, the same walk the workload reconciler makes, and the
 * GPUWorkload's name comes from fg_workload_name; a pod with no workload fracgpu knows is
 * "no_workload". Nothing is guessed: a pod that fails any step is counted by its reason and never
 * given to a workload.
 *
 * Reads the stores from any thread (they lock); no I/O.
 */
#ifndef FG_COLLECTOR_ATTRIBUTE_H
#define FG_COLLECTOR_ATTRIBUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "operator/cache/store.h"
#include "reconcilers/workload.h"

struct fg_attrib_source {
    const struct fg_workload_kinds *kinds;
    struct fg_store *pods, *replicasets;
    struct fg_store *const *owners;    /* one store per kind, in the table's order */
};

/* Why a pod's use was not attributed; the uid clock (uidclock.h) adds its own reason. */
enum fg_unattributed {
    FG_UNATTR_POD_UNKNOWN,
    FG_UNATTR_OTHER_NODE,
    FG_UNATTR_NO_WORKLOAD,
    FG_UNATTR_TIME_BACKWARDS,
    FG_UNATTR__COUNT,
};

/* "pod_unknown", "other_node", "no_workload", "time_backwards": the reason label of the metric. */
const char *fg_unattributed_name(enum fg_unattributed r);

#define FG_ATTRIB_UID_MAX 128

struct fg_attribution {
    char uid[FG_ATTRIB_UID_MAX];                        /* the cached pod's */
    const struct fg_workload_kind *kind;                /* in src->kinds */
    size_t kind_index;
    char workload[FG_WORKLOAD_NAME_MAX + 1];            /* the workload object's name */
    char gpuworkload[FG_WORKLOAD_NAME_MAX + 1];         /* its GPUWorkload's name */
};

/* Attributes pod ns/name, reported by the agent on `node`: true with *out filled, or false with
 * *why. */
bool fg_attribute(const struct fg_attrib_source *src, const char *ns, const char *name, const char *node,
                  struct fg_attribution *out, enum fg_unattributed *why);

#endif
