/*
 * e2e_sched_admission_gate — fracgpu's scheduler binds a node's tenants of different GPUs one
 * admission apart, and tenants that would get the same reply together.
 *
 * The kubelet asks the device plugin for a tenant's GPU without naming the pod, so the plugin can
 * only be sure of its answer when every tenant of the node that the kubelet has yet to admit would get
 * the same one (scheduler/adapter/bind.c). Here the GPU farm (gpufarm.h) has one node of two GPUs and
 * its kubelets admit nothing until the test says so (status.startTime, as a kubelet writes it). With
 * the real operator:
 *   1. a whole-GPU pod is bound at once (nothing else waits on the node) and left unadmitted;
 *   2. a pod of a fraction — which cannot share the first pod's GPU — is placed but not bound for
 *      3 s, nor is a second pod of the same workload placed after it: the node has a tenant of another
 *      reply awaiting admission;
 *   3. once the first pod is admitted both are bound, within 5 s, on the other GPU;
 *   4. a third pod of that workload, whose reply is theirs, is bound at once although neither was
 *      admitted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "e2e/tests/gpufarm.h"
#include "e2e/tests/gpuwork.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/operator_proc.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define NS "gate"

static const struct fg_gpufarm_opts farm = {
    .nodes = 1, .gpus = 2, .cpu_milli = 32000, .mem_mib = 131072, .max_pods = 110,
    .product = "NVIDIA-A100-SXM4-80GB", .gpu_mem_mib = 80000,
};

static struct fg_harness h;
static struct fg_operator_proc op;
static struct fg_gpuwork whole, part;

static void create(const struct fg_gpuwork *w, const char *name)
{
    json_object *pod = fg_gpuwork_pod(w, name, 500, 1024);
    char *path = fg_kube_path(&fg_kube_pods, NS, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    if (fg_kube_create(h.client, path, pod, NULL, &st) != FG_OK)
        fail_msg("create %s: %s", name, st.message ? st.message : "?");
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(pod);
}

/* The GPU pod `name` is bound to ("" while unbound). */
static void gpu_of(const char *name, char *uuid, size_t size)
{
    char *path = fg_kube_path(&fg_kube_pods, NS, name, NULL, NULL);
    json_object *pod = NULL;
    uuid[0] = '\0';
    if (fg_kube_get(h.client, path, &pod, NULL) == FG_OK && fg_json_get_str(pod, "spec", "nodeName", NULL))
        snprintf(uuid, size, "%s", fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_UUID, NULL) ?: "?");
    json_object_put(pod);
    free(path);
}

/* Waits up to ms for pod `name` to be bound; its GPU in uuid ("" when it was not). */
static void await_bound(const char *name, unsigned ms, char *uuid, size_t size)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)ms * 1000000u;
    do {
        gpu_of(name, uuid, size);
        if (!uuid[0])
            nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    } while (!uuid[0] && fg_clock_mono_ns() < deadline);
}

/* What pod `name`'s kubelet writes once it admits it. */
static void admit(const char *name)
{
    char now[FG_TIME_MAX], body[128];
    fg_time_format(fg_clock_wall_ms(), now);
    snprintf(body, sizeof body, "{\"status\":{\"startTime\":\"%s\"}}", now);
    char *path = fg_kube_path(&fg_kube_pods, NS, name, "status", NULL);
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE, body, NULL, NULL), FG_OK);
    free(path);
}

static void test_gate(void **state)
{
    (void)state;
    char a[96], b[96], c[96], d[96];
    create(&whole, "whole-0");
    await_bound("whole-0", 20000, a, sizeof a);
    assert_true(a[0]);

    create(&part, "part-0");
    create(&part, "part-1");
    await_bound("part-0", 3000, b, sizeof b);
    gpu_of("part-1", c, sizeof c);
    if (b[0] || c[0])
        fail_msg("a fraction pod was bound (part-0 on '%s', part-1 on '%s') while whole-0, on %s, awaited admission",
                 b, c, a);

    admit("whole-0");
    uint64_t t0 = fg_clock_mono_ns();
    await_bound("part-0", 5000, b, sizeof b);
    await_bound("part-1", 5000, c, sizeof c);
    printf("part-0 and part-1 bound %.2f s after whole-0 was admitted, on %s and %s (whole-0 on %s)\n",
           (double)(fg_clock_mono_ns() - t0) / 1e9, b, c, a);
    assert_true(b[0] && c[0]);
    assert_string_equal(b, c);
    assert_string_not_equal(a, b);

    create(&part, "part-2");
    t0 = fg_clock_mono_ns();
    await_bound("part-2", 5000, d, sizeof d);
    printf("part-2, of the reply part-0 and part-1 await, bound after %.2f s\n", (double)(fg_clock_mono_ns() - t0) / 1e9);
    assert_string_equal(d, b);
}

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, &(struct fg_harness_opts){ 0 }, msg) || fg_gpufarm_fill(h.client, &farm, msg) ||
        fg_harness_namespace(&h, NS) || fg_gpuwork_create(h.client, NS, "whole", 0, 0, &whole, msg) ||
        fg_gpuwork_create(h.client, NS, "part", 250, 8192, &part, msg) ||
        fg_operator_proc_start(&h, &op, NULL, 120, msg) || fg_gpuwork_wait_admitted(h.client, &whole, 30000, msg) ||
        fg_gpuwork_wait_admitted(h.client, &part, 30000, msg)) {
        fprintf(stderr, "setup: %s\n", msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int status = fg_operator_proc_stop(&op, false);
    fg_harness_stop(&h);
    return status;
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_gate) };
    return cmocka_run_group_tests(tests, setup, teardown);
}
