/*
 * e2e_sched_replay_agree — the live scheduler and `fracgpu replay` agree: the same pods in the same
 * order on the same nodes get the same GPUs.
 *
 * A trace of 8 nodes of 8 GPUs and 120 pods — fractions of compute and memory from eight workloads,
 * memory-heavy ones among them, whole GPUs, CPU from 0.5 to 6 cores — is written to CSV files and
 * replayed by `fracgpu replay --policy fracgpu --in-order --placements`. The same cluster is then
 * made live: the GPU farm (gpufarm.h) with a capacity pod holding every GPU and its kubelets admitting
 * every pod bound, the real operator with
 * its default placement policy (fracgpu) and its webhook, and the eight workloads as automated
 * Deployments with their fractions. The pods are created through the API one at a time in trace
 * order, each asking for a whole nvidia.com/gpu as a user writes it, and each Binding is awaited
 * before the next pod is created; the binding's node and fracgpu.io/gpu-index must be the replay's
 * node and GPU index for every pod.
 *
 * What makes the two the same cluster (the only translations):
 *   - each node's CPU and memory in nodes.csv are its allocatable less what its eight capacity pods
 *     ask for themselves (the holder's 10m and 32 MiB each), which the live scheduler charges;
 *   - each GPU's memory is what the capacity pods report for tenants (gpu-memory-mib); a whole-GPU
 *     pod asks for all of it, as the live scheduler reads the webhook's memory-mib "whole";
 *   - the replay's GPU index is the live bin slot, which is what fracgpu.io/gpu-index names;
 *   - ties: the live scheduler ranks nodes in the order it first listed them, by name here (the API
 *     lists by name), which is the order --in-order ranks them in;
 *   - the trace's pods share no GPU sharing mode with the live ones (none vs timeslice) but, all
 *     being of one mode, no filter or score tells the two apart.
 * Every pod fits (the replay places them all, checked first): a pod that waits for capacity is tried
 * again live, and the online placement policy would count it twice. Where they disagree, the test
 * reports the first pod that differs with both placements (later ones follow from it) and fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/tests/gpufarm.h"
#include "e2e/tests/gpuwork.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/operator_proc.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define NS "agree"
#define PODS 120
#define GPU_MEM_MIB 80000

static const struct fg_gpufarm_opts farm = {
    .nodes = 8, .gpus = 8, .cpu_milli = 64000, .mem_mib = 262144, .max_pods = 110,
    .product = "NVIDIA-A100-SXM4-80GB", .gpu_mem_mib = GPU_MEM_MIB,
};

/* The workloads: compute milli (0: whole GPUs) and memory MiB. */
static const struct {
    const char *name;
    int milli;
    int64_t mem_mib;
} shapes[] = {
    { "tiny", 100, 8000 },  { "quarter", 250, 20000 }, { "quarter-lean", 250, 10000 }, { "third", 330, 16000 },
    { "half", 500, 40000 }, { "big", 700, 30000 },     { "memory-heavy", 200, 60000 }, { "whole", 0, 0 },
};
#define SHAPES (sizeof shapes / sizeof *shapes)

struct pod {
    char name[32];
    unsigned shape;
    int64_t cpu_milli, mem_mib;
    char want_node[32];     /* the replay's */
    int want_gpu;
};

static struct {
    char dir[64];
    struct pod pods[PODS];
} t;

/* The trace: a fixed pseudo-random draw, the same every run. */
static void make_trace(void)
{
    static const int64_t cpus[] = { 500, 1000, 2000, 4000, 6000 }, mems[] = { 2048, 8192, 32768 };
    uint32_t x = 20240611;
    for (int i = 0; i < PODS; i++) {
        x = x * 1664525u + 1013904223u;
        struct pod *p = &t.pods[i];
        snprintf(p->name, sizeof p->name, "pod-%03d", i);
        p->shape = (x >> 8) % SHAPES;
        if (shapes[p->shape].milli == 0 && (x >> 20) % 3)   /* whole GPUs a third as often as the others */
            p->shape = (x >> 4) % (SHAPES - 1);
        p->cpu_milli = cpus[(x >> 12) % 5];
        p->mem_mib = mems[(x >> 16) % 3];
    }
}

static void write_file(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", t.dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void write_trace(void)
{
    struct fg_buf b = FG_BUF_INIT;
    fg_buf_put_str(&b, "sn,cpu_milli,memory_mib,gpu,model,gpu_memory_mib\n");
    for (unsigned i = 0; i < farm.nodes; i++) {
        char name[32];
        fg_gpufarm_node_name(i, name, sizeof name);
        assert_int_equal(fg_buf_printf(&b, "%s,%lld,%lld,%u,%s,%d\n", name, (long long)fg_gpufarm_tenant_cpu(&farm),
                                       (long long)fg_gpufarm_tenant_mem(&farm), farm.gpus, farm.product, GPU_MEM_MIB),
                         FG_OK);
    }
    write_file("nodes.csv", fg_buf_str(&b));
    fg_buf_reset(&b);
    fg_buf_put_str(&b, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_memory_mib\n");
    for (int i = 0; i < PODS; i++) {
        const struct pod *p = &t.pods[i];
        int milli = shapes[p->shape].milli;
        assert_int_equal(fg_buf_printf(&b, "%s,%lld,%lld,1,%d,%lld\n", p->name, (long long)p->cpu_milli,
                                       (long long)p->mem_mib, milli ? milli : 1000,
                                       (long long)(milli ? shapes[p->shape].mem_mib : GPU_MEM_MIB)),
                         FG_OK);
    }
    write_file("pods.csv", fg_buf_str(&b));
    fg_buf_cleanup(&b);
}

/* Runs the replay and reads its placements into t.pods. */
static void replay(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s/fracgpu replay --nodes %s/nodes.csv --pods %s/pods.csv --policy fracgpu --seed 1 --in-order "
             "--placements %s/placements.csv > %s/replay.out 2>&1",
             getenv("FG_BIN_DIR"), t.dir, t.dir, t.dir, t.dir);
    assert_int_equal(system(cmd), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/placements.csv", t.dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "pod,outcome,node,gpus\n");
    for (int i = 0; i < PODS; i++) {
        assert_non_null(fgets(line, sizeof line, f));
        char name[32], outcome[16], node[32];
        int gpu = -1;
        if (sscanf(line, "%31[^,],%15[^,],%31[^,],%d", name, outcome, node, &gpu) != 4 || strcmp(outcome, "placed"))
            fail_msg("the replay did not place every pod (the trace must fit): %s", line);
        assert_string_equal(name, t.pods[i].name);
        snprintf(t.pods[i].want_node, sizeof t.pods[i].want_node, "%s", node);
        t.pods[i].want_gpu = gpu;
    }
    fclose(f);
}

/* The pod once it is bound: its node and GPU index; on timeout the test fails with the pod as last
 * seen. */
static void await_binding(struct fg_harness *h, const struct fg_operator_proc *op, const char *name, char *node,
                          size_t size, int *gpu)
{
    char *path = fg_kube_path(&fg_kube_pods, NS, name, NULL, NULL);
    uint64_t deadline = fg_clock_mono_ns() + 20 * FG_NS_PER_S;
    node[0] = '\0';
    json_object *pod = NULL;
    while (!node[0] && fg_clock_mono_ns() < deadline) {
        json_object_put(pod);
        pod = NULL;
        if (fg_kube_get(h->client, path, &pod, NULL) == FG_OK && fg_json_get_str(pod, "spec", "nodeName", NULL)) {
            snprintf(node, size, "%s", fg_json_get_str(pod, "spec", "nodeName", NULL));
            const char *index = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_INDEX, NULL);
            *gpu = index ? atoi(index) : -1;
        }
        if (!node[0])
            nanosleep(&(struct timespec){ 0, 2 * 1000 * 1000 }, NULL);
    }
    if (!node[0]) {
        struct fg_buf metrics = FG_BUF_INIT;
        fg_harness_http(NULL, op->listen_port, "GET", "/metrics", &metrics);
        fprintf(stderr, "%s as last seen: %s\nthe operator's metrics:\n%s\n", name,
                json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN), fg_buf_str(&metrics));
        fg_buf_cleanup(&metrics);
        fail_msg("%s was not bound within 20 s (operator log: %s)", name, op->log);
    }
    json_object_put(pod);
    free(path);
}

static void live_scheduler_agrees_with_replay(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    snprintf(t.dir, sizeof t.dir, "/tmp/fg-agree-XXXXXX");
    assert_non_null(mkdtemp(t.dir));
    make_trace();
    write_trace();
    uint64_t t0 = fg_clock_mono_ns();
    replay();

    char msg[FG_ERRMSG_MAX] = "";
    struct fg_harness h;
    struct fg_harness_opts ho = { .history = 100000 };
    struct fg_gpufarm_admitter kubelets;
    if (fg_harness_start(&h, &ho, msg) || fg_gpufarm_fill(h.client, &farm, msg) || fg_harness_namespace(&h, NS) ||
        fg_gpufarm_admit_start(&kubelets, h.loop, msg))
        fail_msg("cluster: %s", msg);
    struct fg_gpuwork works[SHAPES];
    for (size_t s = 0; s < SHAPES; s++)
        if (fg_gpuwork_create(h.client, NS, shapes[s].name, shapes[s].milli, shapes[s].mem_mib, &works[s], msg))
            fail_msg("workload %s: %s", shapes[s].name, msg);
    struct fg_operator_proc op;
    if (fg_operator_proc_start(&h, &op, NULL, 120, msg))
        fail_msg("%s", msg);
    for (size_t s = 0; s < SHAPES; s++)
        if (fg_gpuwork_wait_admitted(h.client, &works[s], 30000, msg))
            fail_msg("%s (operator log: %s)", msg, op.log);
    uint64_t t1 = fg_clock_mono_ns();

    int differ = 0, first = -1;
    char got_node[32];
    int got_gpu = -1;
    for (int i = 0; i < PODS; i++) {
        struct pod *p = &t.pods[i];
        json_object *pod = fg_gpuwork_pod(&works[p->shape], p->name, p->cpu_milli, p->mem_mib);
        char *path = fg_kube_path(&fg_kube_pods, NS, NULL, NULL, NULL);
        struct fg_kube_status st = { 0 };
        if (fg_kube_create(h.client, path, pod, NULL, &st) != FG_OK)
            fail_msg("create %s: %s", p->name, st.message ? st.message : "?");
        fg_kube_status_cleanup(&st);
        free(path);
        json_object_put(pod);
        char node[32];
        int gpu = -1;
        await_binding(&h, &op, p->name, node, sizeof node, &gpu);
        if (strcmp(node, p->want_node) || gpu != p->want_gpu) {
            if (first < 0) {
                first = i;
                snprintf(got_node, sizeof got_node, "%s", node);
                got_gpu = gpu;
            }
            differ++;
        }
    }
    printf("replay and live: %d of %d pods placed alike; cluster and operator %.1f s, %d pods created and "
           "bound one by one in %.1f s\n",
           PODS - differ, PODS, (double)(t1 - t0) / 1e9, PODS, (double)(fg_clock_mono_ns() - t1) / 1e9);
    if (first >= 0) {
        const struct pod *p = &t.pods[first];
        fail_msg("%d pods placed otherwise; the first, %s (#%d, %s: %d milli, %lld MiB of GPU memory, %lldm CPU, "
                 "%lld MiB): replay %s GPU %d, live %s GPU %d (trace in %s, operator log %s)",
                 differ, p->name, first, shapes[p->shape].name, shapes[p->shape].milli,
                 (long long)shapes[p->shape].mem_mib, (long long)p->cpu_milli, (long long)p->mem_mib, p->want_node,
                 p->want_gpu, got_node, got_gpu, t.dir, op.log);
    }
    assert_int_equal(fg_operator_proc_stop(&op, false), 0);
    fg_gpufarm_admit_stop(&kubelets);
    assert_int_equal(kubelets.failed, 0);
    fg_harness_stop(&h);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", t.dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(live_scheduler_agrees_with_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
