/* Trace CSV reading (errors name the line) and the replay experiment on small and real traces. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/policies/policy.h"
#include "scheduler/replay/replay.h"

#define POD_HDR "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
#define NODE_HDR "sn,cpu_milli,memory_mib,gpu,model\n"

static void parses_both_pod_layouts(void **state)
{
    (void)state;
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_trace_parse_pods(&t, POD_HDR "p1,6000,12288,1,460,T4|P100,LS,Running,0,1,0\r\n"
                                                          "p2,0,0,0,500,T4,BE,Running,0,1,0\n\n"
                                                          "p3,1000,10,2,1200,,LS,Running,0,1,0\n",
                                               "x.csv", errmsg),
                     FG_OK);
    assert_int_equal(fg_sched_trace_parse_pods(&t, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np4,1,2,8,1000\n",
                                               "y.csv", errmsg),
                     FG_OK);
    assert_int_equal(t.n_pods, 4);
    assert_string_equal(t.pods[0].spec, "T4|P100");
    assert_int_equal(t.pods[0].n_models, 2);
    assert_string_equal(t.pods[0].models[1], "P100");
    assert_int_equal(t.pods[1].gpu_milli, 0);  /* CPU-only: milli and spec ignored */
    assert_string_equal(t.pods[1].spec, "");
    assert_int_equal(t.pods[2].gpu_milli, 1000);  /* capped */
    assert_int_equal(t.pods[3].n_gpus, 8);
    assert_string_equal(t.pods[3].spec, "");
    fg_sched_trace_cleanup(&t);
}

static void malformed_rows_name_their_line(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        { POD_HDR "p1,1,1,1,500,,LS,R,0,1,0\np2,1,1,1,500\n", "bad.csv:3: 5 cells, header has 11" },
        { POD_HDR "p1,1,1,1,500,,LS,R,0,1,0\np2,abc,1,1,500,,LS,R,0,1,0\n", "bad.csv:3: cpu_milli 'abc'" },
        { POD_HDR "p1,-5,1,1,500,,LS,R,0,1,0\n", "bad.csv:2: cpu_milli '-5'" },
        { POD_HDR "p1,5,1,1,-500,,LS,R,0,1,0\n", "bad.csv:2: gpu_milli '-500'" },
        { POD_HDR "p1,5,1,99,500,,LS,R,0,1,0\n", "bad.csv:2: num_gpu '99'" },
        { POD_HDR "p1,5,1,1,0,,LS,R,0,1,0\n", "bad.csv:2: 1 GPUs at 0 milli" },
        { POD_HDR ",5,1,1,10,,LS,R,0,1,0\n", "bad.csv:2: empty pod name" },
        { "name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n", "bad.csv:1: header lacks column 'gpu_milli'" },
        { "", "bad.csv: empty file" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fg_sched_trace t;
        fg_sched_trace_init(&t);
        char errmsg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_sched_trace_parse_pods(&t, cases[i].text, "bad.csv", errmsg), FG_E_PARSE);
        if (!strstr(errmsg, cases[i].want))
            fail_msg("case %zu: got '%s', want '%s'", i, errmsg, cases[i].want);
        assert_int_equal(t.n_pods, 0);  /* nothing appended */
        fg_sched_trace_cleanup(&t);
    }
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_trace_parse_nodes(&t, NODE_HDR "n1,64000,1024,2,T4\nn2,64000,1024,2,\n", "n.csv", errmsg),
                     FG_E_PARSE);
    assert_non_null(strstr(errmsg, "n.csv:3:"));
    assert_int_equal(fg_sched_trace_load_pods(&t, "/nonexistent/pods.csv", errmsg), FG_E_IO);
    fg_sched_trace_cleanup(&t);
}

static void load_tiny(struct fg_sched_trace *t)
{
    char errmsg[FG_ERRMSG_MAX];
    fg_sched_trace_init(t);
    assert_int_equal(fg_sched_trace_parse_nodes(t, NODE_HDR "n-b,32000,65536,4,T4\nn-a,32000,65536,2,V100\n"
                                                             "n-c,16000,32768,0,\nn-d,64000,65536,16,T4\n"
                                                             "n-e,64000,65536,16,T4\n",
                                                "nodes", errmsg),
                     FG_OK);
    char pods[8192] = POD_HDR;
    for (int i = 0; i < 60; i++) {
        char row[128];
        int milli = (int[]){ 1000, 500, 250, 810, 0, 1000 }[i % 6], gpus = i % 6 == 5 ? 2 : milli ? 1 : 0;
        snprintf(row, sizeof row, "p%02d,%d,1024,%d,%d,%s,LS,Running,0,1,0\n", i, 1000 + 500 * (i % 5), gpus, milli,
                 i % 7 == 0 ? "V100" : "");
        strcat(pods, row);
    }
    assert_int_equal(fg_sched_trace_parse_pods(t, pods, "pods", errmsg), FG_OK);
}

static enum fg_err run(const struct fg_sched_trace *t, const char *policy, uint64_t seed, double tune,
                       struct fg_sched_replay_result *out, char *errmsg)
{
    const struct fg_sched_replay_opts o = { .policy = policy, .seed = seed, .tune = tune };
    return fg_sched_replay_run(t, &o, out, errmsg);
}

static void replay_is_deterministic_and_consistent(void **state)
{
    (void)state;
    struct fg_sched_trace t;
    load_tiny(&t);
    char errmsg[FG_ERRMSG_MAX];
    for (size_t k = 0; fg_sched_policy_names[k]; k++) {
        const char *policy = fg_sched_policy_names[k];
        struct fg_sched_replay_result a, b;
        assert_int_equal(run(&t, policy, 42, 1.3, &a, errmsg), FG_OK);
        assert_int_equal(run(&t, policy, 42, 1.3, &b, errmsg), FG_OK);
        assert_true(a.unallocated_pct_at_100 == b.unallocated_pct_at_100);
        assert_int_equal(a.pods_failed, b.pods_failed);
        assert_true(a.pods_submitted > 60);  /* inflated to 1.3 × capacity */
        assert_true(a.pods_failed > 0 && a.pods_failed < a.pods_submitted);
        for (int x = 0; x <= FG_SCHED_CURVE_MAX; x++)
            if (!isnan(a.alloc_curve[x]))
                assert_true(a.alloc_curve[x] <= x + 1.5);  /* never more allocated than arrived */
        assert_true(a.unallocated_pct_at_100 >= 0 && a.unallocated_pct_at_100 <= 100);
    }
    struct fg_sched_replay_result r;
    assert_int_equal(run(&t, "nope", 42, 1.3, &r, errmsg), FG_E_INVAL);
    fg_sched_trace_cleanup(&t);
}

static void thinning_when_the_trace_is_too_big(void **state)
{
    (void)state;
    struct fg_sched_trace t;
    load_tiny(&t);
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_replay_result r;
    assert_int_equal(run(&t, "bestfit", 43, 0.5, &r, errmsg), FG_OK);
    assert_true(r.pods_submitted < 60);
    fg_sched_trace_cleanup(&t);
}

/* The optional gpu_memory_mib column of both files: per GPU, read for GPU pods only, 0 without it. */
static void gpu_memory_column(void **state)
{
    (void)state;
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_trace_parse_pods(&t, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_memory_mib\n"
                                                   "g,1000,10,1,250,4096\nc,1000,10,0,0,4096\n",
                                               "p.csv", errmsg),
                     FG_OK);
    assert_int_equal(fg_sched_trace_parse_nodes(&t, NODE_HDR "n0,8000,64,8,A100\n", "n.csv", errmsg), FG_OK);
    assert_int_equal(fg_sched_trace_parse_nodes(&t, "sn,cpu_milli,memory_mib,gpu,model,gpu_memory_mib\n"
                                                    "n1,8000,64,8,A100,40960\n",
                                                "n.csv", errmsg),
                     FG_OK);
    assert_int_equal(t.pods[0].gpu_mem_mib, 4096);
    assert_int_equal(t.pods[1].gpu_mem_mib, 0);   /* CPU-only */
    assert_int_equal(t.nodes[0].gpu_mem_mib, 0);
    assert_int_equal(t.nodes[1].gpu_mem_mib, 40960);
    struct fg_sched_pod req;
    fg_sched_trace_pod_request(&t.pods[0], &req);
    assert_int_equal(req.gpu_mem_mib, 4096);
    assert_int_equal(fg_sched_trace_parse_pods(&t, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_memory_mib\n"
                                                   "x,1,1,1,250,-1\n", "bad.csv", errmsg),
                     FG_E_PARSE);
    assert_non_null(strstr(errmsg, "bad.csv:2: gpu_memory_mib '-1'"));
    fg_sched_trace_cleanup(&t);
}

struct seen {
    char rows[8][64];
    int n;
};

static void note(void *ud, const struct fg_sched_trace_pod *tp, const struct fg_sched_cluster *c,
                 const struct fg_sched_placement *pl)
{
    struct seen *s = ud;
    assert_true(s->n < 8);
    if (pl->code == FG_SCHED_SUCCESS)
        snprintf(s->rows[s->n++], sizeof s->rows[0], "%s %s %d", tp->name, c->nodes[pl->node].name, pl->gpus[0]);
    else
        snprintf(s->rows[s->n++], sizeof s->rows[0], "%s unplaced", tp->name);
}

/* In order: every pod once, as listed; among equal nodes the first by name wins; GPU memory
 * counts; each outcome reaches on_pod in submission order. */
static void in_order_placements(void **state)
{
    (void)state;
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_trace_parse_nodes(&t, "sn,cpu_milli,memory_mib,gpu,model,gpu_memory_mib\n"
                                                    "node-b,8000,65536,2,A100,1000\nnode-a,8000,65536,2,A100,1000\n",
                                                "n.csv", errmsg),
                     FG_OK);
    assert_int_equal(fg_sched_trace_parse_pods(&t, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_memory_mib\n"
                                                   "p3,1000,1024,1,500,800\n"    /* first: node-a, GPU 0 */
                                                   "p1,1000,1024,1,500,300\n"    /* GPU 0's 200 MiB left are short */
                                                   "p4,1000,1024,1,100,2000\n"   /* more than any GPU has */
                                                   "p2,1000,1024,1,1000,0\n",    /* a whole GPU: node-b */
                                               "p.csv", errmsg),
                     FG_OK);
    struct seen s = { .n = 0 };
    struct fg_sched_replay_opts o = { .policy = "bestfit", .seed = 7, .tune = 5, .in_order = true, .on_pod = note,
                                      .ud = &s };
    struct fg_sched_replay_result r;
    assert_int_equal(fg_sched_replay_run(&t, &o, &r, errmsg), FG_OK);
    assert_int_equal(r.pods_submitted, 4);   /* tune is not read: no copies */
    assert_int_equal(r.pods_failed, 1);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.rows[0], "p3 node-a 0");
    assert_string_equal(s.rows[1], "p1 node-a 1");
    assert_string_equal(s.rows[2], "p4 unplaced");
    assert_string_equal(s.rows[3], "p2 node-b 0");
    fg_sched_trace_cleanup(&t);
}

/* The real `default` trace, which the build decompresses from data/alibaba-gpu-v2023 into FG_DATA_DIR:
 * its counts, and BestFit near its published mean. Data that cannot be read fails the test. */
static void real_default_trace(void **state)
{
    (void)state;
    const char *data = getenv("FG_DATA_DIR");
    if (!data)
        fail_msg("FG_DATA_DIR is not set: run this test through ctest, which points it at <build>/data");
    char nodes[1024], pods[1024];
    snprintf(nodes, sizeof nodes, "%s/alibaba-gpu-v2023/openb_node_list_gpu_node.csv", data);
    snprintf(pods, sizeof pods, "%s/alibaba-gpu-v2023/openb_pod_list_default.csv", data);
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    char errmsg[FG_ERRMSG_MAX];
    if (fg_sched_trace_load_nodes(&t, nodes, errmsg) || fg_sched_trace_load_pods(&t, pods, errmsg)) {
        fg_sched_trace_cleanup(&t);
        fail_msg("%s (the fg_data build target decompresses data/ into %s)", errmsg, data);
    }
    assert_int_equal(t.n_nodes, 1213);
    assert_int_equal(t.n_pods, 8152);
    struct fg_sched_mix mix = { 0 };
    fg_sched_replay_mix(&t, &mix);
    assert_int_equal(mix.n, 35);  /* docs/benchmarks.md: default gives 35 of 91 groups */
    fg_sched_mix_cleanup(&mix);
    struct fg_sched_replay_result r;
    assert_int_equal(run(&t, "bestfit", 42, 1.3, &r, errmsg), FG_OK);
    assert_true(fabs(r.unallocated_pct_at_100 - 7.14) < 1.0);
    fg_sched_trace_cleanup(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_both_pod_layouts),
        cmocka_unit_test(malformed_rows_name_their_line),
        cmocka_unit_test(replay_is_deterministic_and_consistent),
        cmocka_unit_test(thinning_when_the_trace_is_too_big),
        cmocka_unit_test(gpu_memory_column),
        cmocka_unit_test(in_order_placements),
        cmocka_unit_test(real_default_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
