/*
 * recommender — from one workload's measured GPU use to the allocation its pods should get, under
 * its GPUPolicy (pure: no I/O, no clock of its own; times are the caller's, in milliseconds).
 *
 * A workload's state holds what it has used: a decaying histogram of compute (milli of a GPU, one
 * sample per pod per collection), a decaying histogram of memory (MiB), and the memory peaks of the
 * policy's window kept exactly, one per 1/FG_REC_PEAK_SLOTS of the window, so that a peak is never
 * rounded up to a bucket's end and is forgotten once it is older than the window. The histograms'
 * half-life is a quarter of the window: a sample a window old weighs 1/16 of a new one.
 *
 * The recommendation (fg_rec_recommend):
 *   compute  the policy's compute percentile of the histogram × (1 + headroom), rounded up to a milli;
 *   memory   the window's peak (percentile 100) or the histogram's percentile, × (1 + headroom), and at
 *            least the floor an out-of-memory kill or an overuse has set (below);
 *   both clamped to the policy's minimum and maximum and to one GPU (1000 milli, the GPU's memory);
 *   bounds   lower = target / s and upper = target × s, clamped likewise, with s = 2 − confidence and
 *            confidence the share of the window the history covers (0..1): the range is twice the
 *            target either way with no history and closes on the target as the window fills;
 *   nothing  before the history covers the policy's minHistory: the pod keeps its whole GPU.
 *
 * Memory running out raises memory at once, whatever the cooldown and threshold, with a floor held for
 * the window: an out-of-memory kill (fg_rec_oom), as VPA's OOM bump, to FG_REC_BUMP_RATIO × the larger
 * of the applied memory and the memory in use, at least FG_REC_BUMP_MIN_MIB more; a sample above the
 * applied memory (an overuse: a new peak, nothing failed yet) to that use × (1 + headroom), what the
 * recommendation makes of the new peak, only sooner.
 *
 * Applying (fg_rec_decide) is where thrash is prevented. The allocation applied is kept in the state.
 * A dimension changes only when its target is at least changeThresholdPercent away from what is
 * applied: up at once, down only once the cooldown has passed since the last change. A bump raises
 * memory at once whatever the threshold. A noisy but stationary workload therefore changes at most
 * once per cooldown, and not at all once its targets have settled within the threshold.
 *
 * Hostile samples are refused, never stored, and counted by reason in the state: NaN or infinite
 * values, negative ones, compute above a whole GPU, memory above the GPU's (or the policy's maximum
 * when the GPU is unknown), and a time more than FG_REC_REORDER_MS before the latest accepted one.
 *
 * A state is a plain struct (fixed size, no pointers): copied, compared and checkpointed as it is
 * (checkpoint.h turns it into JSON and back).
 */
#ifndef FG_RIGHTSIZING_RECOMMENDER_H
#define FG_RIGHTSIZING_RECOMMENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "crds/gpupolicy.h"
#include "rightsizing/histogram.h"

#define FG_REC_PEAK_SLOTS 48
#define FG_REC_REORDER_MS (2 * 60 * 1000ll)  /* how far behind the latest sample one may arrive */
#define FG_REC_BUMP_RATIO 1.2
#define FG_REC_BUMP_MIN_MIB 256
#define FG_REC_COMPUTE_MAX 1000.0             /* milli: a whole GPU */

/* What a workload's GPUs and policy give the recommender. */
struct fg_rec_opts {
    struct fg_gpupolicy_spec policy;
    int64_t gpu_memory_mib;     /* the memory of the GPUs it runs on; 0: unknown (the policy's maximum caps) */
};

enum fg_rec_refusal {
    FG_REC_OK = 0,
    FG_REC_NOT_FINITE,          /* NaN or infinite */
    FG_REC_NEGATIVE,
    FG_REC_COMPUTE_ABOVE_GPU,   /* more than 1000 milli */
    FG_REC_MEMORY_ABOVE_GPU,
    FG_REC_TIME_BACKWARDS,
    FG_REC_REFUSALS             /* how many there are */
};

/* One pod's use at one moment; a dimension not measured is left out (has_* false). */
struct fg_rec_sample {
    int64_t t_ms;
    bool has_compute, has_memory;
    double compute_milli;       /* 0..1000 */
    double memory_mib;
};

/* The allocation applied, as the recommender last decided it. */
struct fg_rec_applied {
    bool set;                   /* false: none yet (whole GPUs) */
    int64_t compute_milli, memory_mib;
    int64_t since_ms;           /* when it last changed */
};

struct fg_rec_peak {
    int64_t slot;               /* t / slot length; the slot this peak belongs to */
    double mib;
};

struct fg_rec_state {
    struct fg_hist compute, memory;
    struct fg_rec_peak peaks[FG_REC_PEAK_SLOTS];   /* ring, by slot number modulo its size */
    int64_t slot_ms;            /* the window's length / FG_REC_PEAK_SLOTS when the state was made */
    int64_t first_ms, last_ms;  /* first and latest accepted sample; first_ms 0 with no sample */
    uint64_t samples;
    uint64_t refused[FG_REC_REFUSALS];
    double bump_mib;            /* the memory floor an OOM kill or overuse set (0: none) */
    int64_t bump_ms;            /* when; the floor holds for the window */
    bool bump_from_oom;         /* the latest bump came from an OOM kill (else from an overuse) */
    uint64_t ooms, overuses;    /* how many of each were seen */
    struct fg_rec_applied applied;
};

/* What the history says, for the GPUWorkload's status. */
struct fg_rec_usage {
    uint64_t samples;
    int64_t covered_ms;         /* from the first sample to the latest, at most the window */
    double compute_p50, compute_p90, compute_p95;   /* milli; bucket ends (histogram.h) */
    double memory_peak_mib;     /* the window's peak */
};

struct fg_rec_result {
    bool ready;                 /* the history covers minHistory (or a bump forces memory) */
    int64_t compute_milli, memory_mib;
    int64_t compute_lower, compute_upper, memory_lower, memory_upper;
    double confidence;          /* 0..1 */
};

enum fg_rec_action {
    FG_REC_KEEP,                /* nothing changes */
    FG_REC_FIRST,               /* the first allocation, once minHistory is covered */
    FG_REC_UP,                  /* some dimension goes up (and none goes down) */
    FG_REC_DOWN,                /* some dimension goes down (and none goes up) */
    FG_REC_UP_DOWN,             /* one up, the other down */
    FG_REC_BUMP,                /* memory raised at once after an OOM kill or overuse */
};

struct fg_rec_decision {
    enum fg_rec_action action;
    const char *reason;         /* static, CamelCase: "InsufficientHistory", "Cooldown", "BelowThreshold",
                                   "Unchanged", "FirstRecommendation", "ScaledUp", "ScaledDown",
                                   "ScaledUpAndDown", "OutOfMemory", "MemoryOveruse" */
    struct fg_rec_applied before, after;
};

/* A new, empty state for the policy in o. false when the policy's window cannot make histograms
 * (a window shorter than FG_REC_PEAK_SLOTS ms); s untouched then. */
bool fg_rec_init(struct fg_rec_state *s, const struct fg_rec_opts *o);

/* Adds a sample; FG_REC_OK, or why it was refused (counted in s->refused, nothing else changes). A
 * sample with both dimensions bad is refused for the first reason found; one whose memory is above
 * the applied memory also sets the overuse floor. */
enum fg_rec_refusal fg_rec_add(struct fg_rec_state *s, const struct fg_rec_opts *o, const struct fg_rec_sample *x);

/* An out-of-memory kill at t_ms, the pod having used memory_mib (≤ 0: unknown) just before. */
void fg_rec_oom(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t t_ms, double memory_mib);

void fg_rec_usage(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms, struct fg_rec_usage *out);
void fg_rec_recommend(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms,
                      struct fg_rec_result *out);

/* Decides what to apply at now_ms and records it in s->applied (see above); out says what and why. */
void fg_rec_decide(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms, struct fg_rec_decision *out);

/* The name of a refusal: "NotFinite", "Negative", "ComputeAboveGPU", "MemoryAboveGPU",
 * "TimeBackwards"; "" for FG_REC_OK. */
const char *fg_rec_refusal_name(enum fg_rec_refusal r);

#endif
