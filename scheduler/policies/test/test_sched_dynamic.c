/* Every placement policy on a cluster whose nodes come, change and go while pods are placed and
 * released: the cluster grows from nothing to 500 nodes, then 100 are cordoned, 100 updated (CPU
 * and GPU memory shrunk or grown, even below what is charged; GPU count, model, labels and taints
 * changed), 100 removed with their pods and 100 added (into the freed slots). At every decision a
 * removed or cordoned node is never chosen. After every step of 25 node changes the cluster's
 * counts and every node's charges equal those recomputed from the pods still placed, and the
 * placement policy's scores (and GPU choices) for a set of probe pods equal, node by node, those of
 * the same placement policy built from scratch now: created on the cluster as it is, shown the same
 * pods in the same order and told of the pods reserved on it. `random` draws its scores, so it is
 * held to the first two checks only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/core/rng.h"
#include "scheduler/policies/mix.h"
#include "scheduler/policies/policy.h"
#include "scheduler/test/fixture.h"

#define GROW_TO 500
#define CHANGED 100
#define STEP 25                     /* node changes between two checks */
#define PODS_PER_STEP 80
#define MAX_SLOTS (GROW_TO + CHANGED)
#define MAX_PODS 4096

/* Model indices are those of this table: the first three nodes bring the models in this order. */
static const char *const models[] = { "T4", "G2", "V100" };
static const char *const t4_only[] = { "T4" };
static const char *const g2_or_v100[] = { "G2", "V100" };
static const struct fg_sched_kv zone_a = { "zone", "a" };
static const struct fg_sched_toleration dedicated_ok = { "dedicated", NULL, true, 0 };

/* What the test keeps of a node slot: the spec it was last given, with storage for its strings. */
struct node_def {
    char name[16];
    struct fg_sched_kv label;
    struct fg_sched_taint taint;
    struct fg_sched_node_spec spec;
};

struct placed {
    struct fg_sched_pod pod;
    struct fg_sched_placement pl;
};

struct run {
    const char *policy;
    struct fg_sched_rng rng;
    struct fg_sched_cluster c;
    struct fg_sched_mix mix;
    struct fg_sched_policy *pol;
    struct fg_sched_framework fw;
    struct node_def defs[MAX_SLOTS];
    int names;                      /* nodes named so far */
    struct placed live[MAX_PODS];   /* reserved pods, some on nodes removed since */
    size_t n_live;
    struct fg_sched_pod seen[MAX_PODS];  /* every pod the placement policy observed, in order */
    size_t n_seen;
    int decisions, compared;
    int shrunk, hidden;             /* updates that left free CPU negative, or charges on GPUs out of sight */
};

static struct fg_sched_pod random_pod(struct fg_sched_rng *rng)
{
    static const struct { int cores, n, milli; } shapes[] = {
        { 4, 1, 500 }, { 2, 1, 250 }, { 8, 1, 1000 }, { 16, 2, 1000 }, { 6, 0, 0 },
        { 3, 1, 750 }, { 1, 1, 100 }, { 32, 4, 1000 }, { 0, 1, 300 }, { 2, 0, 0 },
    };
    size_t s = fg_sched_rng_below(rng, sizeof shapes / sizeof shapes[0]);
    struct fg_sched_pod p = fx_pod("p", shapes[s].cores, shapes[s].n, shapes[s].milli);
    switch (fg_sched_rng_below(rng, 12)) {
    case 0:
        p.models = t4_only;
        p.n_models = 1;
        break;
    case 1:
        p.models = g2_or_v100;
        p.n_models = 2;
        break;
    case 2:
        p.node_selector = &zone_a;
        p.n_node_selector = 1;
        break;
    case 3:
        p.tolerations = &dedicated_ok;
        p.n_tolerations = 1;
        break;
    case 4:
        p.gpu_mem_mib = p.n_gpus ? 8192 : 0;
        break;
    case 5:
        p.sharing = p.n_gpus && p.gpu_milli < FG_SCHED_MILLI ? FG_SCHED_SHARE_MPS : p.sharing;
        break;
    case 6:
        if (p.n_gpus) {
            p.isolation = FG_SCHED_ISO_DEDICATED;
            p.owner = "team-a";
        }
        break;
    }
    return p;
}

/* A new spec for slot def (name kept): any size, any of the three models, sometimes tainted. The
 * first three nodes of a run have GPUs of the three models in order. */
static void random_spec(struct fg_sched_rng *rng, struct node_def *d, int nth)
{
    static const int gpus[] = { 0, 1, 2, 4, 8, 8 };
    d->label = (struct fg_sched_kv){ "zone", fg_sched_rng_below(rng, 2) ? "a" : "b" };
    enum fg_sched_effect effect = fg_sched_rng_below(rng, 2) ? FG_SCHED_NO_SCHEDULE : FG_SCHED_PREFER_NO_SCHEDULE;
    d->taint = (struct fg_sched_taint){ "dedicated", "yes", effect };
    int n_gpus = nth < 3 ? 8 : gpus[fg_sched_rng_below(rng, 6)];
    d->spec = (struct fg_sched_node_spec){
        .name = d->name,
        .cpu_milli = 8000 * (1 + (int64_t)fg_sched_rng_below(rng, 12)),
        .mem_mib = 65536 * (1 + (int64_t)fg_sched_rng_below(rng, 8)),
        .max_pods = 8 + (int)fg_sched_rng_below(rng, 100),
        .model = n_gpus ? models[nth < 3 ? nth : (int)fg_sched_rng_below(rng, 3)] : NULL,
        .n_gpus = n_gpus,
        .gpu_mem_mib = fg_sched_rng_below(rng, 2) ? 16384 : 32768,
        .labels = &d->label,
        .n_labels = 1,
        .taints = &d->taint,
        .n_taints = fg_sched_rng_below(rng, 5) == 0,
    };
}

static void add_node(struct run *r)
{
    struct node_def d;
    snprintf(d.name, sizeof d.name, "n%04d", r->names);
    random_spec(&r->rng, &d, r->names++);
    int id;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_add_node(&r->c, &d.spec, &id, errmsg), FG_OK);
    assert_true(id < MAX_SLOTS);
    r->defs[id] = d;
    r->defs[id].spec.name = r->defs[id].name;
    r->defs[id].spec.labels = &r->defs[id].label;
    r->defs[id].spec.taints = &r->defs[id].taint;
}

static void update_node(struct run *r, int id)
{
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_update_node(&r->c, id, &r->defs[id].spec, errmsg), FG_OK);
    const struct fg_sched_node *n = &r->c.nodes[id];
    r->shrunk += n->free_cpu < 0;
    for (int g = n->n_gpus; g < FG_SCHED_MAX_GPUS; g++)
        if (n->gpus[g].tenants) {
            r->hidden++;
            break;
        }
}

/* A random live node, cordoned ones included or not. */
static int pick_node(struct run *r, bool cordoned_too)
{
    for (;;) {
        int id = (int)fg_sched_rng_below(&r->rng, r->c.n_slots);
        if (fg_sched_cluster_live(&r->c, id) && (cordoned_too || !r->c.nodes[id].unschedulable))
            return id;
    }
}

static void observed(struct run *r, const struct fg_sched_pod *p)
{
    assert_true(r->n_seen < MAX_PODS);
    r->seen[r->n_seen++] = *p;
}

/* Places PODS_PER_STEP pods, releasing a random placed one about every fourth turn. */
static void place(struct run *r)
{
    char errmsg[FG_ERRMSG_MAX];
    for (int k = 0; k < PODS_PER_STEP; k++) {
        if (r->n_live && fg_sched_rng_below(&r->rng, 4) == 0) {
            size_t j = fg_sched_rng_below(&r->rng, r->n_live);
            fg_sched_framework_unreserve(&r->fw, &r->c, &r->live[j].pod, &r->live[j].pl);
            r->live[j] = r->live[--r->n_live];
            continue;
        }
        struct placed x = { random_pod(&r->rng), { 0 } };
        assert_int_equal(fg_sched_schedule(&r->fw, &r->c, &x.pod, &x.pl, errmsg), FG_OK);
        observed(r, &x.pod);
        r->decisions++;
        if (x.pl.code != FG_SCHED_SUCCESS)
            continue;
        assert_true(fg_sched_cluster_live(&r->c, x.pl.node));   /* never a removed node */
        assert_false(r->c.nodes[x.pl.node].unschedulable);      /* nor a cordoned one */
        assert_true(r->n_live < MAX_PODS);
        r->live[r->n_live++] = x;
    }
}

static bool still_there(const struct fg_sched_cluster *c, const struct fg_sched_placement *pl)
{
    return fg_sched_cluster_live(c, pl->node) && c->nodes[pl->node].uid == pl->node_uid;
}

/* Every node's free amounts are its capacity less the pods placed on it and not released. */
static void check_charges(const struct run *r)
{
    const struct fg_sched_cluster *c = &r->c;
    for (size_t i = 0; i < c->n_slots; i++) {
        const struct fg_sched_node *n = &c->nodes[i];
        if (n->removed)
            continue;
        int64_t cpu = n->cpu_milli, mem = n->mem_mib, gpu_mem[FG_SCHED_MAX_GPUS];
        int pods = 0, milli[FG_SCHED_MAX_GPUS], tenants[FG_SCHED_MAX_GPUS] = { 0 };
        for (int g = 0; g < FG_SCHED_MAX_GPUS; g++) {
            milli[g] = FG_SCHED_MILLI;
            gpu_mem[g] = n->gpus[g].mem_mib;
        }
        for (size_t j = 0; j < r->n_live; j++) {
            const struct placed *x = &r->live[j];
            if ((size_t)x->pl.node != i || !still_there(c, &x->pl))
                continue;
            cpu -= x->pod.cpu_milli;
            mem -= x->pod.mem_mib;
            pods++;
            for (int k = 0; k < x->pl.n_gpus; k++) {
                milli[x->pl.gpus[k]] -= x->pod.gpu_milli;
                gpu_mem[x->pl.gpus[k]] -= x->pod.gpu_mem_mib;
                tenants[x->pl.gpus[k]]++;
            }
        }
        assert_int_equal(n->free_cpu, cpu);
        assert_int_equal(n->free_mem, mem);
        assert_int_equal(n->pods, pods);
        for (int g = 0; g < FG_SCHED_MAX_GPUS; g++) {  /* GPUs out of sight included */
            assert_int_equal(n->gpus[g].free_milli, milli[g]);
            assert_int_equal(n->gpus[g].free_mem_mib, gpu_mem[g]);
            assert_int_equal(n->gpus[g].tenants, tenants[g]);
        }
    }
}

/* The placement policy of r, built now: shown every pod r's was shown, told of the pods placed. */
static struct fg_sched_policy *from_scratch(const struct run *r)
{
    struct fg_sched_policy *pol;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new(r->policy, &r->mix, 1, &pol, errmsg), FG_OK);
    for (size_t j = 0; j < r->n_seen; j++) {
        struct fg_sched_cycle cy = { &r->c, &r->seen[j], fg_sched_pod_model_mask(&r->c, &r->seen[j]), NULL };
        pol->ops->observe(pol, &cy);
    }
    for (size_t j = 0; j < r->n_live; j++)
        if (still_there(&r->c, &r->live[j].pl))
            pol->ops->reserve(pol, &r->c, &r->live[j].pod, &r->live[j].pl);
    return pol;
}

static void check_scores(struct run *r)
{
    static const struct { int cores, n, milli; } probes[] = {
        { 2, 0, 0 }, { 4, 1, 250 }, { 4, 1, 500 }, { 1, 1, 700 }, { 8, 1, 1000 }, { 16, 2, 1000 }, { 8, 4, 1000 },
    };
    struct fg_sched_policy *fresh = from_scratch(r);
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
        struct fg_sched_pod p = fx_pod("probe", probes[k].cores, probes[k].n, probes[k].milli);
        if (k == 5) {
            p.models = t4_only;
            p.n_models = 1;
        }
        struct fg_sched_cycle cy = { &r->c, &p, fg_sched_pod_model_mask(&r->c, &p), NULL };
        r->pol->ops->observe(r->pol, &cy);
        fresh->ops->observe(fresh, &cy);
        observed(r, &p);
        for (size_t i = 0; i < r->c.n_slots; i++) {
            if (!fg_sched_cluster_live(&r->c, (int)i) || !fx_fits(&r->c, &p, (int)i))
                continue;
            int g1 = -1, g2 = -1;
            int64_t s1 = r->pol->ops->score(r->pol, &cy, &r->c.nodes[i], &g1);
            int64_t s2 = fresh->ops->score(fresh, &cy, &r->c.nodes[i], &g2);
            if (s1 != s2 || g1 != g2)
                fail_msg("%s: node %s, probe %zu: score %lld GPU %d, from scratch %lld GPU %d", r->policy,
                         r->c.nodes[i].name, k, (long long)s1, g1, (long long)s2, g2);
            r->compared++;
        }
    }
    fg_sched_policy_free(fresh);
}

static void check(struct run *r)
{
    fx_check_counts(&r->c);
    check_charges(r);
    if (strcmp(r->policy, "random"))
        check_scores(r);
}

/* The whole trace's mix of random_pod's shapes, masks resolved against the models table above. */
static void build_mix(struct fg_sched_mix *mix)
{
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 99);
    struct fg_sched_mix_counter mc;
    fg_sched_mix_counter_init(&mc);
    for (int i = 0; i < 2000; i++) {
        struct fg_sched_pod p = random_pod(&rng);
        uint32_t mask = p.n_models ? 0 : FG_SCHED_MODELS_ANY;
        for (size_t k = 0; k < p.n_models; k++)
            for (int m = 0; m < 3; m++)
                mask |= strcmp(p.models[k], models[m]) ? 0 : 1u << m;
        struct fg_sched_shape s = { p.cpu_milli, p.gpu_milli, p.n_gpus, p.n_gpus ? mask : 0, "" };
        fg_sched_mix_counter_add(&mc, &s);
    }
    fg_sched_mix_build(&mc, mix);
    fg_sched_mix_counter_cleanup(&mc);
}

/* The scenario of the file's comment for one placement policy. */
static void come_change_and_go(const char *policy)
{
    struct run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->policy = policy;
    fg_sched_rng_seed(&r->rng, 2025);
    fg_sched_cluster_init(&r->c);
    build_mix(&r->mix);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new(policy, &r->mix, 1, &r->pol, errmsg), FG_OK);  /* before any node */
    fg_sched_framework_init(&r->fw, &fg_sched_profile_default, r->pol);
    while (r->c.n_nodes < GROW_TO) {
        for (int k = 0; k < STEP; k++)
            add_node(r);
        place(r);
        check(r);
    }
    for (int done = 0; done < CHANGED; done += STEP) {  /* cordon */
        for (int k = 0; k < STEP; k++) {
            int id = pick_node(r, false);
            r->defs[id].spec.unschedulable = true;
            update_node(r, id);
        }
        place(r);
        check(r);
    }
    for (int done = 0; done < CHANGED; done += STEP) {  /* update (which may uncordon) */
        for (int k = 0; k < STEP; k++) {
            int id = pick_node(r, true);
            random_spec(&r->rng, &r->defs[id], 3);
            update_node(r, id);
        }
        place(r);
        check(r);
    }
    for (int done = 0; done < CHANGED; done += STEP) {  /* remove, pods and all */
        for (int k = 0; k < STEP; k++)
            assert_int_equal(fg_sched_cluster_remove_node(&r->c, pick_node(r, true), errmsg), FG_OK);
        place(r);
        check(r);
    }
    for (int done = 0; done < CHANGED; done += STEP) {  /* add, into the freed slots */
        for (int k = 0; k < STEP; k++)
            add_node(r);
        place(r);
        check(r);
    }
    assert_int_equal(r->c.n_nodes, GROW_TO);
    assert_int_equal(r->c.n_slots, GROW_TO);
    assert_true(r->decisions > 2000);
    assert_true(r->shrunk > 3 && r->hidden > 3);  /* the updates did cut below the charges */
    if (strcmp(policy, "random"))
        assert_true(r->compared > 15000);  /* 18,800-22,500 (node, probe) pairs now */
    fg_sched_framework_cleanup(&r->fw);
    fg_sched_policy_free(r->pol);
    fg_sched_mix_cleanup(&r->mix);
    fg_sched_cluster_cleanup(&r->c);
    free(r);
}

#define SCENARIO(test, policy)                                                                              \
    static void test(void **state)                                                                          \
    {                                                                                                       \
        (void)state;                                                                                        \
        come_change_and_go(policy);                                                                         \
    }

SCENARIO(random_follows_the_nodes, "random")
SCENARIO(dotprod_follows_the_nodes, "dotprod")
SCENARIO(clustering_follows_the_nodes, "clustering")
SCENARIO(packing_follows_the_nodes, "packing")
SCENARIO(bestfit_follows_the_nodes, "bestfit")
SCENARIO(fgd_follows_the_nodes, "fgd")
SCENARIO(fracgpu_follows_the_nodes, "fracgpu")
SCENARIO(fracgpu_offline_follows_the_nodes, "fracgpu-offline")

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_follows_the_nodes),     cmocka_unit_test(dotprod_follows_the_nodes),
        cmocka_unit_test(clustering_follows_the_nodes), cmocka_unit_test(packing_follows_the_nodes),
        cmocka_unit_test(bestfit_follows_the_nodes),    cmocka_unit_test(fgd_follows_the_nodes),
        cmocka_unit_test(fracgpu_follows_the_nodes),    cmocka_unit_test(fracgpu_offline_follows_the_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
