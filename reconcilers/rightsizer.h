/*
 * rightsizer — the live half of rightsizing, in the operator (leader only): measured use in, allocations out.
 *
 * The collector hands it each pod's use as it scrapes the node agents (fg_rightsizer_sample), already
 * attributed to the pod's GPUWorkload. Per GPUWorkload it keeps a recommender state (rightsizing/
 * recommender.h) under the workload's policy and, every interval, on the kube loop:
 *   - notes out-of-memory kills: a container of one of its pods restarted, having been OOMKilled or
 *     having used at least FG_RS_OOM_SHARE of its memory allocation at its last sample;
 *   - decides (fg_rec_decide: up at once, down after the cooldown and beyond the threshold) and writes
 *     status.recommendation on the GPUWorkload when it changes, with an Event for each change, and
 *     status.usage with it or at most once per checkpoint interval;
 *     the admission webhook gives new pods the recommendation in Initial and Auto mode, none in Off;
 *   - in Auto mode rolls the pods whose allocation is not the recommendation's, one at a time, through
 *     the Eviction API (so PodDisruptionBudgets are honoured; a refusal is asked again next interval),
 *     only while every other pod of the workload is Ready and when it has at least min_replicas, and
 *     only once the GPUWorkload's status says new pods get it (never for a workload that fixes its
 *     fraction, whose replacements would get the fixed fraction again);
 *   - keeps the state in the workload's GPUCheckpoint (created, then replaced every checkpoint
 *     interval while samples arrive), restored when the GPUWorkload is first seen again: after an
 *     operator restart or a delete-and-recreate of the workload;
 *   - deletes a GPUCheckpoint whose GPUWorkload has been gone for the checkpoint TTL.
 * The GPUs' memory, which caps memory, is read from the capacity pods its pods are placed on.
 */
#ifndef FG_RECONCILERS_RIGHTSIZER_H
#define FG_RECONCILERS_RIGHTSIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/manager/manager.h"

#define FG_RS_OOM_SHARE 0.9

struct fg_rightsizer_opts {
    int64_t interval_ms;              /* decisions, status and rolls (default 30 s) */
    int64_t checkpoint_interval_ms;   /* how often a changed state is saved, and usage refreshed (default 5 min) */
    int64_t checkpoint_ttl_ms;        /* how long a checkpoint outlives its GPUWorkload (default 7 d) */
    unsigned min_replicas;            /* Auto rolls a workload with at least this many pods (default 2) */
    const char *capacity_ns;          /* where the capacity pods live (borrowed for the manager's life) */
};

#define FG_RIGHTSIZER_OPTS_DEFAULT { 30 * 1000ll, 5 * 60 * 1000ll, 7 * 24 * 3600 * 1000ll, 2, "fracgpu-system" }

/* One pod's use at one scrape, attributed to its GPUWorkload; strings borrowed for the call. */
struct fg_rightsizer_sample {
    const char *ns, *workload;        /* the GPUWorkload */
    const char *pod_uid;
    int64_t t_ms;                     /* wall clock */
    bool has_compute, has_memory;
    double compute_milli, memory_mib;
};

struct fg_rightsizer;

enum fg_err fg_rightsizer_setup(struct fg_manager *m, const struct fg_rightsizer_opts *o, struct fg_rightsizer **out,
                                char *errmsg) FG_MUST_USE;

/* Takes a sample (kube loop thread). Samples of a GPUWorkload not known, or arriving while this
 * replica does not lead, are counted and dropped. */
void fg_rightsizer_sample(struct fg_rightsizer *r, const struct fg_rightsizer_sample *s);

#endif
