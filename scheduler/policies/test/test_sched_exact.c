/* Exactness of the score caches on a long random sequence: every decision of the cached `fgd`
 * (interned node states, node-equivalence per cycle, per-node memo across cycles, filter summaries,
 * the mix's types grouped per model with counts per node, gradient_int.h)
 * equals a brute-force FGD decision recomputed from scratch with mix.h's fg_sched_frag. Run once with
 * few pod shapes (each keeps its own memo way) and once with hundreds (several shapes share each way
 * and evict one another). `fracgpu-offline` is checked the same way against its score recomputed
 * from the cluster: stranded GPU, scarcity (some pods restricted to T4) and the price term, with
 * the prices of the mix's sharing sizes worked out by hand (500 and 250 milli pack a GPU exactly:
 * each is worth its size) rather than by the policy's LP. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/core/rng.h"
#include "scheduler/policies/mix.h"
#include "scheduler/policies/policy.h"
#include "scheduler/test/fixture.h"

#define N_NODES 24

/* fracgpu's weights, as its essay states them. */
#define W_STRAND 2.0
#define W_SCARCE 2.0
#define W_PRICE 8.0

static int64_t sigmoid_score(double delta)
{
    return (int64_t)(100.0 / (1.0 + exp(-delta / 1000.0)));
}

/* What fracgpu knows besides the cluster and the mix: the GPU demand seen, all of it and the part
 * restricted to a subset of models (split evenly over the subset). */
struct seen {
    double demand, restricted[FG_SCHED_MAX_MODELS];
};

/* The extra terms of fracgpu's D for pod p (model mask `mask`) on node i, from scratch: the node's
 * (stranded GPU, scarcity) in *node_terms, the price term per GPU in gpu_term[]. NULL seen: FGD. */
struct terms {
    const struct seen *seen;
    uint32_t mask;
    bool no_prices;                 /* leave the price term out */
    double node_terms, gpu_term[FG_SCHED_MAX_GPUS];
};

static double stranded(double rho, int64_t free_cpu, int idle)
{
    double usable = rho > 0 ? (double)free_cpu / rho : idle;
    return usable < idle ? idle - usable : 0;
}

/* The value of a gap of f milli under the mix's prices: the sharing sizes 500 and 250 fill a GPU
 * exactly in any combination, so the LP prices each at its size and f is worth its whole 250s. */
static double gap_value(int f)
{
    return 250.0 * (f / 250);
}

/* What a pod of s milli put in a gap of f loses, less the least it loses in any gap (prices_int.h). */
static double price_loss(int f, int s)
{
    double least = INFINITY;
    for (int g = s; g <= FG_SCHED_MILLI; g++)
        least = fmin(least, gap_value(g) - gap_value(g - s));
    return gap_value(f) - gap_value(f - s) - least;
}

static void reference_terms(const struct fg_sched_mix *mix, const struct fg_sched_cluster *c,
                            const struct fg_sched_pod *p, int i, struct terms *t)
{
    const struct fg_sched_node *n = &c->nodes[i];
    t->node_terms = 0;
    memset(t->gpu_term, 0, sizeof t->gpu_term);
    if (!t->seen || p->n_gpus == 0)
        return;
    uint32_t all = (1u << c->n_models) - 1;
    double free_model = 0, free_total = 0, cpu = 0, gpu = 0;
    int idle = 0;
    for (size_t j = 0; j < c->n_slots; j++)
        for (int g = 0; g < c->nodes[j].n_gpus; g++) {
            int f = c->nodes[j].gpus[g].free_milli;
            free_total += f;
            free_model += c->nodes[j].model == n->model ? f : 0;
        }
    for (int g = 0; g < n->n_gpus; g++)
        idle += n->gpus[g].free_milli;
    for (size_t k = 0; k < mix->n; k++)
        if (mix->types[k].n_gpus) {
            cpu += mix->types[k].p * (double)mix->types[k].cpu_milli;
            gpu += mix->types[k].p * mix->types[k].n_gpus * mix->types[k].gpu_milli;
        }
    double rho = gpu > 0 ? cpu / gpu : 0;
    bool choice = __builtin_popcount(t->mask & all) > 1;
    if (choice && t->seen->demand > 0) {
        double share = (free_model + 1) / (free_total + 1);
        t->node_terms -= W_SCARCE * p->n_gpus * p->gpu_milli * (t->seen->restricted[n->model] / t->seen->demand / share);
    }
    double s0 = stranded(rho, n->free_cpu, idle);
    double s1 = stranded(rho, n->free_cpu - p->cpu_milli, idle - p->n_gpus * p->gpu_milli);
    t->node_terms -= W_STRAND * (s1 - s0);
    if (t->no_prices || p->n_gpus != 1 || p->gpu_milli >= FG_SCHED_MILLI)
        return;
    for (int g = 0; g < n->n_gpus; g++)
        if (n->gpus[g].free_milli >= p->gpu_milli)
            t->gpu_term[g] = -W_PRICE * price_loss(n->gpus[g].free_milli, p->gpu_milli);
}

/* The policy's score of node i for p from scratch; *gpu the lowest-index GPU reaching it (fractional
 * pods). */
static int64_t reference_score(const struct fg_sched_mix *mix, const struct fg_sched_cluster *c,
                               const struct fg_sched_pod *p, int i, struct terms *t, int *gpu)
{
    const struct fg_sched_node *n = &c->nodes[i];
    int64_t cpu = p->cpu_milli ? p->cpu_milli : 100;
    int free[FG_SCHED_MAX_GPUS];
    for (int g = 0; g < n->n_gpus; g++)
        free[g] = n->gpus[g].free_milli;
    reference_terms(mix, c, p, i, t);
    double before = fg_sched_frag(mix, n->model, n->free_cpu, free, n->n_gpus) + t->node_terms;
    int64_t best = -1;
    *gpu = -1;
    if (p->n_gpus == 1 && p->gpu_milli < FG_SCHED_MILLI) {
        for (int g = 0; g < n->n_gpus; g++) {
            if (free[g] < p->gpu_milli || !fg_sched_gpu_admits(&n->gpus[g], p))
                continue;
            free[g] -= p->gpu_milli;
            double after = fg_sched_frag(mix, n->model, n->free_cpu - cpu, free, n->n_gpus);
            int64_t s = sigmoid_score(before + t->gpu_term[g] - after);
            free[g] += p->gpu_milli;
            if (s > best) {
                best = s;
                *gpu = g;
            }
        }
        return best;
    }
    int gpus[FG_SCHED_MAX_GPUS];
    int k = fg_sched_pick_gpus(n, p, gpus);
    for (int j = 0; j < k; j++)
        free[gpus[j]] -= p->gpu_milli;
    return sigmoid_score(before - fg_sched_frag(mix, n->model, n->free_cpu - cpu, free, n->n_gpus));
}

/* Schedules `steps` pods of 7 × variants shapes (variant v adds 10·v CPU milli) with `policy` (fgd or
 * fracgpu-offline; for fracgpu every fifth pod may run on T4 only), checks each decision against
 * reference_score and that nodes met in equal states at least min_equal times. Returns how many
 * decisions the price term changed (node or GPU). */
static int check_against_brute_force(const char *policy, int variants, int steps, int min_equal)
{
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    for (int i = 0; i < N_NODES; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%02d", i);
        fx_node(&c, name, 32 + 16 * (i % 2), 256, i % 3 ? 8 : 4, i % 4 ? "G2" : "T4");
    }
    /* Few shapes: many nodes end up in identical states, and shapes repeat across cycles. */
    static const struct { int cores, n, milli; } shapes[] = {
        { 4, 1, 500 }, { 2, 1, 250 }, { 8, 1, 1000 }, { 16, 2, 1000 }, { 6, 0, 0 }, { 3, 1, 750 }, { 1, 1, 100 },
    };
    /* Types sharing a GPU size with different CPU requests and models (T4 is model 0, G2 model 1), so
     * that gradient_int.h's groups have several members and nodes short of CPU count only some. */
    struct fg_sched_mix_type t[] = { { 4000, 500, 1, FG_SCHED_MODELS_ANY, 0.35 },
                                     { 8000, 1000, 1, FG_SCHED_MODELS_ANY, 0.25 },
                                     { 16000, 1000, 2, FG_SCHED_MODELS_ANY, 0.15 },
                                     { 2000, 250, 1, FG_SCHED_MODELS_ANY, 0.1 },
                                     { 24000, 500, 1, 1u << 0, 0.05 },
                                     { 12000, 1000, 1, 1u << 1, 0.05 },
                                     { 100, 0, 0, FG_SCHED_MODELS_ANY, 0.05 } };
    struct fg_sched_mix mix = { t, 7 };
    struct fg_sched_policy *pol;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new(policy, &mix, 1, &pol, errmsg), FG_OK);
    bool fracgpu = strcmp(policy, "fgd") != 0;
    static const char *const t4[] = { "T4" };
    struct seen seen = { 0, { 0 } };
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 2024);
    struct {
        struct fg_sched_pod pod;
        struct fg_sched_placement pl;
    } live[256];
    int n_live = 0, decided = 0, equal_states = 0, price_decided = 0;
    for (int step = 0; step < steps; step++) {
        /* Churn: release a random live pod a third of the time, or always when the table is full. */
        if (n_live == 256 || (n_live && fg_sched_rng_below(&rng, 3) == 0)) {
            int k = (int)fg_sched_rng_below(&rng, (uint64_t)n_live);
            fg_sched_framework_unreserve(&fw, &c, &live[k].pod, &live[k].pl);
            live[k] = live[--n_live];
            continue;
        }
        size_t s = fg_sched_rng_below(&rng, sizeof shapes / sizeof shapes[0]);
        struct fg_sched_pod p = fx_pod("p", shapes[s].cores, shapes[s].n, shapes[s].milli);
        if (variants > 1)
            p.cpu_milli += 10 * (int64_t)fg_sched_rng_below(&rng, (uint64_t)variants);
        if (fracgpu && fg_sched_rng_below(&rng, 5) == 0) {
            p.models = t4;
            p.n_models = 1;
        }
        uint32_t mask = fg_sched_pod_model_mask(&c, &p), all = (1u << c.n_models) - 1;
        if (fracgpu) {  /* what fracgpu's observe counts before scoring */
            double d = (double)p.n_gpus * p.gpu_milli;
            seen.demand += d;
            if (p.n_gpus && (mask & all) && (mask & all) != all)
                for (int m = 0; m < c.n_models; m++)
                    if (mask & all & (1u << m))
                        seen.restricted[m] += d / __builtin_popcount(mask & all);
        }
        /* The decision, and the one without the price term (to count where it mattered). */
        struct terms with = { fracgpu ? &seen : NULL, mask, false, 0, { 0 } }, without = with;
        without.no_prices = true;
        int want_node = -1, want_gpu = -1, plain_node = -1, plain_gpu = -1, feasible = 0;
        int64_t want = -1, plain = -1;
        for (int i = 0; i < N_NODES; i++) {
            if (!fx_fits(&c, &p, i))
                continue;
            feasible++;
            for (int j = 0; j < i; j++)
                equal_states += c.nodes[j].state == c.nodes[i].state;
            int g;
            int64_t sc = reference_score(&mix, &c, &p, i, &with, &g);
            if (sc > want || (sc == want && c.nodes[i].rank < c.nodes[want_node].rank)) {
                want = sc;
                want_node = i;
                want_gpu = g;
            }
            sc = reference_score(&mix, &c, &p, i, &without, &g);
            if (sc > plain || (sc == plain && c.nodes[i].rank < c.nodes[plain_node].rank)) {
                plain = sc;
                plain_node = i;
                plain_gpu = g;
            }
        }
        price_decided += feasible > 1 && (want_node != plain_node || want_gpu != plain_gpu);
        struct fg_sched_placement pl;
        assert_int_equal(fg_sched_schedule(&fw, &c, &p, &pl, errmsg), FG_OK);
        if (want_node < 0) {
            assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
            continue;
        }
        assert_int_equal(pl.code, FG_SCHED_SUCCESS);
        assert_int_equal(pl.node, want_node);
        if (p.n_gpus == 1 && p.gpu_milli < FG_SCHED_MILLI && pl.feasible > 1)  /* one node: not scored */
            assert_int_equal(pl.gpus[0], want_gpu);
        decided++;
        live[n_live].pod = p;
        live[n_live++].pl = pl;
    }
    assert_true(decided > steps / 3);
    assert_true(equal_states > min_equal);  /* the equivalence cache was exercised, not bypassed */
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(pol);
    fg_sched_cluster_cleanup(&c);
    return price_decided;
}

static void cached_fgd_decides_as_brute_force(void **state)
{
    (void)state;
    assert_int_equal(check_against_brute_force("fgd", 1, 3000, 3000), 0);
}

/* 7 × 45 = 315 shapes, several per memo way: a shape must miss on an entry another shape left in
 * its way, never read it. */
static void many_shapes_decide_as_brute_force(void **state)
{
    (void)state;
    assert_int_equal(check_against_brute_force("fgd", 45, 6000, 1500), 0);
}

/* fracgpu's terms on top of the same caches; the price term must have changed a fair share of the
 * decisions for the check to mean anything. */
static void fracgpu_decides_as_brute_force(void **state)
{
    (void)state;
    assert_true(check_against_brute_force("fracgpu-offline", 1, 3000, 1500) > 100);  /* 149 of 1,373 now */
    assert_true(check_against_brute_force("fracgpu-offline", 45, 6000, 1500) > 200);  /* 328 of 2,553 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cached_fgd_decides_as_brute_force),
        cmocka_unit_test(many_shapes_decide_as_brute_force),
        cmocka_unit_test(fracgpu_decides_as_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
