/*
 * sources — the webhook's view of the cluster: the manager's informer caches, read from the
 * webhook's own thread.
 *
 * fg_webhook_caches_setup asks the manager's informer factory for what an admission reads, each pruned
 * to the fields it needs: ReplicaSets (owner references), every workload kind of the table (labels,
 * annotations, owners, spec), Namespaces (labels), GPUWorkloads, GPUPolicies, PersistentVolumeClaims
 * (storageClassName) and StorageClasses (binding mode, default-class annotation). Stores are
 * thread-safe. A lookup parses the cached object's text into a json-c tree and keeps it for the next
 * answer while the store holds that same object (objects are immutable): a Deployment's pods are
 * admitted in bursts, and parsing is most of an answer's cost. A tree replaced during an answer lives
 * until the answer is sent (the sources' `done`); the memo starts over past 8,192 trees.
 *
 * The StorageClass question: a claim waits for its pod when its class — spec.storageClassName, or the
 * class annotated storageclass.kubernetes.io/is-default-class: "true" when the claim names none — has
 * volumeBindingMode WaitForFirstConsumer. A claim not in the cache yet is taken as waiting: the pod
 * stays whole rather than being placed where its volume cannot follow.
 */
#ifndef FG_WEBHOOK_SOURCES_H
#define FG_WEBHOOK_SOURCES_H

#include "base/err.h"
#include "operator/manager/manager.h"
#include "operator/webhook/admit.h"
#include "reconcilers/workload.h"

struct fg_webhook_caches;

#define FG_WEBHOOK_KINDS_MAX 32

/* The stores an admission reads (borrowed): owners[i] holds kinds->v[i]'s objects. */
struct fg_webhook_stores {
    struct fg_store *replicasets, *namespaces, *gpuworkloads, *policies, *claims, *classes;
    struct fg_store *owners[FG_WEBHOOK_KINDS_MAX];
};

/* Registers the informers on m (before it starts); the caches are freed with m. `kinds` is borrowed
 * for m's life. */
enum fg_err fg_webhook_caches_setup(struct fg_manager *m, const struct fg_workload_kinds *kinds,
                                    struct fg_webhook_caches **out, char *errmsg) FG_MUST_USE;

/* Caches over stores filled some other way (benchmarks); fg_webhook_caches_free frees them. */
struct fg_webhook_caches *fg_webhook_caches_new(const struct fg_workload_kinds *kinds,
                                                const struct fg_webhook_stores *stores);
void fg_webhook_caches_free(struct fg_webhook_caches *c);

/* The admission sources reading c; one answer at a time (the server's thread). */
void fg_webhook_caches_sources(struct fg_webhook_caches *c, struct fg_admit_sources *out);

#endif
