/*
 * e2e_sim_played — the node side played in-process, for thousands of nodes (`--gpu-state memory`):
 *   - every GPU node reports fracgpu.io/gpu-share at 48 slots per GPU from boot, with no process of
 *     its own;
 *   - a pod bound with fracgpu.io/gpu-uuid and asking for a share runs, its slot on that GPU
 *     (allocatedResourcesStatus); one without the annotation is refused (UnexpectedAdmissionError);
 *   - a capacity pod (simulated container) holding a GPU is annotated as its holder would annotate
 *     it: the GPU's UUID, and the model's memory less the driver's 512 MiB and a 500 MiB context.
 * Bounded: ready within 30 s, every wait at most 15 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/simcluster.h"

#define WAIT_MS 15000

static struct fg_simcluster sim;
static char node[96];

static json_object *get_pod(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_object *pod = NULL;
    return fg_kube_get(sim.client, path, &pod, NULL) == FG_OK ? pod : NULL;
}

static void create(const char *ns, const char *json)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_object *obj = json_tokener_parse(json);
    assert_non_null(obj);
    assert_int_equal(fg_kube_create(sim.client, path, obj, NULL, NULL), FG_OK);
    json_object_put(obj);
}

struct wait_for {
    const char *ns, *name, *path0, *path1, *path2, *want; /* a string field of the pod, or a phase */
};

static bool field_is(void *ud)
{
    struct wait_for *w = ud;
    json_object *pod = get_pod(w->ns, w->name);
    bool yes = fg_str_eq(fg_json_get_str(pod, w->path0, w->path1, w->path2, NULL), w->want);
    json_object_put(pod);
    return yes;
}

static void wait_phase(const char *ns, const char *name, const char *phase)
{
    struct wait_for w = { ns, name, "status", "phase", NULL, phase };
    if (!fg_harness_wait(field_is, &w, WAIT_MS))
        fail_msg("pod %s/%s never %s", ns, name, phase);
}

static int start(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    static const char *const args[] = { "--nodes", "1", "--gpus-per-node", "8", "--gpu-memory-gib", "80",
                                        "--gpu-state", "memory", "--disable", "autoscaler", NULL };
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_simcluster_start(&sim, NULL, args, 30, msg) != FG_OK) {
        fprintf(stderr, "%s\n", msg);
        return -1;
    }
    json_object *nodes = NULL;
    if (fg_kube_get(sim.client, "/api/v1/nodes", &nodes, NULL) != FG_OK)
        return -1;
    snprintf(node, sizeof node, "%s",
             fg_json_get_str(json_object_array_get_idx(fg_json_get(nodes, "items", NULL), 0), "metadata", "name", NULL));
    json_object_put(nodes);
    return 0;
}

static int stop(void **state)
{
    (void)state;
    fg_simcluster_stop(&sim, false);
    return 0;
}

static void played_node_side(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    json_object *n = NULL;
    assert_int_equal(fg_kube_get(sim.client, path, &n, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(n, "status", "allocatable", "fracgpu.io/gpu-share", NULL), "384");
    json_object_put(n);

    char json[1024];
    snprintf(json, sizeof json,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"tenant\",\"annotations\":"
             "{\"fracgpu.io/gpu-uuid\":\"GPU-played\"}},\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"m\","
             "\"image\":\"busybox\",\"resources\":{\"limits\":{\"fracgpu.io/gpu-share\":\"1\"}}}]}}",
             node);
    create("default", json);
    wait_phase("default", "tenant", "Running");
    json_object *pod = get_pod("default", "tenant");
    json_object *alloc = fg_json_get(json_object_array_get_idx(fg_json_get(pod, "status", "containerStatuses", NULL), 0),
                                     "allocatedResourcesStatus", NULL);
    const char *slot = fg_json_get_str(json_object_array_get_idx(fg_json_get(json_object_array_get_idx(alloc, 0),
                                                                             "resources", NULL), 0),
                                       "resourceID", NULL);
    assert_non_null(slot);
    assert_true(strncmp(slot, "GPU-played::", 12) == 0);
    json_object_put(pod);

    snprintf(json, sizeof json,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"no-gpu-named\"},\"spec\":{\"nodeName\":"
             "\"%s\",\"containers\":[{\"name\":\"m\",\"image\":\"busybox\",\"resources\":{\"limits\":"
             "{\"fracgpu.io/gpu-share\":\"1\"}}}]}}",
             node);
    create("default", json);
    wait_phase("default", "no-gpu-named", "Failed");
    pod = get_pod("default", "no-gpu-named");
    assert_string_equal(fg_json_get_str(pod, "status", "reason", NULL), "UnexpectedAdmissionError");
    json_object_put(pod);

    create("default", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"capacity\",\"labels\":"
                      "{\"fracgpu.io/role\":\"capacity\"}},\"spec\":{\"containers\":[{\"name\":\"holder\",\"image\":"
                      "\"busybox\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    struct wait_for w = { "default", "capacity", "metadata", "annotations", "fracgpu.io/gpu-memory-mib", "80908" };
    if (!fg_harness_wait(field_is, &w, WAIT_MS))
        fail_msg("the capacity pod was not annotated as its holder would");
    pod = get_pod("default", "capacity");
    const char *uuid = fg_json_get_str(pod, "metadata", "annotations", "fracgpu.io/gpu-uuid", NULL);
    const char *granted = fg_json_get_str(
        json_object_array_get_idx(
            fg_json_get(json_object_array_get_idx(
                            fg_json_get(json_object_array_get_idx(fg_json_get(pod, "status", "containerStatuses", NULL), 0),
                                        "allocatedResourcesStatus", NULL),
                            0),
                        "resources", NULL),
            0),
        "resourceID", NULL);
    assert_non_null(uuid);
    assert_string_equal(uuid, granted); /* the GPU the NVIDIA plugin gave it */
    json_object_put(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(played_node_side) };
    return cmocka_run_group_tests(tests, start, stop);
}
