/*
 * gradient — per-node fragmentation caches and O(types) what-if evaluation (see gradient.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/gradient.h"

#define MEMO_WAYS 64

static void alloc_types(struct fg__grad *gr)
{
    free(gr->fit);
    free(gr->small);
    size_t cells = gr->n_nodes * (gr->n_types ? gr->n_types : 1);
    gr->fit = fg_calloc(cells, sizeof *gr->fit);
    gr->small = fg_calloc(cells, sizeof *gr->small);
}

void fg__grad_init(struct fg__grad *gr, size_t n_nodes, const struct fg_sched_mix *mix)
{
    memset(gr, 0, sizeof *gr);
    gr->n_nodes = n_nodes ? n_nodes : 1;
    gr->node_ver = fg_calloc(gr->n_nodes, sizeof *gr->node_ver);
    gr->node_gen = fg_calloc(gr->n_nodes, sizeof *gr->node_gen);
    gr->idle = fg_calloc(gr->n_nodes, sizeof *gr->idle);
    gr->frag = fg_calloc(gr->n_nodes, sizeof *gr->frag);
    gr->memo = fg_calloc(gr->n_nodes * MEMO_WAYS, sizeof *gr->memo);
    fg__grad_set_mix(gr, mix);
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
}

static bool type_fits_node(const struct fg_sched_mix_type *t, int model, int64_t free_cpu)
{
    return t->gpu_milli > 0 && model >= 0 && (t->mask & (1u << model)) && free_cpu >= t->cpu_milli;
}

double fg__grad_frag(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i)
{
    const struct fg_sched_node *n = &c->nodes[i];
    if (gr->node_ver[i] == n->version + 1 && gr->node_gen[i] == gr->mix_gen)
        return gr->frag[i];
    const struct fg_sched_mix *mix = gr->mix;
    int *fit = &gr->fit[i * gr->n_types], *small = &gr->small[i * gr->n_types];
    int idle = 0;
    for (int g = 0; g < n->n_gpus; g++)
        idle += n->gpus[g].free_milli;
    double f = 0;
    for (size_t t = 0; t < mix->n; t++) {
        int m = mix->types[t].gpu_milli, k = 0, s = 0;
        for (int g = 0; g < n->n_gpus; g++) {
            if (n->gpus[g].free_milli >= m)
                k++;
            else
                s += n->gpus[g].free_milli;
        }
        fit[t] = k;
        small[t] = s;
        bool ok = type_fits_node(&mix->types[t], n->model, n->free_cpu) && k >= mix->types[t].n_gpus;
        f += mix->types[t].p * (ok ? s : idle);
    }
    gr->idle[i] = idle;
    gr->frag[i] = idle ? f : 0;
    gr->node_ver[i] = n->version + 1;
    gr->node_gen[i] = gr->mix_gen;
    return gr->frag[i];
}

/* A type of m milli's fit count k and small sum s on a node, updated for one GPU's change. */
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
    const struct fg_sched_mix *mix = gr->mix;
    const int *fit = &gr->fit[i * gr->n_types], *small = &gr->small[i * gr->n_types];
    int idle = gr->idle[i];
    for (int j = 0; j < n_ch; j++)
        idle -= ch[j].before - ch[j].after;
    if (idle == 0)
        return 0;
    int64_t free_cpu = n->free_cpu - cpu;
    double f = 0;
    for (size_t t = 0; t < mix->n; t++) {
        const struct fg_sched_mix_type *ty = &mix->types[t];
        if (!type_fits_node(ty, n->model, free_cpu)) {
            f += ty->p * idle;
            continue;
        }
        int k = fit[t], s = small[t];
        for (int j = 0; j < n_ch; j++)
            apply_change(ty->gpu_milli, &ch[j], &k, &s);
        f += ty->p * (k >= ty->n_gpus ? s : idle);
    }
    return f;
}

/* Two candidates of fg__grad_frag_after_each at once: their sums in registers, side by side. */
static void after_pair(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i, int64_t cpu, int milli,
                       const int *free, double *out)
{
    const struct fg_sched_node *nd = &c->nodes[i];
    const struct fg_sched_mix *mix = gr->mix;
    const int *fit = &gr->fit[i * gr->n_types], *small = &gr->small[i * gr->n_types];
    int idle = gr->idle[i] - milli;
    struct fg__grad_change ch0 = { free[0], free[0] - milli }, ch1 = { free[1], free[1] - milli };
    int64_t free_cpu = nd->free_cpu - cpu;
    double f0 = 0, f1 = 0;
    for (size_t t = 0; idle && t < mix->n; t++) {
        const struct fg_sched_mix_type *ty = &mix->types[t];
        if (!type_fits_node(ty, nd->model, free_cpu)) {
            f0 += ty->p * idle;
            f1 += ty->p * idle;
            continue;
        }
        int k0 = fit[t], s0 = small[t], k1 = fit[t], s1 = small[t];
        apply_change(ty->gpu_milli, &ch0, &k0, &s0);
        apply_change(ty->gpu_milli, &ch1, &k1, &s1);
        f0 += ty->p * (k0 >= ty->n_gpus ? s0 : idle);
        f1 += ty->p * (k1 >= ty->n_gpus ? s1 : idle);
    }
    out[0] = f0;
    out[1] = f1;
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
    if (p->isolation == FG_SCHED_ISO_DEDICATED || i >= gr->n_nodes)
        return NULL;
    struct fg__grad_shape k = { cpu, p->gpu_mem_mib, p->gpu_milli, p->n_gpus, (int)p->sharing };
    uint32_t id = shape_id(gr, &k);
    struct fg__grad_memo *m = &gr->memo[(id % MEMO_WAYS) * gr->n_nodes + i];  /* a cycle streams one way */
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
