/*
 * simulate — the rightsizing experiment of docs/benchmarks.md §2: a per-pod GPU usage trace replayed
 * in time order through the recommender (rightsizing/recommender.h) and the scheduler core
 * (scheduler/core/), measuring how many GPUs a GPUPolicy needs and what its allocations cost.
 *
 * The replay, minute by minute from the trace's first sample (replay.c):
 *   - every trace pod is its own workload with its own recommender state, and lives from the minute
 *     of its first sample to the minute of its last (either kind);
 *   - at each minute the samples of that minute are added (fg_rec_add), in time order, a pod's
 *     utilization and memory sample of one moment as one sample; then fg_rec_decide runs at the end of
 *     the minute, so an allocation is only ever decided from the past;
 *   - a pod with no allocation yet (minHistory not covered) holds a whole GPU, as admission gives it;
 *     when its allocation changes it is placed again as a Deployment's roll of one replica would do
 *     it (maxSurge 1, maxUnavailable 0): the new pod is placed first, then the old one leaves;
 *   - every decision is applied as updateMode Auto would apply it, whatever the policy's mode: over a
 *     day the pods of a serving system are recreated by scaling and rollouts, which is how Initial
 *     reaches them, but the trace does not say when, so the experiment rolls them itself;
 *   - placement is the scheduler core's (framework.h) with the operator's placement policy, over
 *     GPUs of one size each held by a capacity pod (packing.h): when nothing fits a GPU is added, and
 *     a GPU left without tenants at the end of a minute is released;
 *   - consolidation, as the operator's scheduler does it (scheduler/adapter/consolidate.c): once per
 *     consolidation interval, at the end of a minute, the first GPU — fewest tenants, then least
 *     memory allocated — whose every tenant fits on the other GPUs is emptied, each tenant rolled
 *     onto them (a change, like any roll). Only under a policy whose updateMode is Auto, as on a
 *     cluster: the operator moves no pod of an Off or Initial workload.
 *
 * The warm-up. The trace begins with its pods already running, and before a policy's minHistory none
 * of them can have an allocation, so for that long every pod holds a whole GPU: one GPU per pod, as
 * before fracgpu, whatever the policy. On a cluster running fracgpu those pods would have had their
 * history (it is checkpointed per workload and outlives pods), so that opening is an artefact of
 * where the trace starts, not a cost of the policy. The measures are therefore taken after a
 * warm-up, by default the policy's minHistory; pods that start later still hold a whole GPU for
 * their own minHistory, inside the measured time. gpus_peak_all gives the peak with the warm-up.
 *
 * The measures, at each minute after the warm-up over the GPUs in use, with each tenant's real use
 * (its latest sample):
 *   gpus_peak, gpus_mean      GPUs held, at the busiest minute and averaged over the trace's minutes;
 *   one_per_pod               the most pods alive at one minute (warm-up included): what one whole
 *                             GPU per pod holds;
 *   hindsight                 the packing anchor (hindsight.c), and the sum-of-peaks bound beside it;
 *   memory overflow           GPU-minutes in which the tenants' real memory adds up above the GPU's;
 *   contention                GPU-minutes in which their utilization adds up above 100%, and their
 *                             share of all GPU-minutes;
 *   overrun                   trace samples in which a pod uses more than its own allocation, compute
 *                             and memory apart and either (a pod on a whole GPU never overruns);
 *   changes                   allocation changes (the first allocation included) and consolidation
 *                             moves, per pod-day alive; consolidations, the GPUs emptied.
 *
 * Pure but for the clock that times it: the trace is read by the caller (gentd26.h); nothing here
 * prints. A result owns the series the HTML report draws (report_html.h).
 */
#ifndef FG_RIGHTSIZING_SIMULATE_SIMULATE_H
#define FG_RIGHTSIZING_SIMULATE_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "crds/gpupolicy.h"
#include "rightsizing/gentd26.h"

#define FG_SIM_STEP_S 60
#define FG_SIM_SHOWN_PODS 4                 /* pods whose allocation the report draws */
#define FG_SIM_HINDSIGHT_FILL 0.95          /* hindsight: a GPU's summed memory at most this share of it */
#define FG_SIM_HINDSIGHT_UTIL_PCTL 0.99     /* ... and its summed utilization ≤ 100% at this percentile */

struct fg_sim_opts {
    struct fg_gpupolicy_spec policy;
    const char *policy_name;
    int64_t gpu_memory_mib;
    const char *placement;                  /* the scheduler's placement policy (policies/policy.h) */
    const bool *selected;                   /* per trace series: simulate it; NULL: every one */
    int64_t warmup_ms;                      /* not measured from the trace's start; < 0: the policy's minHistory */
    int64_t consolidation_interval_ms;      /* one GPU emptied, when one can be, per interval (under an
                                               Auto policy only); 0: never */
    /* Called now and then with the share done (0..1); NULL: none. */
    void (*progress)(void *ud, double done);
    void *ud;
};

/* One pod drawn in the report: per minute of the trace, its use and its allocation (whole GPU when it
 * has none); NaN while it is not alive. */
struct fg_sim_shown {
    char id[FG_GENTD26_ID_LEN + 1];
    double *mem_used, *mem_alloc;           /* MiB */
    double *util_used, *compute_alloc;      /* % of a GPU */
};

struct fg_sim_result {
    size_t pods;                            /* simulated */
    size_t minutes;                         /* of the trace */
    size_t warmup_minutes;                  /* the first minutes, replayed but not measured */
    int gpus_peak;                          /* after the warm-up, as every measure but the next */
    int gpus_peak_all;                      /* over every minute, the warm-up's included */
    double gpus_mean;
    int one_per_pod;                        /* the most pods alive at one minute */
    int hindsight;                          /* hindsight.c */
    int sum_of_peaks;                       /* ⌈Σ per-pod memory peak / GPU memory⌉ */
    uint64_t gpu_minutes;
    uint64_t memory_overflow_gpu_minutes;
    uint64_t contended_gpu_minutes;
    double contended_gpu_minutes_pct;
    uint64_t samples;                       /* trace samples replayed (a moment's two kinds: one) */
    uint64_t overrun_compute, overrun_memory, overrun;
    double overrun_compute_pct, overrun_memory_pct, overrun_pct;
    uint64_t changes;
    uint64_t consolidations;                /* GPUs emptied by consolidation */
    double pod_days;                        /* Σ each pod's life, in days */
    double changes_per_pod_day;
    uint64_t refused;                       /* samples the recommender refused */
    uint64_t placements;                    /* scheduling cycles */
    double elapsed_ms;
    int *gpus;                              /* per minute: GPUs held */
    int *alive;                             /* per minute: pods alive */
    struct fg_sim_shown shown[FG_SIM_SHOWN_PODS];
    size_t n_shown;
};

/* Replays trace t under o into *r (initialised here). FG_E_INVAL (errmsg) for a policy the
 * recommender cannot use, an unknown placement policy, a GPU size below 1 GiB or no pod selected. */
enum fg_err fg_sim_run(const struct fg_gentd26 *t, const struct fg_sim_opts *o, struct fg_sim_result *r,
                       char *errmsg) FG_MUST_USE;
void fg_sim_result_cleanup(struct fg_sim_result *r);

/* One pod's use, one value per minute of the trace (0 outside its life): memory in MiB, utilization
 * in %. Filled by the replay for the hindsight anchor. */
struct fg_sim_usage {
    double *mem, *util;
    double peak_mem;
};

/* The hindsight anchor: the GPUs a greedy packer needs that knows every pod's whole use in advance —
 * pods by decreasing memory peak, each onto the first GPU where the summed memory stays at most
 * FG_SIM_HINDSIGHT_FILL of gpu_memory_mib at every minute and the summed utilization exceeds 100% in
 * at most 1 - FG_SIM_HINDSIGHT_UTIL_PCTL of the minutes, else onto a new GPU. */
int fg_sim_hindsight(const struct fg_sim_usage *pods, size_t n, size_t minutes, int64_t gpu_memory_mib);

#endif
