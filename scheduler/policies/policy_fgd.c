/*
 * policy_fgd — Fragmentation Gradient Descent (Weng et al., ATC '23), as the experiment scores it.
 *
 * Score = int(100 · sigmoid(Δ / 1000)) with Δ = F(before) − F(after) for the reference mix given at
 * creation (the whole trace's: FGD assumes it knows the future mix). Whole-GPU pods take G GPUs with
 * free ≥ milli in ascending-free order; a sharing pod tries every GPU with free ≥ milli and takes the
 * lowest-index one reaching the highest score. CPU-only pods are scored by their CPU effect alone.
 * fg__sched_gradient_score is shared with fracgpu's policy, which adds its own terms as a bias; the
 * gradients come from gradient_int.h's caches and memo, whole scores from equiv.c's per-cycle cache, the
 * sigmoid's integer from sigmoid_int.h's table of its steps (exactly, without exp on the common path).
 * A sharing pod's GPUs of equal free compute have the same F(after) and so the same score, which the
 * lowest index wins: a node's candidates are the first admitting GPU of each distinct free value
 * (1.09 per node state on fg_bench_sched_latency's cold sharing-pod decisions at 10,000 GPUs, where
 * listing every GPU not repeating an earlier one in memory and tenants too gave 1.16), evaluated two
 * values per pass over the mix's groups (gradient_int.h).
 */
#include <stdlib.h>

#include "base/mem.h"
#include "scheduler/policies/gradient_int.h"
#include "scheduler/policies/policy.h"
#include "scheduler/policies/policy_int.h"

struct fgd_policy {
    struct fg_sched_policy base;
    struct fg__grad grad;
    struct fg__equiv equiv;
};

/* What the equivalence cache's callback needs. */
struct fgd_ctx {
    struct fgd_policy *fp;
    const struct fg_sched_cycle *cy;
};

/* The GPU changes of a whole-GPU pod (none for a CPU-only one) placed on n: it takes GPUs with
 * free ≥ milli in ascending-free order, and at 1000 milli (a valid pod asking for several GPUs asks for
 * whole ones) those are the idle GPUs, each going from 1000 to 0, so the node's count of idle GPUs
 * gives them without reading a GPU (a cold evaluation read all of them: 5 cache lines per node). */
static int whole_changes(const struct fg_sched_node *n, const struct fg_sched_pod *p, struct fg__grad_change *ch)
{
    int k = p->n_gpus < n->idle_gpus ? p->n_gpus : n->idle_gpus;
    for (int j = 0; j < k; j++)
        ch[j] = (struct fg__grad_change){ FG_SCHED_MILLI, 0 };
    return k;
}

/* Fills m (may be NULL: not remembered) with F(before) and F(after) of every candidate. */
static void evaluate(struct fg__grad *gr, const struct fg_sched_cycle *cy, size_t i, int64_t cpu,
                     struct fg__grad_memo *m, struct fg__grad_memo *scratch)
{
    const struct fg_sched_pod *p = cy->pod;
    const struct fg_sched_node *n = &cy->cluster->nodes[i];
    if (!m)
        m = scratch;
    m->before = fg__grad_frag(gr, cy->cluster, i);
    m->n = 0;
    struct fg__grad_change ch[FG_SCHED_MAX_GPUS];
    if (p->n_gpus == 1 && p->gpu_milli < FG_SCHED_MILLI) {
        /* F(after), and so the score, depends on the chosen GPU's free compute only, and the lowest
         * index wins a tie: the candidates are the first admitting GPU of each distinct free value. */
        int distinct[FG_SCHED_MAX_GPUS];
        for (int g = 0; g < n->n_gpus; g++) {
            const struct fg_sched_gpu *u = &n->gpus[g];
            if (u->free_milli < p->gpu_milli || !fg_sched_gpu_admits(u, p))
                continue;
            int d = 0;
            while (d < m->n && distinct[d] != u->free_milli)
                d++;
            if (d == m->n) {
                distinct[m->n] = u->free_milli;
                m->gpu[m->n++] = (int8_t)g;
            }
        }
        fg__grad_frag_after_each(gr, cy->cluster, i, cpu, p->gpu_milli, distinct, m->n, m->after);
        return;
    }
    int k = whole_changes(n, p, ch);
    m->gpu[0] = -1;
    m->after[0] = fg__grad_frag_after(gr, cy->cluster, i, cpu, ch, k);
    m->n = 1;
}

int64_t fg__sched_gradient_score(struct fg__grad *gr, const struct fg_sched_cycle *cy, const struct fg_sched_node *n,
                                 double bias, const struct fg__price_term *price, int *gpu)
{
    const struct fg_sched_pod *p = cy->pod;
    size_t i = (size_t)(n - cy->cluster->nodes);
    int64_t cpu = p->cpu_milli ? p->cpu_milli : 100;
    bool valid;
    struct fg__grad_memo scratch, *m = fg__grad_memo_get(gr, cy->cluster, i, p, cpu, &valid);
    if (!valid)
        evaluate(gr, cy, i, cpu, m, &scratch);
    if (!m)
        m = &scratch;
    double base = m->before + bias;
    int64_t best = -1;
    for (int c = 0; c < m->n; c++) {
        double b = price && m->gpu[c] >= 0
                       ? -price->weight * fg__prices_loss(price->prices, n->gpus[m->gpu[c]].free_milli, price->milli)
                       : 0;
        int64_t s = fg__sigmoid_score(&gr->sigmoid, base + b - m->after[c]);
        if (s > best) {
            best = s;
            if (m->gpu[c] >= 0)
                *gpu = m->gpu[c];
        }
    }
    return best;
}

static int64_t fgd_node_score(void *ctx, const struct fg_sched_node *n, int *gpu)
{
    struct fgd_ctx *c = ctx;
    return fg__sched_gradient_score(&c->fp->grad, c->cy, n, 0, NULL, gpu);
}

static int64_t fgd_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                         const struct fg_sched_node *n, int *gpu)
{
    struct fgd_ctx ctx = { (struct fgd_policy *)pol, cy };
    return fg__equiv_score(&ctx.fp->equiv, cy->cluster, n, gpu, fgd_node_score, &ctx);
}

static void fgd_observe(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy)
{
    struct fgd_policy *fp = (struct fgd_policy *)pol;
    fg__grad_fit_slots(&fp->grad, cy->cluster->n_slots);
    fg__equiv_next_cycle(&fp->equiv);
}

static void fgd_free(struct fg_sched_policy *pol)
{
    struct fgd_policy *fp = (struct fgd_policy *)pol;
    fg__grad_cleanup(&fp->grad);
    fg__equiv_cleanup(&fp->equiv);
    free(fp);
}

static const struct fg_sched_policy_ops fgd_ops = {
    "fgd", fgd_score, NULL, fgd_observe, fg_sched_policy_reserve_none, fg_sched_policy_reserve_none, fgd_free,
};

struct fg_sched_policy *fg__sched_fgd_new(const struct fg_sched_mix *mix)
{
    struct fgd_policy *fp = fg_calloc(1, sizeof *fp);
    fp->base.ops = &fgd_ops;
    fg__grad_init(&fp->grad, mix);
    fg__sigmoid_init(&fp->grad.sigmoid);
    fg__equiv_init(&fp->equiv);
    return &fp->base;
}
