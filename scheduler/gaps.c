/*
 * gaps — per-model histogram of the GPU gaps the reference mix could fill (see gaps.h).
 */
#include <string.h>

#include "scheduler/gaps.h"

void fg__gaps_count(struct fg__gaps *gp, const struct fg_sched_mix *mix, const struct fg_sched_cluster *c)
{
    for (int f = 0; f <= FG_SCHED_MILLI; f++)
        gp->min_cpu[f] = INT64_MAX;
    for (size_t t = 0; t < mix->n; t++) {
        const struct fg_sched_mix_type *ty = &mix->types[t];
        if (ty->n_gpus == 1 && ty->gpu_milli > 0 && ty->gpu_milli < FG_SCHED_MILLI &&
            ty->cpu_milli < gp->min_cpu[ty->gpu_milli])
            gp->min_cpu[ty->gpu_milli] = ty->cpu_milli;
    }
    for (int f = 1; f <= FG_SCHED_MILLI; f++)  /* a gap fits every type of its size or smaller */
        if (gp->min_cpu[f - 1] < gp->min_cpu[f])
            gp->min_cpu[f] = gp->min_cpu[f - 1];
    memset(gp->count, 0, sizeof gp->count);
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct fg_sched_node *n = &c->nodes[i];
        int free[FG_SCHED_MAX_GPUS];
        for (int g = 0; g < n->n_gpus; g++)
            free[g] = n->gpus[g].free_milli;
        fg__gaps_add(gp, n->model, n->free_cpu, free, n->n_gpus, 1);
    }
}

void fg__gaps_add(struct fg__gaps *gp, int model, int64_t free_cpu, const int *free, int n, int sign)
{
    if (model < 0 || model >= FG_SCHED_MAX_MODELS)
        return;
    for (int g = 0; g < n; g++) {
        int b = fg__gaps_bucket(gp, free_cpu, free[g]);
        if (b >= 0)
            gp->count[model][b] += sign;
    }
}
