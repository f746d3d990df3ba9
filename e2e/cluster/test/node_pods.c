/* node_pods — the pods e2e_sim_node makes and the checks on them; see node_pods.h. */
#include "e2e/cluster/test/node_pods.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "reconcilers/podcontract.h"

char *nodetest_tenant(const char *name, int milli, int mib, const char *sharing, const char *extra)
{
    char *json = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
        "\"labels\":{\"" FG_LABEL_MANAGED "\":\"true\"},"
        "\"annotations\":{\"" FG_ANN_COMPUTE_MILLI "\":\"%d\",\"" FG_ANN_MEMORY_MIB "\":\"%d\","
        "\"" FG_ANN_SHARING "\":\"%s\","
        "\"" FG_ANN_ISOLATION "\":\"shared\",\"" FG_ANN_ORIGINAL_REQUEST "\":\"1\"%s%s}},"
        "\"spec\":{\"schedulerName\":\"" FG_SCHEDULER_NAME "\",\"containers\":[{\"name\":\"main\","
        "\"image\":\"registry.example.com/llm:1\",\"resources\":{\"limits\":{\"" FG_RES_GPU_SHARE "\":\"1\"}}}]}}",
        name, milli, mib, sharing, extra[0] ? "," : "", extra);
    json_object *pod = nodetest_create_pod(NODETEST_NS, json);
    free(json);
    char *uid = fg_strdup(fg_json_get_str(pod, "metadata", "uid", NULL));
    json_object_put(pod);
    return uid;
}

char *nodetest_forged(const char *name, const char *from, const char *node, uint64_t *created_ns)
{
    json_object *src = nodetest_pod(NODETEST_NS, from);
    assert_non_null(src);
    char *json = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"annotations\":%s},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/llm:1\","
        "\"resources\":{\"limits\":{\"" FG_RES_GPU_SHARE "\":\"1\"}}}]}}",
        name, json_object_to_json_string(fg_json_get(src, "metadata", "annotations", NULL)), node);
    json_object_put(src);
    if (created_ns)
        *created_ns = fg_clock_mono_ns();
    json_object *pod = nodetest_create_pod(NODETEST_NS, json);
    free(json);
    char *uid = fg_strdup(fg_json_get_str(pod, "metadata", "uid", NULL));
    json_object_put(pod);
    return uid;
}

void nodetest_capacity(const char *name, const char *node, const char *annotations)
{
    char *json = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"" FG_LABEL_ROLE "\":\""
        FG_ROLE_CAPACITY "\"},\"annotations\":{%s}},"
        "\"spec\":{\"serviceAccountName\":\"fracgpu-capacity-holder\","
        "\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"},"
        "\"containers\":[{\"name\":\"holder\",\"image\":\"ghcr.io/fracgpu/fracgpu:0.1.0\","
        "\"args\":[\"capacity-holder\",\"--mps-root=/run/fracgpu/mps\",\"--mps-health-interval=1s\"],"
        "\"env\":[{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        "{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
        "{\"name\":\"NVIDIA_DRIVER_CAPABILITIES\",\"value\":\"compute,utility\"}],"
        "\"securityContext\":{\"privileged\":true},"
        "\"readinessProbe\":{\"httpGet\":{\"path\":\"/readyz\",\"port\":9403},\"periodSeconds\":1},"
        "\"resources\":{\"limits\":{\"" FG_RES_NVIDIA_GPU "\":\"1\"}},"
        "\"volumeMounts\":[{\"name\":\"mps\",\"mountPath\":\"/run/fracgpu/mps\"}]}],"
        "\"volumes\":[{\"name\":\"mps\",\"hostPath\":{\"path\":\"/run/fracgpu/mps\","
        "\"type\":\"DirectoryOrCreate\"}}]}}",
        name, annotations, node);
    json_object_put(nodetest_create_pod(NODETEST_SYSTEM_NS, json));
    free(json);
}

char *nodetest_uid(const char *ns, const char *name)
{
    json_object *pod = nodetest_pod(ns, name);
    char *uid = fg_strdup(pod ? fg_json_get_str(pod, "metadata", "uid", NULL) : "");
    json_object_put(pod);
    return uid;
}

/* Whether json array a holds string v. */
static bool has_str(json_object *a, const char *v)
{
    for (size_t i = 0; i < fg_json_array_len(a); i++)
        if (fg_str_eq(json_object_get_string(fg_json_at(a, i)), v))
            return true;
    return false;
}

static bool has_mount(json_object *mounts, const char *container_path, const char *host_path, bool read_only)
{
    for (size_t i = 0; i < fg_json_array_len(mounts); i++) {
        json_object *m = fg_json_at(mounts, i), *ro = fg_json_get(m, "readOnly", NULL);
        if (fg_str_eq(fg_json_get_str(m, "containerPath", NULL), container_path) &&
            fg_str_eq(fg_json_get_str(m, "hostPath", NULL), host_path) &&
            (ro ? json_object_get_boolean(ro) : false) == read_only)
            return true;
    }
    return false;
}

void nodetest_check_devices(enum nodetest_form f, const char *name, const char *gpu, const struct nodetest_mps *mps)
{
    const char *node = nt.node[f];
    char *uid = nodetest_uid(NODETEST_NS, name);
    json_object *d = nodetest_devices(node, NODETEST_NS, name, uid);
    if (!d)
        nodetest_fail(NODETEST_NS, name, node, "the kubelet wrote no devices.json for %s", name);
    const char *text = json_object_to_json_string(d);
    if (fg_json_array_len(d) != 1)
        nodetest_fail(NODETEST_NS, name, node, "devices.json of %s holds %zu records: %s", name, fg_json_array_len(d),
                      text);
    json_object *r = fg_json_at(d, 0);
    json_object *env = fg_json_get(r, "env", NULL), *mounts = fg_json_get(r, "mounts", NULL);
    json_object *cdi = fg_json_get(r, "cdiDevices", NULL), *ids = fg_json_get(r, "devices", NULL);
    char want[512], pipe[512], shm[512];
    bool ok = fg_str_eq(fg_json_get_str(r, "container", NULL), "main") &&
              fg_str_eq(fg_json_get_str(r, "resource", NULL), FG_RES_GPU_SHARE) && fg_json_array_len(ids) == 1;
    snprintf(want, sizeof want, "%s::", gpu);
    ok = ok && fg_str_has_prefix(json_object_get_string(fg_json_at(ids, 0)), want);
    size_t nenv = 1, nmounts = 0, ncdi = 0;
    switch (f) {
    case NODETEST_CDI:
        snprintf(want, sizeof want, "nvidia.com/gpu=%s", gpu);
        ok = ok && has_str(cdi, want);
        ncdi = 1;
        snprintf(want, sizeof want, "NVIDIA_VISIBLE_DEVICES=%s", gpu);
        ok = ok && has_str(env, want);
        break;
    case NODETEST_MOUNTS:
        snprintf(want, sizeof want, NODETEST_MOUNTS_DIR "/%s", gpu);
        ok = ok && has_mount(mounts, want, "/dev/null", true);
        nmounts = 1;
        ok = ok && has_str(env, "NVIDIA_VISIBLE_DEVICES=" NODETEST_MOUNTS_DIR);
        break;
    default:
        snprintf(want, sizeof want, "NVIDIA_VISIBLE_DEVICES=%s", gpu);
        ok = ok && has_str(env, want);
        break;
    }
    if (mps) {
        snprintf(pipe, sizeof pipe, "%s/nodes/%s/run/fracgpu/mps/%s/pipe", nt.work, node, gpu);
        snprintf(shm, sizeof shm, "%s/nodes/%s/run/fracgpu/mps/%s/shm", nt.work, node, gpu);
        ok = ok && has_mount(mounts, "/tmp/nvidia-mps", pipe, false) && has_mount(mounts, "/dev/shm", shm, false);
        nmounts += 2;
        snprintf(want, sizeof want, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", mps->milli / 10);
        ok = ok && has_str(env, "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps") && has_str(env, want);
        snprintf(want, sizeof want, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%dM", mps->mib);
        ok = ok && has_str(env, want);
        nenv += 3;
    }
    ok = ok && fg_json_array_len(env) == nenv && fg_json_array_len(mounts) == nmounts && fg_json_array_len(cdi) == ncdi;
    if (!ok)
        nodetest_fail(NODETEST_NS, name, node,
                      "devices.json of %s on the %s node is not GPU %s alone in that form%s: %s", name,
                      nodetest_form_name(f), gpu, mps ? " with its MPS daemon" : "", text);
    json_object_put(d);
    free(uid);
}


/* The GPU the kubelet gave container 0 of pod (its allocatedResourcesStatus), into out. */
static void kubelet_gpu(const char *ns, const char *name, char *out)
{
    json_object *pod = nodetest_pod(ns, name);
    json_object *cs = fg_json_at(fg_json_get(pod, "status", "containerStatuses", NULL), 0);
    json_object *alloc = fg_json_at(fg_json_get(cs, "allocatedResourcesStatus", NULL), 0);
    const char *id = fg_json_get_str(fg_json_at(fg_json_get(alloc, "resources", NULL), 0), "resourceID",
                                     NULL);
    snprintf(out, NODETEST_UUID_MAX, "%s", id ? id : "");
    json_object_put(pod);
}

void nodetest_check_capacity(enum nodetest_form f, const char *name, char *gpu)
{
    const char *node = nt.node[f];
    nodetest_wait_annotation(NODETEST_SYSTEM_NS, name, node, FG_ANN_GPU_MEMORY_MIB, NODETEST_WAIT_MS);
    nodetest_wait_phase(NODETEST_SYSTEM_NS, name, node, "Running", NODETEST_WAIT_MS);
    json_object *pod = nodetest_pod(NODETEST_SYSTEM_NS, name);
    assert_string_equal(fg_json_get_str(pod, "spec", "nodeName", NULL), node);
    const char *uuid = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_UUID, NULL);
    const char *mib = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_MEMORY_MIB, NULL);
    char granted[NODETEST_UUID_MAX];
    kubelet_gpu(NODETEST_SYSTEM_NS, name, granted);
    if (!uuid || !fg_str_eq(uuid, granted) || nodetest_gpu_index(node, uuid) < 0)
        nodetest_fail(NODETEST_SYSTEM_NS, name, node, "capacity pod %s reports GPU %s; the kubelet granted %s", name,
                      uuid ? uuid : "(none)", granted);
    json_object *state = nodetest_nvml_state(node), *g = nodetest_nvml_gpu(state, uuid);
    int64_t total = 0, reserved = 0;
    assert_true(fg_json_get_int64(g, &total, "total", NULL));
    assert_true(fg_json_get_int64(g, &reserved, "reserved", NULL));
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)((total - reserved) / (1 << 20) - NODETEST_CONTEXT_OVERHEAD_MIB));
    assert_string_equal(mib, want);
    snprintf(gpu, NODETEST_UUID_MAX, "%s", uuid);
    json_object_put(state);
    json_object_put(pod);
}
