/*
 * replay — the FGD paper's experiment on a trace, for any placement policy (docs/benchmarks.md,
 * "Placement quality").
 *
 * One run: nodes sorted by name get a seeded random rank (the tie-break); pods sorted by name are
 * shuffled, then inflated with random copies (or thinned) to `tune` × the cluster's GPU capacity;
 * each pod is submitted once, counts as arrived whether it fits or not, and a pod that fits nowhere
 * is dropped for good. After every pod the allocation and fragmentation are sampled against the
 * arrived percentage; the curve and the headline figures are computed as the paper does.
 *
 * In order (opts.in_order): the trace as fracgpu-scheduler would see it arrive on a live cluster —
 * every pod once, in the order of the pod list (no shuffle, no inflation or thinning: tune is not
 * read), and nodes ranked in name order, so that among equal scores the node first by name wins, as
 * the live scheduler ranks the nodes it listed at its start (the API lists them by name). The seed
 * then drives the random placement policy only. Each submission's outcome can be followed through
 * opts.on_pod, in submission order, whichever the mode.
 *
 * Pure apart from the monotonic clock read for elapsed_ms; the trace is borrowed.
 */
#ifndef FG_SCHEDULER_REPLAY_REPLAY_H
#define FG_SCHEDULER_REPLAY_REPLAY_H

#include "scheduler/policies/mix.h"
#include "scheduler/replay/trace.h"

#define FG_SCHED_CURVE_MAX 200

struct fg_sched_replay_result {
    double unallocated_pct_at_100;  /* 100 − allocation curve at 100% arrived */
    double alloc_pct_at_130;
    double frag_pct_at_80;          /* cluster fragmentation / capacity, curve at 80% arrived */
    int pods_submitted, pods_failed;
    double elapsed_ms;              /* the placement loop only */
    double alloc_curve[FG_SCHED_CURVE_MAX + 1];  /* by arrived %, NAN where no event is near */
};

/* Whole-trace reference mix of t's pods against the models of t's node list (before inflation). */
void fg_sched_replay_mix(const struct fg_sched_trace *t, struct fg_sched_mix *mix);

/* Called once per submitted pod, after its cycle: pl is its outcome (pl->node indexes c->nodes when
 * pl->code is FG_SCHED_SUCCESS). Everything is borrowed for the call. */
typedef void fg_sched_replay_pod_fn(void *ud, const struct fg_sched_trace_pod *tp, const struct fg_sched_cluster *c,
                                    const struct fg_sched_placement *pl);

struct fg_sched_replay_opts {
    const char *policy;             /* placement policy (policies/policy.h) */
    uint64_t seed;
    double tune;                    /* submitted GPU compute / the cluster's (ignored in order) */
    bool in_order;                  /* see the essay */
    fg_sched_replay_pod_fn *on_pod; /* NULL: none */
    void *ud;
};

/* Runs one seed of opts->policy on t (nodes and pods both loaded). FG_E_INVAL (errmsg) for an
 * unknown placement policy or an invalid trace row. */
enum fg_err fg_sched_replay_run(const struct fg_sched_trace *t, const struct fg_sched_replay_opts *opts,
                                struct fg_sched_replay_result *out, char *errmsg) FG_MUST_USE;

#endif
