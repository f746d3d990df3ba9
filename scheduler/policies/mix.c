/*
 * mix — reference mix counting and building, and the fragmentation measure (see mix.h).
 *
 * Groups are found by linear search: traces have around a hundred distinct shapes, so a hash table
 * would buy nothing measurable. The spec string is copied into the group.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/policies/mix.h"

struct fg__mix_group {
    int64_t cpu_milli;
    int gpu_milli, n_gpus;
    uint32_t mask;
    char *spec;
    int64_t count;
};

void fg_sched_mix_counter_init(struct fg_sched_mix_counter *mc)
{
    memset(mc, 0, sizeof *mc);
}

void fg_sched_mix_counter_cleanup(struct fg_sched_mix_counter *mc)
{
    for (size_t i = 0; i < mc->n; i++)
        free(mc->groups[i].spec);
    free(mc->groups);
    memset(mc, 0, sizeof *mc);
}

void fg_sched_mix_counter_add(struct fg_sched_mix_counter *mc, const struct fg_sched_shape *s)
{
    int64_t cpu = s->cpu_milli ? s->cpu_milli : 100;
    const char *spec = s->spec ? s->spec : "";
    mc->total++;
    for (size_t i = 0; i < mc->n; i++) {
        struct fg__mix_group *g = &mc->groups[i];
        if (g->cpu_milli == cpu && g->gpu_milli == s->gpu_milli && g->n_gpus == s->n_gpus &&
            g->mask == s->mask && !strcmp(g->spec, spec)) {
            g->count++;
            return;
        }
    }
    if (mc->n == mc->cap) {
        mc->cap = mc->cap ? 2 * mc->cap : 64;
        mc->groups = fg_realloc(mc->groups, mc->cap * sizeof *mc->groups);
    }
    mc->groups[mc->n++] = (struct fg__mix_group){ cpu, s->gpu_milli, s->n_gpus, s->mask, fg_strdup(spec), 1 };
}

static int cmp_group(const void *pa, const void *pb)
{
    const struct fg__mix_group *a = *(const struct fg__mix_group *const *)pa;
    const struct fg__mix_group *b = *(const struct fg__mix_group *const *)pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    if (a->cpu_milli != b->cpu_milli)
        return a->cpu_milli > b->cpu_milli ? -1 : 1;
    if (a->gpu_milli != b->gpu_milli)
        return a->gpu_milli > b->gpu_milli ? -1 : 1;
    if (a->n_gpus != b->n_gpus)
        return a->n_gpus > b->n_gpus ? -1 : 1;
    return -strcmp(a->spec, b->spec);
}

static void build(const struct fg_sched_mix_counter *mc, double coverage, struct fg_sched_mix *mix)
{
    fg_sched_mix_cleanup(mix);
    if (mc->n == 0)
        return;
    const struct fg__mix_group **order = fg_malloc(mc->n * sizeof *order);
    for (size_t i = 0; i < mc->n; i++)
        order[i] = &mc->groups[i];
    qsort(order, mc->n, sizeof *order, cmp_group);
    int64_t covered = 0;
    size_t k = 0;
    while (k < mc->n && (double)covered < coverage * (double)mc->total)
        covered += order[k++]->count;
    mix->types = fg_malloc(k * sizeof *mix->types);
    mix->n = k;
    double frac = (double)covered / (double)mc->total;
    for (size_t i = 0; i < k; i++)
        mix->types[i] = (struct fg_sched_mix_type){ order[i]->cpu_milli, order[i]->gpu_milli, order[i]->n_gpus,
                                                     order[i]->mask,
                                                     (double)order[i]->count / (double)mc->total / frac };
    free(order);
}

void fg_sched_mix_build(const struct fg_sched_mix_counter *mc, struct fg_sched_mix *mix)
{
    build(mc, 0.95, mix);
}

void fg_sched_mix_build_all(const struct fg_sched_mix_counter *mc, struct fg_sched_mix *mix)
{
    build(mc, 1.0, mix);
}

void fg_sched_mix_cleanup(struct fg_sched_mix *mix)
{
    free(mix->types);
    mix->types = NULL;
    mix->n = 0;
}

int64_t fg_sched_mix_weight(double p)
{
    return llround(ldexp(p, FG_SCHED_FRAG_BITS));
}

double fg_sched_frag(const struct fg_sched_mix *mix, int model, int64_t free_cpu, const int *free, int n)
{
    int idle = 0;
    for (int j = 0; j < n; j++)
        idle += free[j];
    if (idle == 0)
        return 0;
    uint32_t bit = model >= 0 ? 1u << model : 0;
    int64_t f = 0;
    for (size_t i = 0; i < mix->n; i++) {
        const struct fg_sched_mix_type *t = &mix->types[i];
        int frag = idle;
        if (t->gpu_milli > 0 && (t->mask & bit) && free_cpu >= t->cpu_milli) {
            int fit = 0, small = 0;
            for (int j = 0; j < n; j++) {
                if (free[j] >= t->gpu_milli)
                    fit++;
                else
                    small += free[j];
            }
            if (fit >= t->n_gpus)
                frag = small;
        }
        f += fg_sched_mix_weight(t->p) * frag;
    }
    return fg_sched_frag_value(f);
}

double fg_sched_frag_node(const struct fg_sched_mix *mix, const struct fg_sched_node *n)
{
    int free[FG_SCHED_MAX_GPUS];
    for (int j = 0; j < n->n_gpus; j++)
        free[j] = n->gpus[j].free_milli;
    return fg_sched_frag(mix, n->model, n->free_cpu, free, n->n_gpus);
}

/* F of slot id as it stands, 0 for a free slot. */
static double slot_frag(const struct fg_sched_mix *mix, const struct fg_sched_cluster *c, size_t id)
{
    return c->nodes[id].removed ? 0 : fg_sched_frag_node(mix, &c->nodes[id]);
}

void fg_sched_frag_sum_init(struct fg_sched_frag_sum *fs, const struct fg_sched_mix *mix,
                            const struct fg_sched_cluster *c)
{
    fs->mix = mix;
    fs->n_slots = c->n_slots;
    fs->node = fg_malloc(fs->n_slots * sizeof *fs->node);
    fs->total = 0;
    for (size_t i = 0; i < fs->n_slots; i++) {
        fs->node[i] = slot_frag(mix, c, i);
        fs->total += fs->node[i];
    }
}

void fg_sched_frag_sum_update(struct fg_sched_frag_sum *fs, const struct fg_sched_cluster *c, int id)
{
    if ((size_t)id >= fs->n_slots) {  /* a node added in a new slot */
        fs->node = fg_realloc(fs->node, c->n_slots * sizeof *fs->node);
        memset(fs->node + fs->n_slots, 0, (c->n_slots - fs->n_slots) * sizeof *fs->node);
        fs->n_slots = c->n_slots;
    }
    fs->total -= fs->node[id];
    fs->node[id] = slot_frag(fs->mix, c, (size_t)id);
    fs->total += fs->node[id];
}

void fg_sched_frag_sum_cleanup(struct fg_sched_frag_sum *fs)
{
    free(fs->node);
    memset(fs, 0, sizeof *fs);
}
