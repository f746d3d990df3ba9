/*
 * pods — the pods of this node, by UID: who a GPU process belongs to.
 *
 * An informer watches `pods?fieldSelector=spec.nodeName=<node>` through operator/kube's loop and
 * keeps, per pod, only its names, UID and container statuses (a transform drops the rest), with an
 * index by metadata.uid. fg_pods_lookup, callable from any thread, turns a pod UID and container ID
 * (from cgroup.c) into namespace, pod and container names. Pods that hold no GPU request are found
 * like any other: the watch is not filtered by resources.
 *
 * Lifecycle: fg_pods_start creates and starts the informer on the loop thread and waits for that
 * (bounded); fg_pods_stop stops and frees it there. The loop is borrowed and must outlive the pods.
 */
#ifndef FG_EXPORTER_PODS_H
#define FG_EXPORTER_PODS_H

#include <stdbool.h>

#include "base/err.h"
#include "operator/kube/loop.h"

struct fg_pods;

struct fg_pod_ref {
    char ns[64];
    char name[254];
    char container[64];   /* "" when the container ID matches no status (yet) */
};

enum fg_err fg_pods_start(struct fg_kube_loop *loop, const char *node, struct fg_pods **out, char *errmsg) FG_MUST_USE;
void fg_pods_stop(struct fg_pods *p);
/* True once the first list has arrived. Any thread. */
bool fg_pods_synced(const struct fg_pods *p);
/* Names of the pod with this UID and of its container with this ID ("" or NULL: none). False when
 * no pod on this node has that UID. Any thread. */
bool fg_pods_lookup(struct fg_pods *p, const char *uid, const char *container_id, struct fg_pod_ref *out);

#endif
