/*
 * gradient — per-node fragmentation caches and O(types) what-if evaluation (see gradient_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/policies/gradient_int.h"

#define MEMO_WAYS 128

/* The per-node cells of fit and small: one per group of the node's model, at most one per type. */
static size_t row(const struct fg__grad *gr)
{
    return gr->n_types ? gr->n_types : 1;
}

static void alloc_types(struct fg__grad *gr)
{
    free(gr->fit);
    free(gr->small);
    gr->fit = fg_calloc(gr->n_slots * row(gr), sizeof *gr->fit);
    gr->small = fg_calloc(gr->n_slots * row(gr), sizeof *gr->small);
}

void fg__grad_init(struct fg__grad *gr, const struct fg_sched_mix *mix)
{
    memset(gr, 0, sizeof *gr);
    gr->models = fg_calloc(FG_SCHED_MAX_MODELS, sizeof *gr->models);
    fg__grad_set_mix(gr, mix);
}

/* Grows array *a of `old` elements of `size` bytes to n, the new ones zero. */
static void grow(void *a, size_t size, size_t old, size_t n)
{
    void **p = a;
    *p = fg_realloc(*p, n * size);
    memset((char *)*p + old * size, 0, (n - old) * size);
}

void fg__grad_fit_slots(struct fg__grad *gr, size_t n_slots)
{
    if (n_slots <= gr->n_slots)
        return;
    size_t old = gr->n_slots, n = 2 * old > n_slots ? 2 * old : n_slots;
    grow(&gr->node_ver, sizeof *gr->node_ver, old, n);
    grow(&gr->node_gen, sizeof *gr->node_gen, old, n);
    grow(&gr->idle, sizeof *gr->idle, old, n);
    grow(&gr->frag, sizeof *gr->frag, old, n);
    grow(&gr->fit, sizeof *gr->fit * row(gr), old, n);
    grow(&gr->small, sizeof *gr->small * row(gr), old, n);
    free(gr->memo);  /* laid out way by way with a stride of the slot count: starts over */
    gr->memo = fg_calloc(n * MEMO_WAYS, sizeof *gr->memo);
    gr->n_slots = n;
}

void fg__grad_cleanup(struct fg__grad *gr)
{
    free(gr->node_ver);
    free(gr->node_gen);
    free(gr->idle);
    free(gr->frag);
    free(gr->fit);
    free(gr->small);
    free(gr->memo);
    free(gr->shapes);
    free(gr->shape_index);
    for (int m = 0; gr->models && m < FG_SCHED_MAX_MODELS; m++) {
        free(gr->models[m].groups);
        free(gr->models[m].members);
    }
    free(gr->models);
    fg__sigmoid_cleanup(&gr->sigmoid);
    memset(gr, 0, sizeof *gr);
}

void fg__grad_set_mix(struct fg__grad *gr, const struct fg_sched_mix *mix)
{
    gr->mix = mix;
    gr->mix_gen++;
    if (!gr->fit || mix->n > gr->n_types) {
        gr->n_types = mix->n;
        alloc_types(gr);
    }
    gr->weight_total = 0;
    for (size_t t = 0; t < mix->n; t++)
        gr->weight_total += fg_sched_mix_weight(mix->types[t].p);
}

/* Whether type ty belongs to one of model m's groups: it needs a GPU and allows m. */
static bool grouped(const struct fg_sched_mix_type *ty, int m)
{
    return ty->gpu_milli > 0 && (ty->mask & (1u << m));
}

/* The index of ty's group among md's, n_groups when it has none yet. */
static size_t group_of(const struct fg__grad_model *md, const struct fg_sched_mix_type *ty)
{
    size_t g = 0;
    while (g < md->n_groups && (md->groups[g].gpu_milli != ty->gpu_milli || md->groups[g].n_gpus != ty->n_gpus))
        g++;
    return g;
}

/* Model m's groups for the current mix, built on first use after a mix change: the mix's GPU types
 * that allow m, grouped by (GPU milli, GPU count), each group's members in ascending CPU order. */
static const struct fg__grad_model *model_groups(struct fg__grad *gr, int m)
{
    struct fg__grad_model *md = &gr->models[m];
    if (md->gen == gr->mix_gen)
        return md;
    const struct fg_sched_mix *mix = gr->mix;
    if (md->cap < mix->n) {
        md->cap = mix->n;
        md->groups = fg_realloc(md->groups, md->cap * sizeof *md->groups);
        md->members = fg_realloc(md->members, md->cap * sizeof *md->members);
    }
    md->n_groups = 0;
    for (size_t t = 0; t < mix->n; t++) {
        const struct fg_sched_mix_type *ty = &mix->types[t];
        if (!grouped(ty, m))
            continue;
        size_t g = group_of(md, ty);
        if (g == md->n_groups)
            md->groups[md->n_groups++] = (struct fg__grad_group){ ty->gpu_milli, ty->n_gpus, 0, 0, 0, 0 };
        md->groups[g].n++;
    }
    uint32_t first = 0;
    for (size_t g = 0; g < md->n_groups; g++) {
        md->groups[g].first = first;
        first += md->groups[g].n;
        md->groups[g].n = 0;
    }
    for (size_t t = 0; t < mix->n; t++) {
        const struct fg_sched_mix_type *ty = &mix->types[t];
        if (!grouped(ty, m))
            continue;
        struct fg__grad_group *gp = &md->groups[group_of(md, ty)];
        struct fg__grad_member x = { ty->cpu_milli, fg_sched_mix_weight(ty->p) }, *mb = &md->members[gp->first];
        uint32_t j = gp->n++;
        for (; j > 0 && mb[j - 1].cpu_milli > x.cpu_milli; j--)
            mb[j] = mb[j - 1];
        mb[j] = x;
        gp->weight += x.weight;
        gp->cpu_max = x.cpu_milli > gp->cpu_max ? x.cpu_milli : gp->cpu_max;
    }
    md->gen = gr->mix_gen;
    return md;
}

/* The weight of group g's members whose CPU request free_cpu covers. */
static inline int64_t group_weight(const struct fg__grad_model *md, const struct fg__grad_group *g, int64_t free_cpu)
{
    if (free_cpu >= g->cpu_max)
        return g->weight;
    int64_t w = 0;
    for (const struct fg__grad_member *mb = &md->members[g->first]; mb->cpu_milli <= free_cpu; mb++)
        w += mb->weight;
    return w;
}

double fg__grad_frag(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i)
{
    const struct fg_sched_node *n = &c->nodes[i];
    if (gr->node_ver[i] == n->version + 1 && gr->node_gen[i] == gr->mix_gen)
        return gr->frag[i];
    int *fit = &gr->fit[i * gr->n_types], *small = &gr->small[i * gr->n_types];
    int idle = 0;
    for (int g = 0; g < n->n_gpus; g++)
        idle += n->gpus[g].free_milli;
    int64_t usable = 0;  /* Σ over the types that fit of weight · (idle − small) */
    if (n->model >= 0) {
        const struct fg__grad_model *md = model_groups(gr, n->model);
        for (size_t q = 0; q < md->n_groups; q++) {
            const struct fg__grad_group *gp = &md->groups[q];
            int k = 0, s = 0;
            for (int g = 0; g < n->n_gpus; g++) {
                if (n->gpus[g].free_milli >= gp->gpu_milli)
                    k++;
                else
                    s += n->gpus[g].free_milli;
            }
            fit[q] = k;
            small[q] = s;
            if (k >= gp->n_gpus)
                usable += group_weight(md, gp, n->free_cpu) * (idle - s);
        }
    }
    gr->idle[i] = idle;
    gr->frag[i] = fg_sched_frag_value(gr->weight_total * idle - usable);
    gr->node_ver[i] = n->version + 1;
    gr->node_gen[i] = gr->mix_gen;
    return gr->frag[i];
}

/* A group of m milli's fit count k and small sum s on a node, updated for one GPU's change. */
static inline void apply_change(int m, const struct fg__grad_change *ch, int *k, int *s)
{
    if (ch->before >= m)
        (*k)--;
    else
        *s -= ch->before;
    if (ch->after >= m)
        (*k)++;
    else
        *s += ch->after;
}

double fg__grad_frag_after(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i, int64_t cpu,
                           const struct fg__grad_change *ch, int n_ch)
{
    fg__grad_frag(gr, c, i);
    const struct fg_sched_node *n = &c->nodes[i];
    const int *fit = &gr->fit[i * gr->n_types], *small = &gr->small[i * gr->n_types];
    int idle = gr->idle[i];
    for (int j = 0; j < n_ch; j++)
        idle -= ch[j].before - ch[j].after;
    if (idle == 0)
        return 0;
    int64_t free_cpu = n->free_cpu - cpu, usable = 0;
    const struct fg__grad_model *md = model_groups(gr, n->model);
    for (size_t q = 0; q < md->n_groups; q++) {
        const struct fg__grad_group *gp = &md->groups[q];
        int64_t w = group_weight(md, gp, free_cpu);
        if (w == 0)
            continue;
        int k = fit[q], s = small[q];
        for (int j = 0; j < n_ch; j++)
            apply_change(gp->gpu_milli, &ch[j], &k, &s);
        if (k >= gp->n_gpus)
            usable += w * (idle - s);
    }
    return fg_sched_frag_value(gr->weight_total * idle - usable);
}

/* Two candidates of fg__grad_frag_after_each at once, sharing each group's weight and counts. */
static void after_pair(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i, int64_t cpu, int milli,
                       const int *free, double *out)
{
    const struct fg_sched_node *nd = &c->nodes[i];
    const int *fit = &gr->fit[i * gr->n_types], *small = &gr->small[i * gr->n_types];
    int idle = gr->idle[i] - milli;
    struct fg__grad_change ch0 = { free[0], free[0] - milli }, ch1 = { free[1], free[1] - milli };
    int64_t free_cpu = nd->free_cpu - cpu, u0 = 0, u1 = 0;
    const struct fg__grad_model *md = model_groups(gr, nd->model);
    for (size_t q = 0; idle && q < md->n_groups; q++) {
        const struct fg__grad_group *gp = &md->groups[q];
        int64_t w = group_weight(md, gp, free_cpu);
        if (w == 0)
            continue;
        int k0 = fit[q], s0 = small[q], k1 = fit[q], s1 = small[q];
        apply_change(gp->gpu_milli, &ch0, &k0, &s0);
        apply_change(gp->gpu_milli, &ch1, &k1, &s1);
        if (k0 >= gp->n_gpus)
            u0 += w * (idle - s0);
        if (k1 >= gp->n_gpus)
            u1 += w * (idle - s1);
    }
    out[0] = idle ? fg_sched_frag_value(gr->weight_total * idle - u0) : 0;
    out[1] = idle ? fg_sched_frag_value(gr->weight_total * idle - u1) : 0;
}

void fg__grad_frag_after_each(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i, int64_t cpu,
                              int milli, const int *free, int n, double *out)
{
    fg__grad_frag(gr, c, i);
    int j = 0;
    for (; j + 1 < n; j += 2)
        after_pair(gr, c, i, cpu, milli, &free[j], &out[j]);
    if (j < n) {
        struct fg__grad_change ch = { free[j], free[j] - milli };
        out[j] = fg__grad_frag_after(gr, c, i, cpu, &ch, 1);
    }
}

static uint64_t shape_hash(const struct fg__grad_shape *k)
{
    return (uint64_t)k->cpu_milli * 0x9e3779b97f4a7c15ull ^ (uint64_t)k->gpu_milli * 0xff51afd7ed558ccdull ^
           (uint64_t)k->n_gpus * 0xc4ceb9fe1a85ec53ull ^ (uint64_t)k->gpu_mem_mib * 0x2545f4914f6cdd1dull ^
           (uint64_t)k->sharing;
}

static bool same_shape(const struct fg__grad_shape *a, const struct fg__grad_shape *b)
{
    return a->cpu_milli == b->cpu_milli && a->gpu_mem_mib == b->gpu_mem_mib && a->gpu_milli == b->gpu_milli &&
           a->n_gpus == b->n_gpus && a->sharing == b->sharing;
}

static void index_shape(struct fg__grad *gr, uint32_t id)
{
    size_t mask = 2 * (size_t)gr->cap_shapes - 1;
    size_t i = shape_hash(&gr->shapes[id]) & mask;
    while (gr->shape_index[i])
        i = (i + 1) & mask;
    gr->shape_index[i] = id + 1;
}

/* The id of shape k, assigned on first sight. */
static uint32_t shape_id(struct fg__grad *gr, const struct fg__grad_shape *k)
{
    if (gr->n_shapes && same_shape(&gr->shapes[gr->last_shape], k))
        return gr->last_shape;
    if (gr->n_shapes == gr->cap_shapes) {
        gr->cap_shapes = gr->cap_shapes ? 2 * gr->cap_shapes : 64;
        gr->shapes = fg_realloc(gr->shapes, gr->cap_shapes * sizeof *gr->shapes);
        free(gr->shape_index);
        gr->shape_index = fg_calloc(2 * (size_t)gr->cap_shapes, sizeof *gr->shape_index);
        for (uint32_t id = 0; id < gr->n_shapes; id++)
            index_shape(gr, id);
    }
    size_t mask = 2 * (size_t)gr->cap_shapes - 1;
    for (size_t i = shape_hash(k) & mask; gr->shape_index[i]; i = (i + 1) & mask)
        if (same_shape(&gr->shapes[gr->shape_index[i] - 1], k))
            return gr->last_shape = gr->shape_index[i] - 1;
    gr->shapes[gr->n_shapes] = *k;
    index_shape(gr, gr->n_shapes);
    return gr->last_shape = gr->n_shapes++;
}

struct fg__grad_memo *fg__grad_memo_get(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i,
                                        const struct fg_sched_pod *p, int64_t cpu, bool *valid)
{
    *valid = false;
    if (p->isolation == FG_SCHED_ISO_DEDICATED)
        return NULL;
    struct fg__grad_shape k = { cpu, p->gpu_mem_mib, p->gpu_milli, p->n_gpus, (int)p->sharing };
    uint32_t id = shape_id(gr, &k);
    struct fg__grad_memo *m = &gr->memo[(id % MEMO_WAYS) * gr->n_slots + i];  /* a cycle streams one way */
    if (i + 8 < gr->n_slots)
        __builtin_prefetch(m + 8);
    uint64_t version_plus1 = c->nodes[i].version + 1;
    if (m->version_plus1 == version_plus1 && m->gen == gr->mix_gen && m->shape == id) {
        *valid = true;
        return m;
    }
    m->version_plus1 = version_plus1;
    m->gen = gr->mix_gen;
    m->shape = id;
    m->n = 0;
    return m;
}
