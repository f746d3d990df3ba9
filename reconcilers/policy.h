/*
 * policy — the GPUPolicy reconciler: built-ins ensured, every policy validated, its status written.
 *
 * Keys are policy names. Given one, the reconciler reads the policy and the workloads that use it
 * from the informers' caches and converges:
 *   - absent, and a built-in that must exist (real-time, real-time-mps, near-real-time, batch
 *     always; training and build once a workload uses them) → create it from builtin.h's table;
 *   - a built-in written from older defaults that nobody edited → replace its spec with the current
 *     defaults (an update with the cached resourceVersion, so a concurrent edit wins);
 *   - otherwise → write the status (policy_status.h) when it differs from the stored one.
 * A user's edits are never overwritten and a deleted built-in comes back on the delete event. It is
 * level-based: what happened before does not matter, only what the caches hold now; a cache that
 * lags behind a write it made shows up as AlreadyExists or Conflict and is settled on the next event.
 *
 * Workloads find their policy through the index FG_POLICY_INDEX on the GPUWorkload store. What the
 * controller watches is declared by fg_policy_reconciler_setup: GPUPolicies (the primary objects),
 * and GPUWorkloads, each mapped to the policy it uses (an update to the old and the new one), so a
 * policy is reconciled whenever one of its workloads comes, goes or changes policy; the built-ins
 * that must always exist are reconciled at every start even when nothing was seen of them.
 *
 * Ownership: the reconciler borrows the client, both stores and its counters; setup allocates it and
 * hands it to the manager, which frees it with everything else.
 */
#ifndef FG_RECONCILERS_POLICY_H
#define FG_RECONCILERS_POLICY_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/metrics.h"
#include "operator/cache/store.h"
#include "operator/controller/controller.h"
#include "operator/kube/client.h"
#include "operator/manager/manager.h"

#define FG_POLICY_INDEX "policy"

struct fg_policy_reconciler {
    struct fg_kube_client *client;
    struct fg_store *policies;      /* GPUPolicy cache */
    struct fg_store *workloads;     /* GPUWorkload cache with the FG_POLICY_INDEX indexer */
    struct fg_counter *created, *upgraded, *status_writes;
};

/* Registers the GPUPolicy controller, with `workers` reconcile threads, on m. errmsg says what failed. */
enum fg_err fg_policy_reconciler_setup(struct fg_manager *m, unsigned workers, char *errmsg) FG_MUST_USE;

/* The store indexer: the policy a GPUWorkload uses (fg_gpuworkload_policy_get), if any. */
size_t fg_policy_index_workload(void *ud, json_object *obj, const char **values, size_t max);

/* The fg_reconcile_fn; ud is a struct fg_policy_reconciler. */
struct fg_reconcile_result fg_policy_reconcile(void *ud, const char *key);

#endif
