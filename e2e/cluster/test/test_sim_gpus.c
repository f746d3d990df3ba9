/*
 * Tests of what the pods on a simulated node do with its GPUs (kubelet_gpus.c), on nodes and pods
 * built here: which GPU each container uses — granted nvidia.com/gpu, a fractional pod's
 * fracgpu.io/gpu-uuid, a pod with no GPU request's sim.fracgpu.io/gpu-uuid — and the problems
 * reported for a GPU not on the node or an annotation that cannot apply; the snapshot a node's GPUs
 * give on demand (memory mode), use sampled at whole intervals from each container's start; and
 * the files written with gpuState files: the state, a proc entry per process before the state
 * lists it, removed once the process is gone, and nothing rewritten while nothing changed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"
#include "exporter/cgroup.h"

static struct fg_sim_config cfg;
static struct fg_sim_group group;
static struct fg_sim_kubelets k;
static struct fg_sim_node *node;
static struct fg_sim_pod *pods[8];
static json_object *pod_docs[8];
static size_t npods;

static int setup(void **state)
{
    (void)state;
    fg_sim_config_default(&cfg);
    cfg.usage.interval_ns = 1000 * FG_NS_PER_MS;
    cfg.usage.time_scale = 60;
    k.cfg = &cfg;
    pthread_mutex_init(&k.mu, NULL);
    fg_sim_trace_source_init(&k.traces, "/nonexistent");
    snprintf(group.name, sizeof group.name, "gpu");
    snprintf(group.gpu_model, sizeof group.gpu_model, "NVIDIA L4");
    group.gpu_memory_mib = 24 * 1024;
    group.gpus = 4;
    node = fg_calloc(1, sizeof *node);
    snprintf(node->name, sizeof node->name, "gpu-a");
    node->group = &group;
    node->runtime = FG_SIM_RUNTIME_CONTAINERD_SYSTEMD;
    node->registered = true;
    fg_sim_nvidia_boot(&k, node);
    k.nodes = fg_calloc(1, sizeof *k.nodes);
    k.nodes[0] = node;
    k.nnodes = 1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < npods; i++) {
        fg_sim_grants_free(pods[i]);
        free(pods[i]);
        json_object_put(pod_docs[i]);
    }
    free(k.pods_v);
    fg_sim_devices_cleanup(&node->devices);
    fg_sim_gpus_node_free(node);
    free(node);
    free(k.nodes);
    fg_sim_trace_source_cleanup(&k.traces);
    pthread_mutex_destroy(&k.mu);
    fg_sim_config_cleanup(&cfg);
    return 0;
}

/* A pod admitted on node (devices reserved, GPUs set up): its annotations and containers as JSON. */
static struct fg_sim_pod *add_pod(const char *name, const char *annotations, const char *containers)
{
    char text[4096];
    snprintf(text, sizeof text, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":"
             "\"00000000-0000-0000-0000-00000000000%zu\",\"annotations\":{%s}},\"spec\":{\"containers\":%s}}",
             name, npods, annotations, containers);
    json_object *doc = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &doc, NULL), FG_OK);
    struct fg_sim_pod *p = fg_calloc(1, sizeof *p);
    snprintf(p->key, sizeof p->key, "default/%s", name);
    snprintf(p->uid, sizeof p->uid, "%s", fg_json_get_str(doc, "metadata", "uid", NULL));
    p->node = node;
    p->admitted = true;
    p->qos = fg_sim_pod_qos(doc);
    fg_sim_containers_set_up(&k, p, doc);
    assert_true(fg_sim_devices_reserve(node, p, doc));
    fg_sim_gpus_pod_setup(&k, p, doc);
    pods[npods] = p;
    pod_docs[npods++] = doc;
    k.pods_v = fg_realloc(k.pods_v, npods * sizeof *k.pods_v);
    memcpy(k.pods_v, pods, npods * sizeof *pods);
    k.npods = npods;
    return p;
}

static void run(struct fg_sim_pod *p, int64_t started_ms)
{
    for (size_t i = 0; i < p->ncontainers; i++) {
        p->containers[i].state = CONTAINER_RUNNING;
        p->containers[i].started_ms = started_ms;
    }
}

static const struct fg_sim_gpu_process *process_of(const struct fg_sim_gpu_snapshot *s, const struct fg_sim_pod *p)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (!strcmp(s->procs[i].pod_uid, p->uid))
            return &s->procs[i];
    return NULL;
}

#define GPU(n) "{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":" #n "}}}"

static void test_which_gpus(void **state)
{
    (void)state;
    struct fg_sim_pod *whole = add_pod("whole", "\"sim.fracgpu.io/gpu-sm\":\"40\",\"sim.fracgpu.io/gpu-memory\":\"4Gi\"",
                                       "[" GPU(2) "]");
    assert_int_equal(whole->containers[0].gpus, 0x3u);   /* GPUs 0 and 1 */
    char ann[256];
    snprintf(ann, sizeof ann, "\"fracgpu.io/gpu-uuid\":\"%s\",\"sim.fracgpu.io/gpu-sm\":\"15\"", node->gpu_uuid[2]);
    struct fg_sim_pod *frac = add_pod("frac", ann, "[{\"name\":\"side\"},{\"name\":\"main\",\"resources\":{\"limits\":"
                                      "{\"fracgpu.io/gpu-share\":1}}}]");
    assert_int_equal(frac->containers[0].gpus, 0);
    assert_int_equal(frac->containers[1].gpus, 1u << 2);
    assert_string_equal(frac->problem, "");
    snprintf(ann, sizeof ann, "\"sim.fracgpu.io/gpu-uuid\":\"%s\",\"sim.fracgpu.io/gpu-sm\":\"20\","
             "\"sim.fracgpu.io/gpu-memory\":\"1Gi\"", node->gpu_uuid[2]);
    struct fg_sim_pod *watcher = add_pod("watcher", ann, "[{\"name\":\"main\"},{\"name\":\"other\"}]");
    assert_int_equal(watcher->containers[0].gpus, 1u << 2);   /* its first container only */
    assert_int_equal(watcher->containers[1].gpus, 0);
    struct fg_sim_pod *lost = add_pod("lost", "\"sim.fracgpu.io/gpu-uuid\":\"GPU-elsewhere\"", "[{\"name\":\"main\"}]");
    assert_int_equal(lost->containers[0].gpus, 0);
    assert_string_equal(lost->problem, "annotation sim.fracgpu.io/gpu-uuid: \"GPU-elsewhere\" is not a GPU of node gpu-a");
    struct fg_sim_pod *unbound = add_pod("unbound", "", "[{\"name\":\"main\",\"resources\":{\"limits\":"
                                         "{\"fracgpu.io/gpu-share\":1}}}]");
    assert_string_equal(unbound->problem, "annotation fracgpu.io/gpu-uuid: missing is not a GPU of node gpu-a");
    snprintf(ann, sizeof ann, "\"sim.fracgpu.io/gpu-uuid\":\"%s\",\"sim.fracgpu.io/gpu-sm\":\"x\"", node->gpu_uuid[3]);
    struct fg_sim_pod *both = add_pod("both", ann, "[" GPU(1) "]");
    assert_int_equal(both->containers[0].gpus, 1u << 2);   /* its own GPU (the next free), not the annotation's */
    assert_non_null(strstr(both->problem, "annotation sim.fracgpu.io/gpu-sm: \"x\""));
    assert_non_null(strstr(both->problem, "; annotation sim.fracgpu.io/gpu-uuid: ignored, the pod requests GPUs"));
}

static void test_snapshot(void **state)
{
    (void)state;
    int64_t t0 = 1700000000000;
    for (size_t i = 0; i < npods; i++)
        run(pods[i], t0);
    pods[1]->containers[1].state = CONTAINER_WAITING;   /* frac's main is not running */
    struct fg_sim_gpu_snapshot s;
    assert_true(fg_sim_gpus_snapshot(&k, "gpu-a", t0 + 2500, &s));
    struct fg_sim_gpu_snapshot none;
    assert_false(fg_sim_gpus_snapshot(&k, "gpu-z", t0, &none));
    assert_int_equal(s.ngpus, 4);
    assert_string_equal(s.model, "NVIDIA L4");
    assert_int_equal(s.memory_bytes, 24ll << 30);
    assert_string_equal(s.uuids[3], node->gpu_uuid[3]);
    assert_int_equal(s.nprocs, 3);   /* whole, watcher, both; frac's waits, lost has no GPU */
    for (size_t i = 1; i < s.nprocs; i++)
        assert_true(s.procs[i].pid > s.procs[i - 1].pid);
    const struct fg_sim_gpu_process *w = process_of(&s, pods[0]);
    assert_non_null(w);
    assert_int_equal(w->gpus, 0x3u);
    assert_true(w->sm == 40 && w->mem == 4.0 * (1 << 30));
    assert_int_equal(w->pid, fg_sim_container_pid(pods[0]->uid, "main", 0));
    assert_string_equal(w->qos, "BestEffort");
    char id[FG_SIM_CONTAINER_ID_LEN + 1];
    fg_sim_container_id(pods[0]->uid, "main", 0, id);
    assert_string_equal(w->container_id, id);
    unsigned util;
    int64_t used;
    fg_sim_gpu_totals(&s, 2, &util, &used);
    assert_int_equal(util, 20);   /* the watcher, and both's nothing: frac's process is not running */
    assert_int_equal(used, 1ll << 30);
    fg_sim_gpu_snapshot_cleanup(&s);
    pods[1]->containers[1].state = CONTAINER_RUNNING;
    assert_true(fg_sim_gpus_snapshot(&k, "gpu-a", t0 + 2500, &s));
    fg_sim_gpu_totals(&s, 2, &util, &used);
    assert_int_equal(util, 35);
    fg_sim_gpu_snapshot_cleanup(&s);
}

static bool exists(const char *root, unsigned pid)
{
    char path[512];
    snprintf(path, sizeof path, "%s/proc/%u/cgroup", root, pid);
    return access(path, F_OK) == 0;
}

static void test_files(void **state)
{
    (void)state;
    char root[] = "/tmp/fg-sim-gpus-XXXXXX", path[512];
    assert_non_null(mkdtemp(root));
    snprintf(node->root, sizeof node->root, "%s", root);
    snprintf(path, sizeof path, "%s/nvml", root);
    assert_int_equal(fg_mkdir_p(path), 0);
    snprintf(path, sizeof path, "%s/proc", root);
    assert_int_equal(fg_mkdir_p(path), 0);
    cfg.kubelet.gpu_state = FG_SIM_GPU_STATE_FILES;
    fg_sim_gpus_write_node(&k, node);
    snprintf(path, sizeof path, "%s/nvml/state.json", root);
    struct stat first, again;
    assert_int_equal(stat(path, &first), 0);
    unsigned pid = fg_sim_container_pid(pods[2]->uid, "main", 0);   /* the watcher's */
    assert_true(exists(root, pid));
    struct fg_cgroup_ident id;
    char msg[FG_ERRMSG_MAX] = "", proc_root[600];
    snprintf(proc_root, sizeof proc_root, "%s/proc", root);
    assert_int_equal(fg_cgroup_read_pid(proc_root, pid, &id, msg), FG_OK);
    assert_string_equal(id.pod_uid, pods[2]->uid);
    json_object *st = json_object_from_file(path);
    assert_int_equal(fg_json_array_len(fg_json_get(st, "gpus", NULL)), 4);
    json_object_put(st);

    fg_sim_gpus_tick(&k);   /* nothing changed: nothing written */
    assert_int_equal(stat(path, &again), 0);
    assert_int_equal(again.st_ino, first.st_ino);

    pods[2]->containers[0].state = CONTAINER_TERMINATED;   /* the watcher's process ends */
    fg_sim_gpus_tick(&k);
    assert_int_equal(stat(path, &again), 0);
    assert_true(again.st_ino != first.st_ino);
    assert_false(exists(root, pid));
    assert_true(exists(root, fg_sim_container_pid(pods[0]->uid, "main", 0)));
    st = json_object_from_file(path);
    json_object *g2 = json_object_array_get_idx(fg_json_get(st, "gpus", NULL), 2);
    int64_t util = -1;
    fg_json_get_int64(g2, &util, "util", NULL);
    assert_int_equal(util, 15);   /* frac's, and both's nothing */
    json_object_put(st);
    cfg.kubelet.gpu_state = FG_SIM_GPU_STATE_MEMORY;
    assert_int_equal(fg_remove_tree(root), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which_gpus),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
