/* Nodes coming, changing and going: stable and reused slots, versions unique across the cluster,
 * charges kept through updates (free going negative, GPUs out of sight keeping theirs), charges
 * dropped with a removed node, exact cluster-wide counts, and bad input refused with nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/policies/policy.h"
#include "scheduler/test/fixture.h"

static struct fg_sched_node_spec spec(const char *name, int cores, int n_gpus, const char *model)
{
    return (struct fg_sched_node_spec){ .name = name, .cpu_milli = cores * 1000LL, .mem_mib = 65536, .max_pods = 110,
                                        .model = model, .n_gpus = n_gpus, .gpu_mem_mib = 16384 };
}

static int add(struct fg_sched_cluster *c, const struct fg_sched_node_spec *s)
{
    int id = -1;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_add_node(c, s, &id, errmsg), FG_OK);
    fx_check_counts(c);
    return id;
}

static void update(struct fg_sched_cluster *c, int id, const struct fg_sched_node_spec *s)
{
    char errmsg[FG_ERRMSG_MAX];
    uint64_t version = c->nodes[id].version, uid = c->nodes[id].uid;
    uint32_t rank = c->nodes[id].rank;
    assert_int_equal(fg_sched_cluster_update_node(c, id, s, errmsg), FG_OK);
    assert_true(c->nodes[id].version > version);
    assert_int_equal(c->nodes[id].version, c->version);
    assert_int_equal(c->nodes[id].uid, uid);
    assert_int_equal(c->nodes[id].rank, rank);
    fx_check_counts(c);
}

static void slots_are_stable_and_reused(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_node_spec sa = spec("a", 8, 2, "T4"), sb = spec("b", 8, 4, "G2"), sc = spec("c", 8, 0, NULL);
    int a = add(&c, &sa), b = add(&c, &sb), cc = add(&c, &sc);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(cc, 2);
    assert_int_equal(fg_sched_cluster_find(&c, "b"), b);
    uint64_t b_uid = c.nodes[b].uid, before = c.version;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_remove_node(&c, b, errmsg), FG_OK);
    fx_check_counts(&c);
    assert_int_equal(c.n_nodes, 2);
    assert_int_equal(c.n_slots, 3);
    assert_int_equal(c.max_node_gpus, 2);  /* the 4-GPU node went */
    assert_int_equal(fg_sched_cluster_find(&c, "b"), -1);
    assert_false(fg_sched_cluster_live(&c, b));
    assert_true(c.nodes[b].removed && c.nodes[b].unschedulable);
    /* Twice, or ids that never were, are refused. */
    assert_int_equal(fg_sched_cluster_remove_node(&c, b, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "no node"));
    assert_int_equal(fg_sched_cluster_remove_node(&c, -1, errmsg), FG_E_INVAL);
    assert_int_equal(fg_sched_cluster_remove_node(&c, 99, errmsg), FG_E_INVAL);
    /* The next node takes the freed slot, with a uid and version no node had before. */
    struct fg_sched_node_spec sd = spec("d", 16, 1, "V100");
    int d = add(&c, &sd);
    assert_int_equal(d, b);
    assert_int_equal(c.n_slots, 3);
    assert_true(c.nodes[d].uid > before && c.nodes[d].uid != b_uid);
    assert_int_equal(c.nodes[d].rank, (uint32_t)d);
    assert_int_equal(fg_sched_cluster_find(&c, "d"), d);
    assert_int_equal(fg_sched_cluster_find(&c, "c"), cc);
    /* Versions are unique across the cluster: no two nodes share one, whatever their slots. */
    assert_true(c.nodes[a].version != c.nodes[cc].version && c.nodes[a].version != c.nodes[d].version &&
                c.nodes[cc].version != c.nodes[d].version);
    struct fg_sched_node_spec se = spec("e", 8, 2, "T4");
    assert_int_equal(add(&c, &se), 3);  /* no free slot left: a new one */
    fg_sched_cluster_cleanup(&c);
}

/* CPU and GPU charges through updates that shrink, grow, and change the model and GPU memory. */
static void updates_keep_charges(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_node_spec s = spec("a", 8, 4, "T4");
    int a = add(&c, &s);
    struct fg_sched_pod p = fx_pod("p", 4, 1, 500), q = fx_pod("q", 2, 1, 1000), cpu = fx_pod("cpu", 0, 0, 0);
    p.gpu_mem_mib = 4096;
    int g3 = 3, g0 = 0;
    fg_sched_reserve(&c, &p, a, &g3, 1);
    fg_sched_reserve(&c, &q, a, &g0, 1);
    assert_int_equal(c.gpu_milli_used, 1500);

    /* Below the charges: free CPU is negative and the node fits nothing, not even a 0-CPU pod; GPU 3
     * goes out of sight with p's charge, which no count includes any more. */
    s.cpu_milli = 4000;
    s.n_gpus = 2;
    update(&c, a, &s);
    assert_int_equal(c.nodes[a].free_cpu, -2000);
    assert_false(fx_fits(&c, &cpu, a));
    assert_int_equal(c.gpu_milli_total, 2000);
    assert_int_equal(c.gpu_milli_used, 1000);
    assert_int_equal(c.nodes[a].gpus[3].free_milli, 500);
    /* Releasing p frees its CPU and its GPU out of sight. */
    fg_sched_unreserve(&c, &p, a, &g3, 1);
    fx_check_counts(&c);
    assert_int_equal(c.nodes[a].free_cpu, 2000);
    assert_true(fx_fits(&c, &cpu, a));
    assert_int_equal(c.nodes[a].gpus[3].free_milli, 1000);
    assert_int_equal(c.nodes[a].gpus[3].tenants, 0);

    /* A charge on a GPU out of sight shows again when the count grows back. */
    s.cpu_milli = 8000;
    s.n_gpus = 4;
    update(&c, a, &s);
    fg_sched_reserve(&c, &p, a, &g3, 1);
    s.n_gpus = 2;
    update(&c, a, &s);
    s.n_gpus = 4;
    update(&c, a, &s);
    assert_int_equal(c.gpu_milli_used, 1500);
    assert_int_equal(c.nodes[a].gpus[3].free_milli, 500);

    /* A model change moves the node's free compute to the other model. */
    int t4 = c.nodes[a].model;
    s.model = "G2";
    update(&c, a, &s);
    assert_int_equal(c.model_free_milli[t4], 0);
    assert_int_equal(c.model_free_milli[fg_sched_cluster_model(&c, "G2")], 2500);

    /* GPU memory below p's 4096: GPU 3 admits no pod (not even one asking no memory) until p goes.
     * With GPUs 1 and 2 taken, it alone has room for a 400. */
    struct fg_sched_pod w = fx_pod("w", 0, 1, 1000), share = fx_pod("share", 0, 1, 400);
    int g1 = 1, g2 = 2, gpus[FG_SCHED_MAX_GPUS];
    fg_sched_reserve(&c, &w, a, &g1, 1);
    fg_sched_reserve(&c, &w, a, &g2, 1);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &share, a), FG_SCHED_SUCCESS);
    s.gpu_mem_mib = 2048;
    update(&c, a, &s);
    assert_true(c.nodes[a].tenant_modes & FG_SCHED_MEM_SHORT);
    assert_int_equal(c.nodes[a].gpus[3].free_mem_mib, 2048 - 4096);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &share, a), FG_SCHED_UNSCHEDULABLE);
    assert_int_equal(fg_sched_pick_gpus(&c.nodes[a], &share, gpus), 0);
    fg_sched_unreserve(&c, &p, a, &g3, 1);
    fx_check_counts(&c);
    assert_false(c.nodes[a].tenant_modes & FG_SCHED_MEM_SHORT);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &share, a), FG_SCHED_SUCCESS);
    assert_int_equal(fg_sched_pick_gpus(&c.nodes[a], &share, gpus), 1);
    assert_int_equal(gpus[0], 3);
    fg_sched_unreserve(&c, &w, a, &g1, 1);
    fg_sched_unreserve(&c, &w, a, &g2, 1);

    /* Taints, labels and cordon follow the spec. */
    struct fg_sched_taint hard = { "gpu", "busy", FG_SCHED_NO_SCHEDULE };
    struct fg_sched_kv zone = { "zone", "b" };
    s.taints = &hard;
    s.n_taints = 1;
    s.labels = &zone;
    s.n_labels = 1;
    s.unschedulable = true;
    update(&c, a, &s);
    assert_int_equal(c.hard_tainted_nodes, 1);
    assert_string_equal(c.nodes[a].labels[0].value, "b");
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &cpu, a), FG_SCHED_UNSCHEDULABLE);
    s.n_taints = 0;
    s.unschedulable = false;
    update(&c, a, &s);
    assert_int_equal(c.hard_tainted_nodes, 0);
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &cpu, a), FG_SCHED_SUCCESS);
    fg_sched_unreserve(&c, &q, a, &g0, 1);
    fx_check_counts(&c);
    assert_int_equal(c.gpu_milli_used, 0);
    fg_sched_cluster_cleanup(&c);
}

/* What a refused update or removal must leave as it was. */
struct snapshot {
    uint64_t version, node_version;
    int64_t free_cpu, gpu_milli_total;
    int n_gpus, n_models;
    size_t n_nodes;
};

static struct snapshot take(const struct fg_sched_cluster *c, int id)
{
    return (struct snapshot){ c->version, c->nodes[id].version, c->nodes[id].free_cpu, c->gpu_milli_total,
                              c->nodes[id].n_gpus, c->n_models, c->n_nodes };
}

static void refused(struct fg_sched_cluster *c, int id, const struct fg_sched_node_spec *s, const char *why)
{
    struct snapshot before = take(c, id);
    char errmsg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_sched_cluster_update_node(c, id, s, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, why));
    struct snapshot after = take(c, id);
    assert_memory_equal(&before, &after, sizeof before);
    fx_check_counts(c);
}

static void bad_updates_change_nothing(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_node_spec sa = spec("a", 8, 2, "T4"), sb = spec("b", 8, 2, "T4");
    int a = add(&c, &sa), b = add(&c, &sb);
    struct fg_sched_pod p = fx_pod("p", 2, 1, 300);
    int g = 1;
    fg_sched_reserve(&c, &p, a, &g, 1);
    struct fg_sched_node_spec s = sa;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_update_node(&c, 7, &s, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "no node with id 7"));
    assert_int_equal(fg_sched_cluster_update_node(&c, -1, &s, errmsg), FG_E_INVAL);
    s.name = "renamed";
    refused(&c, a, &s, "cannot rename");
    s.name = "b";
    refused(&c, a, &s, "cannot rename");
    s = sa;
    s.name = NULL;
    refused(&c, a, &s, "without a name");
    s = sa;
    s.cpu_milli = -1;
    refused(&c, a, &s, "negative");
    s = sa;
    s.gpu_mem_mib = -1;
    refused(&c, a, &s, "negative");
    s = sa;
    s.n_gpus = FG_SCHED_MAX_GPUS + 1;
    refused(&c, a, &s, "GPUs");
    s = sa;
    s.model = "";
    refused(&c, a, &s, "without a model");
    s = sa;
    struct fg_sched_kv bad_label = { "zone", NULL };
    s.labels = &bad_label;
    s.n_labels = 1;
    refused(&c, a, &s, "label");
    s = sa;
    s.labels = &bad_label;  /* never read: the count is refused first */
    s.n_labels = (size_t)UINT32_MAX + 1;
    refused(&c, a, &s, "labels or taints");
    s = sa;
    struct fg_sched_taint bad_taint = { NULL, "x", FG_SCHED_NO_SCHEDULE };
    s.taints = &bad_taint;
    s.n_taints = 1;
    refused(&c, a, &s, "taint");
    /* A full model table: a new model is refused, for an update as for an add. */
    for (int m = 1; m < FG_SCHED_MAX_MODELS; m++) {
        char name[16], model[16];
        snprintf(name, sizeof name, "m%d", m);
        snprintf(model, sizeof model, "M%d", m);
        struct fg_sched_node_spec sm = spec(name, 1, 1, model);
        add(&c, &sm);
    }
    assert_int_equal(c.n_models, FG_SCHED_MAX_MODELS);
    s = sa;
    s.model = "H100";
    refused(&c, a, &s, "GPU models");
    struct fg_sched_node_spec sn = spec("new", 8, 1, "H100");
    assert_int_equal(fg_sched_cluster_add_node(&c, &sn, NULL, errmsg), FG_E_INVAL);
    /* And a removed node cannot be updated. */
    assert_int_equal(fg_sched_cluster_remove_node(&c, b, errmsg), FG_OK);
    assert_int_equal(fg_sched_cluster_update_node(&c, b, &sb, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "no node"));
    fx_check_counts(&c);
    assert_int_equal(c.nodes[a].gpus[1].free_milli, 700);  /* the charge survived every refusal */
    fg_sched_cluster_cleanup(&c);
}

/* A removed node takes its charges with it: undoing a placement on it later changes nothing, not
 * even on the node that took its slot. */
static void removal_drops_the_charges(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_node_spec sa = spec("a", 8, 2, "T4"), sb = spec("b", 8, 1, "T4");
    int a = add(&c, &sa);
    add(&c, &sb);
    struct fg_sched_policy *pol;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new("bestfit", NULL, 1, &pol, errmsg), FG_OK);
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    struct fg_sched_pod p = fx_pod("p", 2, 2, 1000);  /* only a has two GPUs */
    struct fg_sched_placement pl;
    assert_int_equal(fg_sched_schedule(&fw, &c, &p, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(pl.node, a);
    assert_int_equal(c.gpu_milli_used, 2000);
    assert_int_equal(fg_sched_cluster_remove_node(&c, a, errmsg), FG_OK);
    fx_check_counts(&c);
    assert_int_equal(c.gpu_milli_used, 0);
    assert_int_equal(c.gpu_milli_total, 1000);
    struct fg_sched_node_spec sc = spec("c", 8, 2, "T4");
    int cc = add(&c, &sc);
    assert_int_equal(cc, a);
    fg_sched_framework_unreserve(&fw, &c, &p, &pl);
    assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
    fx_check_counts(&c);
    assert_int_equal(c.nodes[cc].free_cpu, 8000);
    assert_int_equal(c.nodes[cc].pods, 0);
    assert_int_equal(c.nodes[cc].gpus[0].free_milli, 1000);
    assert_int_equal(c.nodes[cc].idle_gpus, 2);
    /* The new node takes the pod again. */
    assert_int_equal(fg_sched_schedule(&fw, &c, &p, &pl, errmsg), FG_OK);
    assert_int_equal(pl.node, cc);
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(pol);
    fg_sched_cluster_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slots_are_stable_and_reused),
        cmocka_unit_test(updates_keep_charges),
        cmocka_unit_test(bad_updates_change_nothing),
        cmocka_unit_test(removal_drops_the_charges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
