/*
 * replay — the minute-by-minute loop of `fracgpu simulate`; see simulate.h for what it models and
 * measures.
 *
 * Trace times are seconds after the trace's first sample; the recommender is given them in
 * milliseconds after an epoch of one day (REC_EPOCH_MS), so that no sample sits at time 0. Minute m
 * covers [60m, 60m + 60) seconds: its samples are added, then the recommender decides at its end.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "rightsizing/recommender.h"
#include "rightsizing/simulate/packing.h"
#include "rightsizing/simulate/simulate.h"

#define REC_EPOCH_MS (24 * 3600 * 1000ll)
#define MIB 1048576.0
#define SECONDS_MS(s) (REC_EPOCH_MS + (int64_t)(s) * 1000)

struct pod {
    const struct fg_gentd26_series *s;
    size_t first, last;             /* minutes of its first and last sample */
    size_t iu, im;                  /* the next samples to replay */
    double util, mem;               /* its use now: %, MiB */
    bool born;
    int milli;                      /* what it asks for now */
    int64_t mem_mib;
    struct fg_sim_place place;
    struct fg_rec_state rec;
    struct fg_sim_usage use;
    int shown;                      /* index in the result's shown[], -1 */
};

struct run {
    const struct fg_sim_opts *o;
    struct fg_rec_opts ro;
    struct fg_sim_pool pool;
    struct pod *pods;
    size_t n;
    size_t minutes;
    enum fg_sched_sharing sharing;
    bool dedicated;
    struct fg_sim_result *r;
    double *gpu_mem, *gpu_util;     /* per node slot, this minute */
    size_t consolidate_every;       /* minutes; 0: never */
    size_t cap_slots;
};

static size_t minute_of(int64_t t)
{
    return t <= 0 ? 0 : (size_t)(t / FG_SIM_STEP_S);
}

/* The request an allocation (or none: the whole GPU) makes. */
static void wanted(const struct run *run, const struct pod *p, int *milli, int64_t *mem)
{
    const struct fg_rec_applied *a = &p->rec.applied;
    int64_t gpu = run->o->gpu_memory_mib;
    if (!a->set || run->o->policy.sharing == FG_SHARING_EXCLUSIVE) {
        *milli = FG_SCHED_MILLI;
        *mem = gpu;
        return;
    }
    *milli = (int)(a->compute_milli < 1 ? 1 : a->compute_milli > FG_SCHED_MILLI ? FG_SCHED_MILLI : a->compute_milli);
    *mem = a->memory_mib < 0 ? 0 : a->memory_mib > gpu ? gpu : a->memory_mib;
}

/* Places p as it asks now; a pod already placed is rolled: the new one first, then the old one goes. */
static enum fg_err place(struct run *run, struct pod *p, char *errmsg)
{
    struct fg_sim_request req = { .sharing = run->sharing, .dedicated = run->dedicated, .owner = p->s->id };
    wanted(run, p, &req.milli, &req.mem_mib);
    if (p->place.placed && req.milli == p->milli && req.mem_mib == p->mem_mib)
        return FG_OK;
    struct fg_sim_place next;
    enum fg_err err = fg_sim_pool_place(&run->pool, &req, &next, errmsg);
    if (err)
        return err;
    fg_sim_pool_release(&run->pool, &p->place);
    p->place = next;
    p->milli = req.milli;
    p->mem_mib = req.mem_mib;
    return FG_OK;
}

/* Adds p's samples of minute m to its recommender, counting overruns against what it holds. */
static void replay_samples(struct run *run, struct pod *p, size_t m)
{
    const struct fg_gentd26_series *s = p->s;
    int64_t end = (int64_t)(m + 1) * FG_SIM_STEP_S;
    struct fg_sim_result *r = run->r;
    for (;;) {
        bool u = p->iu < s->nutil && s->util[p->iu].t < end, k = p->im < s->nmem && s->mem[p->im].t < end;
        if (!u && !k)
            break;
        int64_t t = u && k ? (s->util[p->iu].t < s->mem[p->im].t ? s->util[p->iu].t : s->mem[p->im].t)
                           : u ? s->util[p->iu].t : s->mem[p->im].t;
        struct fg_rec_sample x = { .t_ms = SECONDS_MS(t) };
        if (u && s->util[p->iu].t == t) {
            x.has_compute = true;
            x.compute_milli = s->util[p->iu++].v * 10.0;
            p->util = x.compute_milli / 10.0;
        }
        if (k && s->mem[p->im].t == t) {
            x.has_memory = true;
            x.memory_mib = s->mem[p->im++].v / MIB;
            p->mem = x.memory_mib;
            p->use.peak_mem = x.memory_mib > p->use.peak_mem ? x.memory_mib : p->use.peak_mem;
        }
        r->samples++;
        const struct fg_rec_applied *a = &p->rec.applied;
        bool oc = a->set && x.has_compute && x.compute_milli > (double)a->compute_milli;
        bool om = a->set && x.has_memory && x.memory_mib > (double)a->memory_mib;
        r->overrun_compute += oc;
        r->overrun_memory += om;
        r->overrun += oc || om;
        if (fg_rec_add(&p->rec, &run->ro, &x) != FG_REC_OK)
            r->refused++;
    }
}

/* Each GPU's tenants' real use this minute: overflow and contention. */
static void measure(struct run *run, size_t m)
{
    size_t slots = fg_sim_pool_slots(&run->pool);
    if (slots > run->cap_slots) {
        run->cap_slots = 2 * slots;
        run->gpu_mem = fg_realloc(run->gpu_mem, run->cap_slots * sizeof *run->gpu_mem);
        run->gpu_util = fg_realloc(run->gpu_util, run->cap_slots * sizeof *run->gpu_util);
    }
    memset(run->gpu_mem, 0, slots * sizeof *run->gpu_mem);
    memset(run->gpu_util, 0, slots * sizeof *run->gpu_util);
    int alive = 0;
    for (size_t i = 0; i < run->n; i++) {
        const struct pod *p = &run->pods[i];
        if (!p->place.placed)
            continue;
        alive++;
        run->gpu_mem[p->place.pl.node] += p->mem;
        run->gpu_util[p->place.pl.node] += p->util;
    }
    struct fg_sim_result *r = run->r;
    int gpus = fg_sim_pool_gpus(&run->pool);
    r->gpus[m] = gpus;
    r->alive[m] = alive;
    r->gpus_peak_all = gpus > r->gpus_peak_all ? gpus : r->gpus_peak_all;
    r->one_per_pod = alive > r->one_per_pod ? alive : r->one_per_pod;
    if (m < r->warmup_minutes)
        return;
    const struct fg_sched_cluster *c = &run->pool.c;
    for (size_t g = 0; g < slots; g++) {
        if (c->nodes[g].removed)
            continue;
        r->memory_overflow_gpu_minutes += run->gpu_mem[g] > (double)run->o->gpu_memory_mib;
        r->contended_gpu_minutes += run->gpu_util[g] > 100.0;
    }
    r->gpu_minutes += (uint64_t)gpus;
    r->gpus_peak = gpus > r->gpus_peak ? gpus : r->gpus_peak;
}

/* The report's series of the shown pods at minute m. */
static void record_shown(struct run *run, size_t m)
{
    for (size_t i = 0; i < run->n; i++) {
        const struct pod *p = &run->pods[i];
        if (p->shown < 0)
            continue;
        struct fg_sim_shown *sh = &run->r->shown[p->shown];
        bool alive = p->place.placed;
        sh->mem_used[m] = alive ? p->mem : NAN;
        sh->util_used[m] = alive ? p->util : NAN;
        sh->mem_alloc[m] = alive ? (double)p->mem_mib : NAN;
        sh->compute_alloc[m] = alive ? p->milli / 10.0 : NAN;
    }
}

/* GPUs tried per consolidation, emptiest first: the operator's MAX_TRIED (consolidate.c). */
#define CONSOLIDATION_TRIED 32

/* A held GPU as consolidation ranks it. */
struct gpu_fill {
    int node;
    int tenants;
    int64_t mem_mib;            /* its tenants' memory allocations */
    bool stuck;                 /* a tenant holds the whole GPU, or is larger than any GPU's free room */
};

/* The order the operator tries GPUs in (scheduler/adapter/consolidate.c): fewest tenants, then least
 * memory allocated, then the oldest. */
static int by_fill(const void *a, const void *b)
{
    const struct gpu_fill *x = a, *y = b;
    if (x->tenants != y->tenants)
        return x->tenants < y->tenants ? -1 : 1;
    if (x->mem_mib != y->mem_mib)
        return x->mem_mib < y->mem_mib ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* Empties one GPU onto the others, as the operator does once per consolidation interval: a GPU holding
 * a pod still on its whole GPU (no allocation yet), or one larger than any GPU's free room, is passed
 * over at once; of the next CONSOLIDATION_TRIED in by_fill's order, the first whose every tenant fits
 * on the others is emptied. Each move is a roll, counted as a change. */
static void consolidate(struct run *run)
{
    size_t slots = fg_sim_pool_slots(&run->pool);
    struct gpu_fill *f = fg_calloc(slots ? slots : 1, sizeof *f);
    struct fg_sim_place **tenants = fg_malloc((run->n ? run->n : 1) * sizeof *tenants);
    int max_free_milli = 0;     /* the most a GPU with tenants has free: a tenant above it fits nowhere */
    int64_t max_free_mem = 0;
    for (size_t g = 0; g < slots; g++) {
        f[g].node = (int)g;
        const struct fg_sched_node *node = &run->pool.c.nodes[g];
        if (node->removed || !node->gpus[0].tenants)
            continue;
        max_free_milli = node->gpus[0].free_milli > max_free_milli ? node->gpus[0].free_milli : max_free_milli;
        max_free_mem = node->gpus[0].free_mem_mib > max_free_mem ? node->gpus[0].free_mem_mib : max_free_mem;
    }
    for (size_t i = 0; i < run->n; i++) {
        const struct pod *p = &run->pods[i];
        if (!p->place.placed)
            continue;
        struct gpu_fill *g = &f[p->place.pl.node];
        g->tenants++;
        g->mem_mib += p->mem_mib;
        g->stuck |= !p->rec.applied.set || p->milli > max_free_milli || p->mem_mib > max_free_mem;
    }
    size_t n = 0;
    for (size_t g = 0; g < slots; g++)
        if (!run->pool.c.nodes[g].removed && f[g].tenants > 0 && !f[g].stuck)
            f[n++] = f[g];
    qsort(f, n, sizeof *f, by_fill);
    for (size_t j = 0; j < n && j < CONSOLIDATION_TRIED; j++) {
        size_t k = 0;
        for (size_t i = 0; i < run->n; i++)
            if (run->pods[i].place.placed && run->pods[i].place.pl.node == f[j].node)
                tenants[k++] = &run->pods[i].place;
        if (fg_sim_pool_move_off(&run->pool, f[j].node, tenants, k)) {
            run->r->changes += k;
            run->r->consolidations++;
            break;
        }
    }
    free(tenants);
    free(f);
}

static enum fg_err step(struct run *run, size_t m, char *errmsg)
{
    struct fg_sim_result *r = run->r;
    for (size_t i = 0; i < run->n; i++) {
        struct pod *p = &run->pods[i];
        if (m < p->first)
            continue;
        if (m > p->last) {
            fg_sim_pool_release(&run->pool, &p->place);
            continue;
        }
        enum fg_err err;
        if (!p->born) {
            p->born = true;
            if ((err = place(run, p, errmsg)))
                return err;
        }
        replay_samples(run, p, m);
        struct fg_rec_decision d;
        fg_rec_decide(&p->rec, &run->ro, SECONDS_MS((int64_t)(m + 1) * FG_SIM_STEP_S), &d);
        if (d.action != FG_REC_KEEP)
            r->changes++;
        if ((err = place(run, p, errmsg)))
            return err;
        p->use.mem[m] = p->mem;
        p->use.util[m] = p->util;
    }
    fg_sim_pool_release_idle(&run->pool);
    if (run->consolidate_every && (m + 1) % run->consolidate_every == 0) {
        consolidate(run);   /* onto GPUs with tenants only: the idle ones are gone */
        fg_sim_pool_release_idle(&run->pool);
    }
    measure(run, m);
    record_shown(run, m);
    return FG_OK;
}

static int by_samples_desc(const void *a, const void *b)
{
    const struct pod *x = *(struct pod *const *)a, *y = *(struct pod *const *)b;
    size_t nx = x->s->nutil + x->s->nmem, ny = y->s->nutil + y->s->nmem;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return strcmp(x->s->id, y->s->id);
}

/* Picks the shown pods: the FG_SIM_SHOWN_PODS with the most samples, spread over that ranking. */
static void choose_shown(struct run *run)
{
    struct pod **rank = fg_malloc(run->n * sizeof *rank);
    for (size_t i = 0; i < run->n; i++)
        rank[i] = &run->pods[i];
    qsort(rank, run->n, sizeof *rank, by_samples_desc);
    size_t want = run->n < FG_SIM_SHOWN_PODS ? run->n : FG_SIM_SHOWN_PODS;
    size_t stride = run->n / 2 / (want ? want : 1);   /* over the better-sampled half */
    for (size_t k = 0; k < want; k++) {
        struct pod *p = rank[k * (stride ? stride : 1)];
        p->shown = (int)k;
        struct fg_sim_shown *sh = &run->r->shown[k];
        memcpy(sh->id, p->s->id, sizeof sh->id);
        sh->mem_used = fg_calloc(run->minutes, sizeof(double));
        sh->mem_alloc = fg_calloc(run->minutes, sizeof(double));
        sh->util_used = fg_calloc(run->minutes, sizeof(double));
        sh->compute_alloc = fg_calloc(run->minutes, sizeof(double));
    }
    run->r->n_shown = want;
    free(rank);
}

static enum fg_err setup(struct run *run, const struct fg_gentd26 *t, char *errmsg)
{
    const struct fg_sim_opts *o = run->o;
    if (o->gpu_memory_mib < 1024)
        return fg_errmsg(errmsg, FG_E_INVAL, "a GPU of %lld MiB: at least 1 GiB is expected",
                         (long long)o->gpu_memory_mib);
    run->ro = (struct fg_rec_opts){ .policy = o->policy, .gpu_memory_mib = o->gpu_memory_mib };
    run->sharing = o->policy.sharing == FG_SHARING_MPS         ? FG_SCHED_SHARE_MPS
                   : o->policy.sharing == FG_SHARING_EXCLUSIVE ? FG_SCHED_SHARE_NONE
                                                               : FG_SCHED_SHARE_TIMESLICE;
    run->dedicated = o->policy.isolation == FG_ISOLATION_DEDICATED || o->policy.sharing == FG_SHARING_EXCLUSIVE;
    run->pods = fg_calloc(t->n ? t->n : 1, sizeof *run->pods);
    for (size_t i = 0; i < t->n; i++) {
        const struct fg_gentd26_series *s = &t->series[i];
        if ((o->selected && !o->selected[i]) || (!s->nutil && !s->nmem))
            continue;
        struct pod *p = &run->pods[run->n++];
        p->s = s;
        p->first = minute_of(s->start);
        int64_t last = s->start;
        if (s->nutil && s->util[s->nutil - 1].t > last)
            last = s->util[s->nutil - 1].t;
        if (s->nmem && s->mem[s->nmem - 1].t > last)
            last = s->mem[s->nmem - 1].t;
        p->last = minute_of(last);
        p->shown = -1;
        run->minutes = p->last + 1 > run->minutes ? p->last + 1 : run->minutes;
        if (!fg_rec_init(&p->rec, &run->ro))
            return fg_errmsg(errmsg, FG_E_INVAL, "the policy's historyWindow is too short for the recommender");
    }
    if (!run->n)
        return fg_errmsg(errmsg, FG_E_INVAL, "no pod of the trace is selected");
    for (size_t i = 0; i < run->n; i++) {
        run->pods[i].use.mem = fg_calloc(run->minutes, sizeof(double));
        run->pods[i].use.util = fg_calloc(run->minutes, sizeof(double));
    }
    run->r->pods = run->n;
    run->r->minutes = run->minutes;
    int64_t warmup_ms = o->warmup_ms < 0 ? o->policy.min_history_ms : o->warmup_ms;
    size_t warmup = (size_t)((warmup_ms + FG_SIM_STEP_S * 1000 - 1) / (FG_SIM_STEP_S * 1000));
    if (warmup >= run->minutes)
        return fg_errmsg(errmsg, FG_E_INVAL, "a warm-up of %zu minutes leaves nothing of the trace's %zu to measure",
                         warmup, run->minutes);
    run->r->warmup_minutes = warmup;
    if (o->consolidation_interval_ms > 0 && o->policy.update_mode == FG_UPDATE_AUTO)   /* as on a cluster */
        run->consolidate_every = (size_t)((o->consolidation_interval_ms + FG_SIM_STEP_S * 1000 - 1) / (FG_SIM_STEP_S * 1000));
    run->r->gpus = fg_calloc(run->minutes, sizeof *run->r->gpus);
    run->r->alive = fg_calloc(run->minutes, sizeof *run->r->alive);
    choose_shown(run);
    return fg_sim_pool_init(&run->pool, o->placement ? o->placement : "fracgpu", o->gpu_memory_mib, errmsg);
}

static void summarise(struct run *run)
{
    struct fg_sim_result *r = run->r;
    double sum_peaks = 0;
    struct fg_sim_usage *use = fg_malloc(run->n * sizeof *use);
    for (size_t i = 0; i < run->n; i++) {
        const struct pod *p = &run->pods[i];
        use[i] = p->use;
        sum_peaks += p->use.peak_mem;
        r->pod_days += (double)(p->last - p->first + 1) * FG_SIM_STEP_S / 86400.0;
    }
    r->sum_of_peaks = (int)ceil(sum_peaks / (double)run->o->gpu_memory_mib - 1e-9);
    r->hindsight = fg_sim_hindsight(use, run->n, run->minutes, run->o->gpu_memory_mib);
    free(use);
    size_t measured = r->minutes - r->warmup_minutes;
    r->gpus_mean = measured ? (double)r->gpu_minutes / (double)measured : 0;
    r->contended_gpu_minutes_pct = r->gpu_minutes ? 100.0 * (double)r->contended_gpu_minutes / (double)r->gpu_minutes : 0;
    double samples = r->samples ? (double)r->samples : 1;
    r->overrun_compute_pct = 100.0 * (double)r->overrun_compute / samples;
    r->overrun_memory_pct = 100.0 * (double)r->overrun_memory / samples;
    r->overrun_pct = 100.0 * (double)r->overrun / samples;
    r->changes_per_pod_day = r->pod_days > 0 ? (double)r->changes / r->pod_days : 0;
    r->placements = run->pool.cycles;
}

enum fg_err fg_sim_run(const struct fg_gentd26 *t, const struct fg_sim_opts *o, struct fg_sim_result *r, char *errmsg)
{
    uint64_t t0 = fg_clock_mono_ns();
    memset(r, 0, sizeof *r);
    struct run run = { .o = o, .r = r };
    enum fg_err err = setup(&run, t, errmsg);
    size_t tick = run.minutes / 100 ? run.minutes / 100 : 1;
    for (size_t m = 0; !err && m < run.minutes; m++) {
        err = step(&run, m, errmsg);
        if (o->progress && m % tick == 0)
            o->progress(o->ud, (double)m / (double)run.minutes);
    }
    if (!err) {
        summarise(&run);
        if (o->progress)
            o->progress(o->ud, 1.0);
    }
    for (size_t i = 0; i < run.n; i++) {
        free(run.pods[i].use.mem);
        free(run.pods[i].use.util);
    }
    free(run.pods);
    free(run.gpu_mem);
    free(run.gpu_util);
    fg_sim_pool_cleanup(&run.pool);
    r->elapsed_ms = (double)(fg_clock_mono_ns() - t0) / 1e6;
    if (err)
        fg_sim_result_cleanup(r);
    return err;
}

void fg_sim_result_cleanup(struct fg_sim_result *r)
{
    free(r->gpus);
    free(r->alive);
    for (size_t k = 0; k < r->n_shown; k++) {
        free(r->shown[k].mem_used);
        free(r->shown[k].mem_alloc);
        free(r->shown[k].util_used);
        free(r->shown[k].compute_alloc);
    }
    memset(r, 0, sizeof *r);
}
