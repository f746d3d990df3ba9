/*
 * gradient — per-node fragmentation caches and O(types) what-if evaluation (see gradient.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/gradient.h"

#define MEMO_WAYS 8

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
        int k = fit[t], s = small[t], m = ty->gpu_milli;
        for (int j = 0; j < n_ch; j++) {
            if (ch[j].before >= m)
                k--;
            else
                s -= ch[j].before;
            if (ch[j].after >= m)
                k++;
            else
                s += ch[j].after;
        }
        f += ty->p * (k >= ty->n_gpus ? s : idle);
    }
    return f;
}

struct fg__grad_memo *fg__grad_memo_get(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i,
                                        const struct fg_sched_pod *p, int64_t cpu, bool *valid)
{
    *valid = false;
    if (p->isolation == FG_SCHED_ISO_DEDICATED || i >= gr->n_nodes)
        return NULL;
    uint64_t h = (uint64_t)cpu * 0x9e3779b97f4a7c15ull ^ (uint64_t)p->gpu_milli * 0xff51afd7ed558ccdull ^
                 (uint64_t)p->n_gpus * 0xc4ceb9fe1a85ec53ull ^ (uint64_t)p->gpu_mem_mib;
    struct fg__grad_memo *m = &gr->memo[i * MEMO_WAYS + (h >> 40) % MEMO_WAYS];
    uint64_t version_plus1 = c->nodes[i].version + 1;
    if (m->version_plus1 == version_plus1 && m->gen == gr->mix_gen && m->cpu_milli == cpu &&
        m->gpu_milli == p->gpu_milli && m->n_gpus == p->n_gpus && m->gpu_mem_mib == p->gpu_mem_mib &&
        m->sharing == (int)p->sharing) {
        *valid = true;
        return m;
    }
    m->version_plus1 = version_plus1;
    m->gen = gr->mix_gen;
    m->cpu_milli = cpu;
    m->gpu_milli = p->gpu_milli;
    m->n_gpus = p->n_gpus;
    m->gpu_mem_mib = p->gpu_mem_mib;
    m->sharing = (int)p->sharing;
    m->n = 0;
    return m;
}
