/* From measured GPU use to allocations (recommender.h). */
#include "rightsizing/recommender.h"

#include <math.h>
#include <string.h>

/* Compute in milli: the first bucket 5 milli wide, each 5% wider (46 buckets to 1000). */
#define COMPUTE_FIRST 5.0
#define COMPUTE_RATIO 1.05
/* Memory in MiB up to 1 TiB: each bucket 10% wider than the one before, 60 of them (hist_opts). Only
 * memory percentiles below 100 read it: peaks are kept exactly. */
#define MEMORY_RATIO 1.1
#define MEMORY_BUCKETS 60

static int64_t window_ms(const struct fg_rec_opts *o)
{
    return o->policy.history_window_ms > 0 ? o->policy.history_window_ms : 1;
}

/* The memory cap for one pod: the GPU's, else the policy's maximum. */
static double memory_cap(const struct fg_rec_opts *o)
{
    return (double)(o->gpu_memory_mib > 0 ? o->gpu_memory_mib : o->policy.memory.max);
}

static bool hist_opts(const struct fg_rec_opts *o, bool memory, struct fg_hist_opts *out)
{
    int64_t half_life = window_ms(o) / 4;
    if (half_life <= 0)
        return false;
    if (!memory) {
        *out = (struct fg_hist_opts){ COMPUTE_FIRST, COMPUTE_RATIO, FG_REC_COMPUTE_MAX, half_life };
        return true;
    }
    double max = (double)FG_POLICY_MIB_MAX, first = max * (MEMORY_RATIO - 1) / (pow(MEMORY_RATIO, MEMORY_BUCKETS) - 1);
    *out = (struct fg_hist_opts){ first < 1 ? 1 : first, MEMORY_RATIO, max, half_life };
    return true;
}

bool fg_rec_init(struct fg_rec_state *s, const struct fg_rec_opts *o)
{
    struct fg_hist_opts c, m;
    if (window_ms(o) < FG_REC_PEAK_SLOTS || !hist_opts(o, false, &c) || !hist_opts(o, true, &m))
        return false;
    struct fg_rec_state t;
    memset(&t, 0, sizeof t);
    if (!fg_hist_init(&t.compute, &c) || !fg_hist_init(&t.memory, &m))
        return false;
    t.slot_ms = window_ms(o) / FG_REC_PEAK_SLOTS;
    for (int i = 0; i < FG_REC_PEAK_SLOTS; i++)
        t.peaks[i].slot = -1;
    *s = t;
    return true;
}

const char *fg_rec_refusal_name(enum fg_rec_refusal r)
{
    switch (r) {
    case FG_REC_OK: return "";
    case FG_REC_NOT_FINITE: return "NotFinite";
    case FG_REC_NEGATIVE: return "Negative";
    case FG_REC_COMPUTE_ABOVE_GPU: return "ComputeAboveGPU";
    case FG_REC_MEMORY_ABOVE_GPU: return "MemoryAboveGPU";
    case FG_REC_TIME_BACKWARDS: return "TimeBackwards";
    case FG_REC_REFUSALS: break;
    }
    return "Unknown";
}

static enum fg_rec_refusal judge(const struct fg_rec_state *s, const struct fg_rec_opts *o,
                                 const struct fg_rec_sample *x)
{
    if ((x->has_compute && !isfinite(x->compute_milli)) || (x->has_memory && !isfinite(x->memory_mib)))
        return FG_REC_NOT_FINITE;
    if ((x->has_compute && x->compute_milli < 0) || (x->has_memory && x->memory_mib < 0))
        return FG_REC_NEGATIVE;
    if (x->has_compute && x->compute_milli > FG_REC_COMPUTE_MAX)
        return FG_REC_COMPUTE_ABOVE_GPU;
    if (x->has_memory && x->memory_mib > memory_cap(o))
        return FG_REC_MEMORY_ABOVE_GPU;
    if (s->samples && x->t_ms < s->last_ms - FG_REC_REORDER_MS)
        return FG_REC_TIME_BACKWARDS;
    return FG_REC_OK;
}

static int64_t slot_of(const struct fg_rec_state *s, int64_t t_ms)
{
    return t_ms >= 0 ? t_ms / s->slot_ms : (t_ms - s->slot_ms + 1) / s->slot_ms;
}

static void note_peak(struct fg_rec_state *s, int64_t t_ms, double mib)
{
    int64_t slot = slot_of(s, t_ms);
    struct fg_rec_peak *p = &s->peaks[((slot % FG_REC_PEAK_SLOTS) + FG_REC_PEAK_SLOTS) % FG_REC_PEAK_SLOTS];
    if (p->slot < slot)
        *p = (struct fg_rec_peak){ slot, mib };
    else if (p->slot == slot && mib > p->mib)
        p->mib = mib;
    /* an older slot's sample (slot < p->slot) arrived after its place was reused: its window has passed */
}

/* The window's peak at now_ms: the largest peak of a slot within the window. */
static double window_peak(const struct fg_rec_state *s, int64_t now_ms)
{
    int64_t newest = slot_of(s, now_ms);
    double peak = 0;
    for (int i = 0; i < FG_REC_PEAK_SLOTS; i++)
        if (s->peaks[i].slot > newest - FG_REC_PEAK_SLOTS && s->peaks[i].mib > peak)
            peak = s->peaks[i].mib;
    return peak;
}

/* Raises the memory floor at t_ms. An OOM kill: FG_REC_BUMP_RATIO × the larger of the applied memory and
 * the memory in use, at least FG_REC_BUMP_MIN_MIB more (the kill says the pod needed more than it
 * showed). An overuse: the use with the policy's headroom, as the recommendation would make of that
 * peak, only sooner. */
static void set_bump(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t t_ms, double used_mib, bool oom)
{
    double floor;
    if (oom) {
        double base = used_mib > (double)s->applied.memory_mib ? used_mib : (double)s->applied.memory_mib;
        floor = base * FG_REC_BUMP_RATIO;
        if (floor < base + FG_REC_BUMP_MIN_MIB)
            floor = base + FG_REC_BUMP_MIN_MIB;
    } else {
        floor = used_mib * (1 + (double)o->policy.memory.headroom_percent / 100.0);
    }
    if (floor > memory_cap(o))
        floor = memory_cap(o);
    if (floor > s->bump_mib || t_ms - s->bump_ms > window_ms(o))
        s->bump_mib = floor;
    s->bump_ms = t_ms;
    s->bump_from_oom = oom;
    s->ooms += oom;
    s->overuses += !oom;
}

enum fg_rec_refusal fg_rec_add(struct fg_rec_state *s, const struct fg_rec_opts *o, const struct fg_rec_sample *x)
{
    enum fg_rec_refusal r = judge(s, o, x);
    if (r != FG_REC_OK) {
        s->refused[r]++;
        return r;
    }
    /* the histograms take it too (within FG_REC_REORDER_MS, far below their half-life) */
    if (x->has_compute && fg_hist_add(&s->compute, x->compute_milli, 1, x->t_ms) != FG_HIST_OK) {
        s->refused[FG_REC_TIME_BACKWARDS]++;
        return FG_REC_TIME_BACKWARDS;
    }
    if (x->has_memory) {
        (void)fg_hist_add(&s->memory, x->memory_mib, 1, x->t_ms);
        note_peak(s, x->t_ms, x->memory_mib);
        if (s->applied.set && s->applied.memory_mib > 0 && x->memory_mib > (double)s->applied.memory_mib)
            set_bump(s, o, x->t_ms, x->memory_mib, false);
    }
    if (!s->samples || x->t_ms < s->first_ms)
        s->first_ms = x->t_ms;
    if (!s->samples || x->t_ms > s->last_ms)
        s->last_ms = x->t_ms;
    s->samples++;
    return FG_REC_OK;
}

void fg_rec_oom(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t t_ms, double memory_mib)
{
    set_bump(s, o, t_ms, memory_mib > 0 && isfinite(memory_mib) ? memory_mib : 0, true);
}

static int64_t covered(const struct fg_rec_state *s, const struct fg_rec_opts *o)
{
    if (!s->samples)
        return 0;
    int64_t c = s->last_ms - s->first_ms;
    return c < window_ms(o) ? c : window_ms(o);
}

void fg_rec_usage(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms, struct fg_rec_usage *out)
{
    *out = (struct fg_rec_usage){
        .samples = s->samples,
        .covered_ms = covered(s, o),
        .compute_p50 = fg_hist_percentile(&s->compute, 0.50),
        .compute_p90 = fg_hist_percentile(&s->compute, 0.90),
        .compute_p95 = fg_hist_percentile(&s->compute, 0.95),
        .memory_peak_mib = window_peak(s, now_ms),
    };
}

/* v rounded up into [lo, hi], compared as a double first: v may be huge, infinite or NaN (NaN: lo). */
static int64_t clamp(double v, int64_t lo, int64_t hi)
{
    double x = ceil(v - 1e-9);
    return !(x > (double)lo) ? lo : x >= (double)hi ? hi : (int64_t)x;
}

void fg_rec_recommend(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms,
                      struct fg_rec_result *out)
{
    const struct fg_gpupolicy_spec *p = &o->policy;
    bool bumped = s->bump_mib > 0 && now_ms - s->bump_ms <= window_ms(o);
    *out = (struct fg_rec_result){ .ready = s->samples && covered(s, o) >= p->min_history_ms };
    out->confidence = (double)covered(s, o) / (double)window_ms(o);
    if (!out->ready && !(bumped && s->applied.set))
        return;   /* a bump only raises an allocation already made: before one, the GPU is whole */
    out->ready = true;
    int64_t cmax = p->compute.max < (int64_t)FG_REC_COMPUTE_MAX ? p->compute.max : (int64_t)FG_REC_COMPUTE_MAX;
    int64_t mmax = (int64_t)memory_cap(o) < p->memory.max ? (int64_t)memory_cap(o) : p->memory.max;
    int64_t cmin = p->compute.min < cmax ? p->compute.min : cmax, mmin = p->memory.min < mmax ? p->memory.min : mmax;
    double compute = s->compute.empty ? FG_REC_COMPUTE_MAX
                                      : fg_hist_percentile(&s->compute, (double)p->compute.percentile / 100.0);
    double memory = p->memory.percentile >= 100 ? window_peak(s, now_ms)
                                                : fg_hist_percentile(&s->memory, (double)p->memory.percentile / 100.0);
    compute *= 1 + (double)p->compute.headroom_percent / 100.0;
    memory *= 1 + (double)p->memory.headroom_percent / 100.0;
    if (s->memory.empty && !bumped)
        memory = memory_cap(o);   /* memory never measured: never guess low */
    if (bumped && memory < s->bump_mib)
        memory = s->bump_mib;
    double spread = 2.0 - (out->confidence < 1 ? out->confidence : 1);
    out->compute_milli = clamp(compute, cmin, cmax);
    out->memory_mib = clamp(memory, mmin, mmax);
    out->compute_lower = clamp((double)out->compute_milli / spread, cmin, cmax);
    out->compute_upper = clamp((double)out->compute_milli * spread, cmin, cmax);
    out->memory_lower = clamp((double)out->memory_mib / spread, mmin, mmax);
    out->memory_upper = clamp((double)out->memory_mib * spread, mmin, mmax);
}

/* Whether target is at least the change threshold away from applied. */
static bool worth_it(const struct fg_rec_opts *o, int64_t applied, int64_t target)
{
    double d = (double)(target > applied ? target - applied : applied - target);
    return d > 0 && d * 100.0 >= (double)o->policy.change_threshold_percent * (double)applied;
}

/* One dimension: up when the target is worth it (or a bump forces it), down when it is worth it and
 * the cooldown has passed. Returns +1, -1 or 0; *why says why a change worth nothing was held back. */
static int change(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms, int64_t *applied,
                  int64_t target, bool forced, const char **why)
{
    if (target > *applied && (forced || worth_it(o, *applied, target))) {
        *applied = target;
        return 1;
    }
    if (target == *applied)
        return 0;
    if (target > *applied || !worth_it(o, *applied, target)) {
        if (!*why)
            *why = "BelowThreshold";
        return 0;
    }
    if (now_ms - s->applied.since_ms < o->policy.cooldown_ms) {
        *why = "Cooldown";
        return 0;
    }
    *applied = target;
    return -1;
}

void fg_rec_decide(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms, struct fg_rec_decision *out)
{
    struct fg_rec_result r;
    fg_rec_recommend(s, o, now_ms, &r);
    *out = (struct fg_rec_decision){ .action = FG_REC_KEEP, .before = s->applied, .after = s->applied };
    if (!r.ready) {
        out->reason = "InsufficientHistory";
        return;
    }
    if (!s->applied.set) {
        out->action = FG_REC_FIRST;
        out->reason = "FirstRecommendation";
        out->after = (struct fg_rec_applied){ true, r.compute_milli, r.memory_mib, now_ms };
        s->applied = out->after;
        return;
    }
    /* a bump newer than the last change raises memory whatever the threshold */
    bool bumped = s->bump_mib > 0 && s->bump_ms >= s->applied.since_ms && now_ms - s->bump_ms <= window_ms(o);
    const char *why = NULL;
    struct fg_rec_applied a = s->applied;
    int c = change(s, o, now_ms, &a.compute_milli, r.compute_milli, false, &why);
    int m = change(s, o, now_ms, &a.memory_mib, r.memory_mib, bumped, &why);
    if (!c && !m) {
        out->reason = why ? why : "Unchanged";
        return;
    }
    a.since_ms = now_ms;
    out->after = a;
    s->applied = a;
    bool up = c > 0 || m > 0, down = c < 0 || m < 0;
    if (m > 0 && bumped) {
        out->action = FG_REC_BUMP;
        out->reason = s->bump_from_oom ? "OutOfMemory" : "MemoryOveruse";
    } else {
        out->action = up && down ? FG_REC_UP_DOWN : up ? FG_REC_UP : FG_REC_DOWN;
        out->reason = up && down ? "ScaledUpAndDown" : up ? "ScaledUp" : "ScaledDown";
    }
}
