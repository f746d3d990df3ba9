/*
 * kubectl fracgpu's pure part on a small cluster written here: node gpu-a has two GPUs, one held by
 * capacity pod cap-0 with two tenants (one finished pod that named it too), the other held by
 * nobody (capacity pod cap-9 is not scheduled yet); node cpu-1 has no GPU. The inventory, the gpus / workloads / explain views as tables and
 * as JSON and YAML, and what each says of a placed pod, a waiting one and one fracgpu does not manage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "kubectl-fracgpu/inventory.h"
#include "kubectl-fracgpu/views.h"

#define TENANT(name, milli, mib, index, phase, wl)                                                                 \
    "{\"metadata\":{\"namespace\":\"team\",\"name\":\"" name "\",\"annotations\":{\"fracgpu.io/capacity-pod\":\"cap-0\","    \
    "\"fracgpu.io/compute-milli\":\"" milli "\",\"fracgpu.io/memory-mib\":\"" mib "\",\"fracgpu.io/gpu-index\":\"" index   \
    "\",\"fracgpu.io/workload\":\"" wl "\",\"fracgpu.io/policy\":\"batch\",\"fracgpu.io/update-mode\":\"Auto\"}},"           \
    "\"spec\":{\"nodeName\":\"gpu-a\",\"schedulerName\":\"fracgpu-scheduler\"},\"status\":{\"phase\":\"" phase "\"}}"

static const char *const nodes_text =
    "[{\"metadata\":{\"name\":\"gpu-a\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100\"}},"
    "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"2\",\"cpu\":\"8\"}}},"
    "{\"metadata\":{\"name\":\"cpu-1\"},\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}]";

static const char *const pods_text =
    "[{\"metadata\":{\"namespace\":\"fracgpu-system\",\"name\":\"cap-0\",\"labels\":{\"fracgpu.io/role\":\"capacity\"},"
    "\"annotations\":{\"fracgpu.io/gpu-uuid\":\"GPU-aaaa\",\"fracgpu.io/gpu-memory-mib\":\"80000\"}},"
    "\"spec\":{\"nodeName\":\"gpu-a\"},\"status\":{\"phase\":\"Running\"}},"
    "{\"metadata\":{\"namespace\":\"fracgpu-system\",\"name\":\"cap-9\",\"labels\":{\"fracgpu.io/role\":\"capacity\"}},"
    "\"spec\":{},\"status\":{\"phase\":\"Pending\"}}," TENANT("llm-1", "300", "10240", "1", "Running", "deployment-llm")
    "," TENANT("job-1", "200", "20480", "1", "Running", "job-batch") "," TENANT("old-1", "500", "10240", "1", "Succeeded", "job-batch")
    ",{\"metadata\":{\"namespace\":\"team\",\"name\":\"waits\",\"annotations\":{\"fracgpu.io/compute-milli\":\"600\","
    "\"fracgpu.io/memory-mib\":\"whole\"}},\"spec\":{\"schedulerName\":\"fracgpu-scheduler\"},\"status\":{\"phase\":"
    "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"WaitingForCapacity\","
    "\"message\":\"no GPU has room; 1 new GPU on the way\"}]}},"
    "{\"metadata\":{\"namespace\":\"team\",\"name\":\"plain\"},\"spec\":{\"nodeName\":\"gpu-a\",\"containers\":[{\"name\":\"c\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}]";

static const char *const workloads_text =
    "[{\"metadata\":{\"namespace\":\"team\",\"name\":\"deployment-llm\"},\"status\":{\"target\":\"Deployment/llm\","
    "\"policy\":\"real-time\",\"pods\":3,\"gpusBefore\":\"3\",\"gpusAfter\":\"0.9\",\"gpusSaved\":\"2.1\","
    "\"allocation\":{\"compute\":\"300m\",\"memory\":\"10Gi\"},\"usage\":{\"samples\":500,\"computeP95Milli\":250,"
    "\"memoryPeakMiB\":9000},\"recommendation\":{\"summary\":\"300m/10Gi\",\"reason\":\"Unchanged\"}}},"
    "{\"metadata\":{\"namespace\":\"other\",\"name\":\"job-x\"},\"status\":{\"target\":\"Job/x\",\"policy\":\"batch\","
    "\"pods\":1,\"gpusBefore\":\"1\",\"gpusAfter\":\"1\",\"gpusSaved\":\"0\"}}]";

static json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    return o;
}

/* A view's arguments. */
struct call {
    FILE *f;
    json_object *nodes, *pods, *workloads, *pod;
    struct fgk_view_opts o;
};

static void call_gpus(struct call *c)
{
    fgk_view_gpus(c->nodes, c->pods, c->workloads, &c->o, c->f);
}

static void call_workloads(struct call *c)
{
    fgk_view_workloads(c->workloads, &c->o, c->f);
}

static void call_explain(struct call *c)
{
    fgk_view_explain(c->pod, c->nodes, c->pods, c->workloads, &c->o, c->f);
}

/* What a view prints, into a string the caller frees. */
static char *printed(void (*fn)(struct call *), struct call *c)
{
    char *text = NULL;
    size_t len = 0;
    c->f = open_memstream(&text, &len);
    assert_non_null(c->f);
    fn(c);
    fclose(c->f);
    return text;
}

static void has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("expected \"%s\" in:\n%s", want, text);
}

static void test_inventory(void **state)
{
    (void)state;
    json_object *nodes = parse(nodes_text), *pods = parse(pods_text), *workloads = parse(workloads_text);
    struct fgk_inventory inv;
    fgk_inventory_build(nodes, pods, workloads, "fracgpu-system", &inv);
    assert_int_equal(inv.n, 2);   /* gpu-a's two; cpu-1 has none */
    const struct fgk_gpu *g = &inv.gpus[0];
    assert_string_equal(g->node, "gpu-a");
    assert_string_equal(g->cap, "cap-0");
    assert_string_equal(g->uuid, "GPU-aaaa");
    assert_string_equal(g->model, "NVIDIA-H100");
    assert_string_equal(g->sharing, "timeslice");
    assert_int_equal(g->index, 1);
    assert_int_equal(g->n_tenants, 2);   /* the Succeeded one counts nothing */
    assert_int_equal(g->milli, 500);
    assert_int_equal(g->mem_alloc_mib, 30720);
    assert_int_equal(g->mem_mib, 80000);
    assert_int_equal(g->measured, 1);    /* job-batch has no GPUWorkload with usage */
    assert_int_equal(g->used_milli, 250);
    assert_int_equal(g->used_mem_mib, 9000);
    assert_null(inv.gpus[1].cap);        /* the GPU nobody holds */
    assert_int_equal(inv.gpus[1].n_tenants, 0);
    json_object *j = fgk_inventory_json(&inv);
    json_object *items = fg_json_get(j, "items", NULL);
    assert_int_equal(json_object_array_length(items), 2);
    int64_t milli = 0;
    assert_true(fg_json_get_int64(json_object_array_get_idx(items, 0), &milli, "allocated", "computeMilli", NULL));
    assert_int_equal(milli, 500);
    assert_null(fg_json_get(json_object_array_get_idx(items, 1), "measured", NULL));
    json_object_put(j);
    fgk_inventory_cleanup(&inv);
    json_object_put(nodes);
    json_object_put(pods);
    json_object_put(workloads);
}

static void test_views(void **state)
{
    (void)state;
    struct call c = { .nodes = parse(nodes_text), .pods = parse(pods_text), .workloads = parse(workloads_text),
                           .o = { .cap_ns = "fracgpu-system" } };
    char *t = printed(call_gpus, &c);
    has(t, "NODE    GPU   MODEL         CAPACITY-POD   SHARING     TENANTS   COMPUTE      MEMORY\n");
    has(t, "gpu-a   1     NVIDIA-H100   cap-0          timeslice   2         500m/1000m   30Gi/80000Mi\n");
    has(t, "gpu-a   -     NVIDIA-H100   -              -           0         -            -\n");
    free(t);
    c.o.output = "wide";
    t = printed(call_gpus, &c);
    has(t, "GPU-aaaa   250m               9000Mi            team/llm-1,team/job-1\n");
    free(t);
    c.o.output = "yaml";
    t = printed(call_gpus, &c);
    has(t, "kind: List\n");
    has(t, "  capacityPod: cap-0\n");
    has(t, "    name: llm-1\n");
    has(t, "  measured: null\n");
    free(t);

    c.o.output = NULL;
    c.o.all_namespaces = true;
    t = printed(call_workloads, &c);
    has(t, "NAMESPACE   NAME             TARGET           POLICY      PODS   ALLOCATION   USAGE         RECOMMENDED   "
           "GPUS-BEFORE   GPUS-AFTER   GPUS-SAVED\n");
    has(t, "team        deployment-llm   Deployment/llm   real-time   3      300m/10Gi    250m/9000Mi   300m/10Gi     "
           "3             0.9          2.1\n");
    has(t, "other       job-x            Job/x            batch       1      -            -             -             "
           "1             1            0\n");
    has(t, "GPUs before 4.0, after 1.9: 2.1 saved (52%)\n");
    free(t);
    c.o.output = "json";
    t = printed(call_workloads, &c);
    has(t, "\"kind\": \"List\"");
    has(t, "\"name\": \"deployment-llm\"");
    free(t);
    json_object_put(c.nodes);
    json_object_put(c.pods);
    json_object_put(c.workloads);
}

static json_object *pod_named(json_object *pods, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(pods); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(pods, i), "metadata", "name", NULL), name))
            return json_object_array_get_idx(pods, i);
    fail();
    return NULL;
}

static void test_explain(void **state)
{
    (void)state;
    struct call c = { .nodes = parse(nodes_text), .pods = parse(pods_text), .workloads = parse(workloads_text),
                           .o = { .cap_ns = "fracgpu-system" } };
    c.pod = pod_named(c.pods, "llm-1");
    char *t = printed(call_explain, &c);
    has(t, "Managed:     yes, by fracgpu-scheduler\n");
    has(t, "Workload:    deployment-llm\n");
    has(t, "Update mode: Auto\n");
    has(t, "Allocation:  300m of a GPU, 10Gi\n");
    has(t, "Placed on:   node gpu-a, GPU 1 (GPU-aaaa), held by capacity pod fracgpu-system/cap-0\n");
    has(t, "That GPU:    2 tenants, 500m/1000m and 30Gi/80000Mi allocated, timeslice\n");
    free(t);
    c.pod = pod_named(c.pods, "waits");
    t = printed(call_explain, &c);
    has(t, "Allocation:  600m of a GPU, the whole GPU's memory\n");
    has(t, "Waiting:     WaitingForCapacity: no GPU has room; 1 new GPU on the way\n");
    free(t);
    c.pod = pod_named(c.pods, "plain");
    c.o.output = "json";
    t = printed(call_explain, &c);
    has(t, "\"managed\": false");
    has(t, "its workload is not opted in (kubectl annotate <kind>/<name> fracgpu.io/automate=true");
    free(t);
    json_object_put(c.nodes);
    json_object_put(c.pods);
    json_object_put(c.workloads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inventory),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_explain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
