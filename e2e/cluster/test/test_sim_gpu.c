/*
 * e2e_sim_gpu — the GPU side of `fracgpu-sim-cluster`, as a process, driven through the API:
 *   - `--nodes 2 --gpus-per-node 4 --gpu-model ... --gpu-memory-gib 80` gives two nodes of four
 *     GPUs, each with its fake NVML state (the UUIDs simids.h derives, the model and memory given);
 *   - pods asking for nvidia.com/gpu: 1 get distinct GPUs of their node (allocatedResourcesStatus);
 *     a fifth on the full node is refused as kube refuses it (Failed, OutOfnvidia.com/gpu); one left
 *     to the default scheduler runs on the other node;
 *   - the node's state.json lists each pod's GPU process with its usage profile, and a pod with no
 *     GPU request annotated sim.fracgpu.io/gpu-uuid on another pod's GPU, their utilization summed;
 *     each process's proc entry names its pod and container (read by the exporter's own parser); a
 *     bad annotation is an Event and the pod still runs;
 *   - a pod replaying the GenTD26 trace uses the trace's memory (the reader's own value);
 *   - the real `fracgpu node-agent`, on that node's state and proc tree, reports per-pod metrics,
 *     the pod without a GPU request included;
 *   - a pod that completes gives its GPUs back; a deleted pod's process goes from the state and
 *     the proc tree; a kubelets process killed and started again keeps every pod's GPU and gives a
 *     new pod only the one that is free;
 *   - a capacity pod running the real `fracgpu capacity-holder` learns from NVML the one GPU it
 *     was granted (FG_FAKE_NVML_VISIBLE: the fake shows it only that GPU) and annotates its pod.
 * Bounded: the cluster is ready within 30 s and every wait is at most 15 s.
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

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "rightsizing/gentd26.h"
#include "e2e/cluster/runtime.h"
#include "e2e/cluster/simids.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/simcluster.h"
#include "exporter/cgroup.h"
#include "exporter/test/fake_state.h"
#include "operator/kube/resource.h"

extern char **environ;

#define WAIT_MS 15000
#define MODEL "NVIDIA H100 80GB HBM3"

static struct {
    struct fg_simcluster sim;
    char a[96], b[96];            /* the two nodes */
    char gpu[4][FG_SIM_GPU_UUID_LEN + 1];   /* the GPUs of pods w0..w3 on a */
    pid_t agent;
} e;

/* ---- the API ---- */

static json_object *get_pod(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
    json_object *pod = NULL;
    return fg_kube_get(e.sim.client, path, &pod, NULL) == FG_OK ? pod : NULL;
}

/* Creates pod name (on node, or left to the scheduler when NULL) with one container "main" of a
 * simulated image, the annotations and resource limits given as JSON members, and more of its spec. */
static void create_pod(const char *name, const char *node, const char *annotations, const char *limits,
                       const char *spec_extra)
{
    char text[4096], node_field[160] = "";
    if (node)
        snprintf(node_field, sizeof node_field, "\"nodeName\":\"%s\",", node);
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
             "\"annotations\":{%s}},\"spec\":{%s%s\"containers\":[{\"name\":\"main\",\"image\":\"example.com/cuda-app:1\","
             "\"resources\":{\"limits\":{%s}}}]}}",
             name, annotations ? annotations : "", node_field, spec_extra ? spec_extra : "", limits ? limits : "");
    json_object *pod = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &pod, NULL), FG_OK);
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(e.sim.client, "/api/v1/namespaces/default/pods", pod, NULL, &st);
    if (err)
        fail_msg("create %s: %s %s", name, fg_err_str(err), st.message ? st.message : msg);
    fg_kube_status_cleanup(&st);
    json_object_put(pod);
}

static void delete_pod(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
    assert_int_equal(fg_kube_delete(e.sim.client, path, NULL, NULL, NULL), FG_OK);
}

struct phase_wait {
    const char *pod, *phase;
};

static bool in_phase(void *ud)
{
    const struct phase_wait *w = ud;
    json_object *pod = get_pod(w->pod);
    bool ok = fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), w->phase);
    json_object_put(pod);
    return ok;
}

static void wait_phase(const char *pod, const char *phase)
{
    struct phase_wait w = { pod, phase };
    if (!fg_harness_wait(in_phase, &w, WAIT_MS)) {
        json_object *p = get_pod(pod);
        fail_msg("pod %s not %s: %s", pod, phase, p ? json_object_to_json_string(fg_json_get(p, "status", NULL)) : "gone");
    }
}

static bool gone(void *ud)
{
    json_object *pod = get_pod(ud);
    json_object_put(pod);
    return pod == NULL;
}

/* The GPU the kubelet gave container "main" of pod (its first), into out; "" for none. */
static void gpu_of(const char *name, char *out)
{
    json_object *pod = get_pod(name);
    json_object *cs = json_object_array_get_idx(fg_json_get(pod, "status", "containerStatuses", NULL), 0);
    json_object *alloc = json_object_array_get_idx(fg_json_get(cs, "allocatedResourcesStatus", NULL), 0);
    const char *id = fg_json_get_str(json_object_array_get_idx(fg_json_get(alloc, "resources", NULL), 0), "resourceID",
                                     NULL);
    assert_true(!alloc || fg_str_eq(fg_json_get_str(alloc, "name", NULL), "nvidia.com/gpu"));
    snprintf(out, FG_SIM_GPU_UUID_LEN + 1, "%s", id ? id : "");
    json_object_put(pod);
}

/* The index of GPU uuid among node's, or -1. */
static int gpu_index(const char *node, const char *uuid)
{
    for (unsigned g = 0; g < 4; g++) {
        char u[FG_SIM_GPU_UUID_LEN + 1];
        fg_sim_gpu_uuid(node, g, u);
        if (!strcmp(u, uuid))
            return (int)g;
    }
    return -1;
}

/* ---- the node's files ---- */

static json_object *state_of(const char *node)
{
    char path[512];
    snprintf(path, sizeof path, "%s/nodes/%s/nvml/state.json", e.sim.work, node);
    return json_object_from_file(path);
}

static json_object *gpu_in(json_object *state, const char *uuid)
{
    json_object *gpus = fg_json_get(state, "gpus", NULL);
    for (size_t i = 0; i < fg_json_array_len(gpus); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(gpus, i), "uuid", NULL), uuid))
            return json_object_array_get_idx(gpus, i);
    return NULL;
}

/* A GPU of a node showing this many processes, this utilization and this memory in use. */
struct gpu_wait {
    const char *node, *uuid;
    size_t procs;
    int util;
    int64_t used;
};

static bool gpu_shows(void *ud)
{
    const struct gpu_wait *w = ud;
    json_object *state = state_of(w->node), *g = gpu_in(state, w->uuid);
    int64_t util = -1, used = -1;
    fg_json_get_int64(g, &util, "util", NULL);
    fg_json_get_int64(g, &used, "used", NULL);
    bool ok = g && fg_json_array_len(fg_json_get(g, "procs", NULL)) == w->procs && util == w->util && used == w->used;
    json_object_put(state);
    return ok;
}

static void wait_gpu(const char *node, const char *uuid, size_t procs, int util, int64_t used)
{
    struct gpu_wait w = { node, uuid, procs, util, used };
    if (!fg_harness_wait(gpu_shows, &w, WAIT_MS)) {
        json_object *state = state_of(node);
        fail_msg("GPU %s of %s never showed %zu processes, %d%%, %lld bytes: %s", uuid, node, procs, util,
                 (long long)used, json_object_to_json_string(gpu_in(state, uuid)));
    }
}

/* Every process of every GPU of node: its proc entry names a pod of ours and one of its containers. */
static void check_proc_tree(const char *node)
{
    char root[512], msg[FG_ERRMSG_MAX] = "";
    snprintf(root, sizeof root, "%s/nodes/%s/proc", e.sim.work, node);
    json_object *state = state_of(node), *gpus = fg_json_get(state, "gpus", NULL);
    size_t checked = 0;
    for (size_t g = 0; g < fg_json_array_len(gpus); g++) {
        json_object *procs = fg_json_get(json_object_array_get_idx(gpus, g), "procs", NULL);
        for (size_t i = 0; i < fg_json_array_len(procs); i++) {
            int64_t pid = 0;
            fg_json_get_int64(json_object_array_get_idx(procs, i), &pid, "pid", NULL);
            struct fg_cgroup_ident id;
            if (fg_cgroup_read_pid(root, (unsigned)pid, &id, msg) != FG_OK)
                fail_msg("pid %lld of %s: %s", (long long)pid, node, msg);
            json_object *list = NULL;
            assert_int_equal(fg_kube_get(e.sim.client, "/api/v1/namespaces/default/pods", &list, NULL), FG_OK);
            json_object *items = fg_json_get(list, "items", NULL), *pod = NULL;
            for (size_t j = 0; j < fg_json_array_len(items) && !pod; j++)
                if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(items, j), "metadata", "uid", NULL), id.pod_uid))
                    pod = json_object_array_get_idx(items, j);
            if (!pod)
                fail_msg("pid %lld of %s: no pod has uid %s", (long long)pid, node, id.pod_uid);
            json_object *cs = json_object_array_get_idx(fg_json_get(pod, "status", "containerStatuses", NULL), 0);
            const char *cid = fg_json_get_str(cs, "containerID", NULL);
            char want[160];
            snprintf(want, sizeof want, "%s://%s", fg_sim_runtime_scheme(fg_sim_runtime_of(node)), id.container_id);
            assert_string_equal(cid, want);
            json_object_put(list);
            checked++;
        }
    }
    assert_true(checked > 0);
    json_object_put(state);
}

/* ---- the cluster ---- */

static int start(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    static const char *const args[] = { "--nodes", "2", "--gpus-per-node", "4", "--gpu-model", MODEL,
                                        "--gpu-memory-gib", "80", "--disable", "autoscaler", NULL };
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_simcluster_start(&e.sim, NULL, args, 30, msg) != FG_OK) {
        fprintf(stderr, "%s\n", msg);
        return -1;
    }
    json_object *nodes = NULL;
    if (fg_kube_get(e.sim.client, "/api/v1/nodes", &nodes, NULL) != FG_OK ||
        fg_json_array_len(fg_json_get(nodes, "items", NULL)) != 2)
        return -1;
    json_object *items = fg_json_get(nodes, "items", NULL);
    snprintf(e.a, sizeof e.a, "%s", fg_json_get_str(json_object_array_get_idx(items, 0), "metadata", "name", NULL));
    snprintf(e.b, sizeof e.b, "%s", fg_json_get_str(json_object_array_get_idx(items, 1), "metadata", "name", NULL));
    json_object_put(nodes);
    return 0;
}

static int stop(void **state)
{
    (void)state;
    if (e.agent > 0) {
        kill(e.agent, SIGKILL);
        waitpid(e.agent, NULL, 0);
    }
    fg_simcluster_stop(&e.sim, false);
    return 0;
}

static void test_gpu_nodes(void **state)
{
    (void)state;
    const char *names[] = { e.a, e.b };
    for (int n = 0; n < 2; n++) {
        char path[256];
        snprintf(path, sizeof path, "/api/v1/nodes/%s", names[n]);
        json_object *node = NULL;
        assert_int_equal(fg_kube_get(e.sim.client, path, &node, NULL), FG_OK);
        assert_string_equal(fg_json_get_str(node, "status", "capacity", "nvidia.com/gpu", NULL), "4");
        assert_string_equal(fg_json_get_str(node, "metadata", "labels", "nvidia.com/gpu.present", NULL), "true");
        assert_string_equal(fg_json_get_str(node, "status", "nodeInfo", "containerRuntimeVersion", NULL),
                            fg_sim_runtime_version(fg_sim_runtime_of(names[n])));
        json_object_put(node);
        json_object *st = state_of(names[n]), *gpus = fg_json_get(st, "gpus", NULL);
        assert_int_equal(fg_json_array_len(gpus), 4);
        for (unsigned g = 0; g < 4; g++) {
            char uuid[FG_SIM_GPU_UUID_LEN + 1];
            fg_sim_gpu_uuid(names[n], g, uuid);
            json_object *gpu = json_object_array_get_idx(gpus, g);
            assert_string_equal(fg_json_get_str(gpu, "uuid", NULL), uuid);
            assert_string_equal(fg_json_get_str(gpu, "name", NULL), MODEL);
            int64_t total = 0;
            fg_json_get_int64(gpu, &total, "total", NULL);
            assert_int_equal(total, 80ll << 30);
        }
        json_object_put(st);
    }
}

static void test_whole_gpus(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++) {
        char name[16], ann[160];
        snprintf(name, sizeof name, "w%d", i);
        snprintf(ann, sizeof ann, "\"sim.fracgpu.io/gpu-sm\":\"%d\",\"sim.fracgpu.io/gpu-memory\":\"%dGi\"",
                 10 * (i + 1), i + 1);
        create_pod(name, e.a, ann, "\"nvidia.com/gpu\":1", NULL);
    }
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        wait_phase(name, "Running");
        gpu_of(name, e.gpu[i]);
        assert_true(gpu_index(e.a, e.gpu[i]) >= 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(e.gpu[i], e.gpu[j]);
    }
    create_pod("w4", e.a, NULL, "\"nvidia.com/gpu\":1", NULL);   /* the node is full */
    wait_phase("w4", "Failed");
    json_object *pod = get_pod("w4");
    assert_string_equal(fg_json_get_str(pod, "status", "reason", NULL), "OutOfnvidia.com/gpu");
    json_object_put(pod);
    create_pod("placed", NULL, NULL, "\"nvidia.com/gpu\":1", NULL);   /* the default scheduler: the other node */
    wait_phase("placed", "Running");
    pod = get_pod("placed");
    assert_string_equal(fg_json_get_str(pod, "spec", "nodeName", NULL), e.b);
    json_object_put(pod);
}

static void test_state_and_proc_tree(void **state)
{
    (void)state;
    char ann[256];
    snprintf(ann, sizeof ann, "\"sim.fracgpu.io/gpu-uuid\":\"%s\",\"sim.fracgpu.io/gpu-sm\":\"20\","
             "\"sim.fracgpu.io/gpu-memory\":\"2Gi\"", e.gpu[0]);
    create_pod("watcher", e.a, ann, "\"cpu\":\"100m\",\"memory\":\"64Mi\"", NULL);   /* no GPU request */
    create_pod("bad", e.b, "\"sim.fracgpu.io/gpu-sm\":\"lots\"", NULL, NULL);
    wait_phase("watcher", "Running");
    wait_phase("bad", "Running");
    wait_gpu(e.a, e.gpu[0], 2, 10 + 20, 3ll << 30);   /* w0 and the watcher */
    for (int i = 1; i < 4; i++)
        wait_gpu(e.a, e.gpu[i], 1, 10 * (i + 1), (int64_t)(i + 1) << 30);
    check_proc_tree(e.a);

    json_object *events = NULL;
    bool said = false;
    for (int t = 0; t < 100 && !said; t++) {
        assert_int_equal(fg_kube_get(e.sim.client, "/api/v1/namespaces/default/events", &events, NULL), FG_OK);
        json_object *items = fg_json_get(events, "items", NULL);
        for (size_t i = 0; i < fg_json_array_len(items); i++) {
            json_object *ev = json_object_array_get_idx(items, i);
            said = said || (fg_str_eq(fg_json_get_str(ev, "reason", NULL), "SimAnnotationInvalid") &&
                            fg_str_eq(fg_json_get_str(ev, "involvedObject", "name", NULL), "bad") &&
                            strstr(fg_json_get_str(ev, "message", NULL), "sim.fracgpu.io/gpu-sm"));
        }
        json_object_put(events);
        if (!said)
            fg_test_sleep_ms(100);
    }
    assert_true(said);
}

static void test_trace_replay(void **state)
{
    (void)state;
    const char *data = getenv("FG_DATA_DIR");
    assert_non_null(data);
    char dir[1024], msg[FG_ERRMSG_MAX] = "";
    snprintf(dir, sizeof dir, "%s/alibaba-genai-2026-gpu-util", data);
    struct fg_gentd26 t;
    if (fg_gentd26_load(&t, dir, msg) != FG_OK)
        fail_msg("%s", msg);
    double util, mem;
    fg_gentd26_at(&t.series[0], 0, &util, &mem);   /* its first minutes: the same memory */
    fg_gentd26_cleanup(&t);
    assert_true(mem > 0);
    create_pod("replay", e.b, "\"sim.fracgpu.io/usage-trace\":\"gentd26/0\"", "\"nvidia.com/gpu\":1", NULL);
    wait_phase("replay", "Running");
    char gpu[FG_SIM_GPU_UUID_LEN + 1];
    gpu_of("replay", gpu);
    wait_gpu(e.b, gpu, 1, (int)util, (int64_t)mem);
    check_proc_tree(e.b);
}

static void test_node_agent(void **state)
{
    (void)state;
    char nvml_state[512], proc_root[512], log_path[512];
    snprintf(nvml_state, sizeof nvml_state, "%s/nodes/%s/nvml/state.json", e.sim.work, e.a);
    snprintf(proc_root, sizeof proc_root, "%s/nodes/%s/proc", e.sim.work, e.a);
    snprintf(log_path, sizeof log_path, "%s/node-agent.log", e.sim.dir);
    setenv("FG_FAKE_NVML_STATE", nvml_state, 1);
    char *const argv[] = { FG_FRACGPU, "node-agent", "--node-name", e.a, "--kubeconfig", e.sim.kubeconfig,
                           "--nvml-lib", FG_FAKE_NVML_PATH, "--proc-root", proc_root, "--listen", "127.0.0.1:0",
                           "--interval", "200ms", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    assert_int_equal(posix_spawn(&e.agent, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    unsigned port = fg_test_exporter_port(log_path);
    assert_true(port > 0);
    char want[4][512];
    snprintf(want[0], sizeof want[0], "fracgpu_pod_gpu_utilization_ratio{node=\"%s\",gpu=\"%d\",uuid=\"%s\",model=\"" MODEL
             "\",namespace=\"default\",pod=\"watcher\",container=\"main\"} 0.2", e.a,
             gpu_index(e.a, e.gpu[0]), e.gpu[0]);
    snprintf(want[1], sizeof want[1], "fracgpu_pod_gpu_memory_used_bytes{node=\"%s\",gpu=\"%d\",uuid=\"%s\",model=\"" MODEL
             "\",namespace=\"default\",pod=\"watcher\",container=\"main\"} 2147483648", e.a,
             gpu_index(e.a, e.gpu[0]), e.gpu[0]);
    snprintf(want[2], sizeof want[2], "namespace=\"default\",pod=\"w0\",container=\"main\"} 0.1");
    snprintf(want[3], sizeof want[3], "namespace=\"default\",pod=\"w3\",container=\"main\"} 4294967296");
    struct fg_buf body;
    fg_buf_init(&body, 0);
    bool all = false;
    for (int t = 0; t < 100 && !all; t++) {
        all = fg_harness_http(NULL, port, "GET", "/metrics", &body) == 200;
        for (int i = 0; i < 4 && all; i++)
            all = strstr(fg_buf_str(&body), want[i]) != NULL;
        if (!all)
            fg_test_sleep_ms(100);
    }
    if (!all)
        fail_msg("the node agent's metrics lack what the node runs:\n%s", fg_buf_str(&body));
    fg_buf_cleanup(&body);
    kill(e.agent, SIGTERM);
    int status = 0;
    assert_int_equal(waitpid(e.agent, &status, 0), e.agent);
    e.agent = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static bool path_gone(void *ud)
{
    return access(ud, F_OK) != 0;
}

static pid_t kubelets_pid(void)
{
    return fg_simcluster_component_pid(&e.sim, "kubelets");
}

static bool kubelets_restarted(void *ud)
{
    return kubelets_pid() != *(pid_t *)ud;
}

static void test_free_and_restart(void **state)
{
    (void)state;
    /* a pod that completes gives its GPUs back: b holds placed and replay, the job takes the other two */
    create_pod("job", e.b, "\"sim.fracgpu.io/run-seconds\":\"1\"", "\"nvidia.com/gpu\":2", "\"restartPolicy\":\"Never\",");
    wait_phase("job", "Succeeded");
    create_pod("after-job", e.b, NULL, "\"nvidia.com/gpu\":2", NULL);
    wait_phase("after-job", "Running");

    /* a deleted pod's process leaves the state and the proc tree */
    json_object *st = state_of(e.a), *procs = fg_json_get(gpu_in(st, e.gpu[1]), "procs", NULL);
    int64_t pid = 0;
    fg_json_get_int64(json_object_array_get_idx(procs, 0), &pid, "pid", NULL);
    json_object_put(st);
    delete_pod("w1");
    assert_true(fg_harness_wait(gone, "w1", WAIT_MS));
    wait_gpu(e.a, e.gpu[1], 0, 0, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/nodes/%s/proc/%lld", e.sim.work, e.a, (long long)pid);
    assert_true(fg_harness_wait(path_gone, path, WAIT_MS));   /* just after the state stopped listing it */

    /* the kubelets start again: every pod keeps its GPU, a new pod gets the free one */
    pid_t old = kubelets_pid();
    assert_true(old > 0);
    assert_int_equal(kill(old, SIGKILL), 0);
    assert_true(fg_harness_wait(kubelets_restarted, &old, WAIT_MS));
    create_pod("w5", e.a, NULL, "\"nvidia.com/gpu\":1", NULL);
    wait_phase("w5", "Running");
    char gpu[FG_SIM_GPU_UUID_LEN + 1];
    gpu_of("w5", gpu);
    assert_string_equal(gpu, e.gpu[1]);
    static const int kept[] = { 0, 2, 3 };
    for (size_t i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", kept[i]);
        gpu_of(name, gpu);
        assert_string_equal(gpu, e.gpu[kept[i]]);
    }
    wait_gpu(e.a, e.gpu[0], 2, 30, 3ll << 30);
    wait_gpu(e.a, e.gpu[1], 1, 0, 0);   /* w5 has no usage profile: a process that holds its GPU idle */
    check_proc_tree(e.a);
}

struct annotation_wait {
    const char *pod, *name;
};

static bool annotated(void *ud)
{
    const struct annotation_wait *w = ud;
    json_object *pod = get_pod(w->pod);
    bool ok = fg_json_get_str(pod, "metadata", "annotations", w->name, NULL) != NULL;
    json_object_put(pod);
    return ok;
}

static void test_capacity_holder(void **state)
{
    (void)state;
    delete_pod("after-job");   /* room on b */
    assert_true(fg_harness_wait(gone, "after-job", WAIT_MS));
    static const char spec[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"capacity\",\"namespace\":\"default\"},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"holder\",\"image\":\"ghcr.io/fracgpu/fracgpu:0.1.0\","
        "\"args\":[\"capacity-holder\"],\"env\":["
        "{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        "{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}}],"
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}";
    char text[2048];
    snprintf(text, sizeof text, spec, e.b);
    json_object *pod = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &pod, NULL), FG_OK);
    assert_int_equal(fg_kube_create(e.sim.client, "/api/v1/namespaces/default/pods", pod, NULL, NULL), FG_OK);
    json_object_put(pod);
    struct annotation_wait w = { "capacity", "fracgpu.io/gpu-uuid" };
    if (!fg_harness_wait(annotated, &w, WAIT_MS)) {
        pod = get_pod("capacity");
        fail_msg("the holder never said its GPU: %s", json_object_to_json_string(pod));
    }
    char granted[FG_SIM_GPU_UUID_LEN + 1];
    gpu_of("capacity", granted);
    assert_true(gpu_index(e.b, granted) >= 0);
    pod = get_pod("capacity");
    assert_string_equal(fg_json_get_str(pod, "metadata", "annotations", "fracgpu.io/gpu-uuid", NULL), granted);
    assert_string_equal(fg_json_get_str(pod, "metadata", "annotations", "fracgpu.io/gpu-memory-mib", NULL),
                        "80908");   /* 80 GiB less the driver's 512 MiB and a context's 500 MiB */
    json_object_put(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_nodes),
        cmocka_unit_test(test_whole_gpus),
        cmocka_unit_test(test_state_and_proc_tree),
        cmocka_unit_test(test_trace_replay),
        cmocka_unit_test(test_node_agent),
        cmocka_unit_test(test_free_and_restart),
        cmocka_unit_test(test_capacity_holder),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
