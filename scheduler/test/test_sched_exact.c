/* Exactness of the score caches on a long random sequence: every decision of the cached `fgd`
 * (interned node states, node-equivalence per cycle, per-node memo across cycles, filter summaries,
 * the mix's types grouped per model with counts per node, gradient.h)
 * equals a brute-force FGD decision recomputed from scratch with mix.h's fg_sched_frag. Run once with
 * few pod shapes (each keeps its own memo way) and once with hundreds (several shapes share each way
 * and evict one another). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/mix.h"
#include "scheduler/policy.h"
#include "scheduler/rng.h"
#include "scheduler/test/fixture.h"

#define N_NODES 24

static int64_t sigmoid_score(double delta)
{
    return (int64_t)(100.0 / (1.0 + exp(-delta / 1000.0)));
}

/* FGD's score of node i for p from scratch; *gpu the lowest-index GPU reaching it (fractional pods). */
static int64_t reference_score(const struct fg_sched_mix *mix, const struct fg_sched_cluster *c,
                               const struct fg_sched_pod *p, int i, int *gpu)
{
    const struct fg_sched_node *n = &c->nodes[i];
    int64_t cpu = p->cpu_milli ? p->cpu_milli : 100;
    int free[FG_SCHED_MAX_GPUS];
    for (int g = 0; g < n->n_gpus; g++)
        free[g] = n->gpus[g].free_milli;
    double before = fg_sched_frag(mix, n->model, n->free_cpu, free, n->n_gpus);
    int64_t best = -1;
    *gpu = -1;
    if (p->n_gpus == 1 && p->gpu_milli < FG_SCHED_MILLI) {
        for (int g = 0; g < n->n_gpus; g++) {
            if (free[g] < p->gpu_milli || !fg_sched_gpu_admits(&n->gpus[g], p))
                continue;
            free[g] -= p->gpu_milli;
            int64_t s = sigmoid_score(before - fg_sched_frag(mix, n->model, n->free_cpu - cpu, free, n->n_gpus));
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

/* Schedules `steps` pods of 7 × variants shapes (variant v adds 10·v CPU milli), checks each decision
 * against reference_score and that nodes met in equal states at least min_equal times. */
static void check_against_brute_force(int variants, int steps, int min_equal)
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
     * that gradient.h's groups have several members and nodes short of CPU count only some. */
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
    assert_int_equal(fg_sched_policy_new("fgd", &c, &mix, 1, &pol, errmsg), FG_OK);
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, pol);
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 2024);
    struct {
        struct fg_sched_pod pod;
        struct fg_sched_placement pl;
    } live[256];
    int n_live = 0, decided = 0, equal_states = 0;
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
        int want_node = -1, want_gpu = -1;
        int64_t want = -1;
        for (int i = 0; i < N_NODES; i++) {
            if (!fx_fits(&c, &p, i))
                continue;
            for (int j = 0; j < i; j++)
                equal_states += c.nodes[j].state == c.nodes[i].state;
            int g;
            int64_t sc = reference_score(&mix, &c, &p, i, &g);
            if (sc > want || (sc == want && c.nodes[i].rank < c.nodes[want_node].rank)) {
                want = sc;
                want_node = i;
                want_gpu = g;
            }
        }
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
}

static void cached_fgd_decides_as_brute_force(void **state)
{
    (void)state;
    check_against_brute_force(1, 3000, 3000);
}

/* 7 × 45 = 315 shapes, several per memo way: a shape must miss on an entry another shape left in
 * its way, never read it. */
static void many_shapes_decide_as_brute_force(void **state)
{
    (void)state;
    check_against_brute_force(45, 6000, 1500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cached_fgd_decides_as_brute_force),
        cmocka_unit_test(many_shapes_decide_as_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
