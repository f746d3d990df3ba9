/*
 * pods — the pods of this node, by UID: who a GPU process belongs to.
 *
 * The manager's informer of `pods?fieldSelector=spec.nodeName=<node>` keeps, for the exporter, each
 * pod's names, UID and container statuses, with an index by metadata.uid. fg_pods_lookup, callable
 * from any thread, turns a pod UID and container ID (from cgroup.c) into namespace, pod and
 * container names. Pods that hold no GPU request are found like any other: the watch is not
 * filtered by resources. The device plugin, on the same node agent, reads the same informer.
 *
 * Lifecycle: fg_pods_setup declares the informer on a manager, which starts, stops and frees it;
 * the struct itself belongs to the manager too.
 */
#ifndef FG_EXPORTER_PODS_H
#define FG_EXPORTER_PODS_H

#include <stdbool.h>

#include "base/err.h"
#include "operator/manager/manager.h"

struct fg_pods;

struct fg_pod_ref {
    char ns[64];
    char name[254];
    char container[64];   /* "" when the container ID matches no status (yet) */
};

/* Declares the pod informer of `node` on m (before m starts). errmsg says what failed. */
enum fg_err fg_pods_setup(struct fg_manager *m, const char *node, struct fg_pods **out, char *errmsg) FG_MUST_USE;
/* True once the first list has arrived. Any thread. */
bool fg_pods_synced(const struct fg_pods *p);
/* Names of the pod with this UID and of its container with this ID ("" or NULL: none). False when
 * no pod on this node has that UID. Any thread. */
bool fg_pods_lookup(struct fg_pods *p, const char *uid, const char *container_id, struct fg_pod_ref *out);

#endif
