/*
 * e2e_sim_node — fracgpu on the node, as a user and a scheduler see it, on a simulated cluster of
 * three GPU nodes of four GPUs (testdata/node-e2e.yaml: one node group per device-list form, so each
 * node's host files say how its containers get a GPU). The real kubectl installs fracgpu with
 * `kubectl apply -k manifests/`: the operator creates the grant key's Secret and a node agent runs on
 * every node. The test plays fracgpu's scheduler itself (the operator runs with --no-scheduler), so that
 * each node-side case is set up exactly: it creates pods
 * with `schedulerName: fracgpu-scheduler`, `fracgpu.io/gpu-share: 1` and the allocation annotations,
 * and binds them through the pods/binding subresource with fracgpu.io/gpu-uuid and a
 * fracgpu.io/grant signed with the key read from the Secret. It shows:
 *   1. every node's kubelet registers fracgpu's device plugin: the Node's allocatable gains
 *      fracgpu.io/gpu-share 192 (4 GPUs × 48 slots) and each agent found its node's form;
 *   2. capacity pods (nvidia.com/gpu: 1, run by the real `fracgpu capacity-holder`) annotate
 *      themselves with the GPU the kubelet gave them and the memory tenants may have of it, the fake
 *      NVML's total less its reservation and one context's overhead;
 *   3. a Binding's annotations land on the pod (as kube-apiserver copies them), and a pod granted
 *      on a capacity pod's GPU runs with exactly that GPU in its node's form — the CDI device name,
 *      the volume mount under /var/run/nvidia-container-devices, or NVIDIA_VISIBLE_DEVICES — and
 *      nothing else (its devices.json, what the kubelet got from the plugin);
 *   4. a pod a user creates with spec.nodeName and a granted pod's annotations, grant included,
 *      fails admission (Failed, UnexpectedAdmissionError naming the grant), holds no device, and
 *      gets a GrantRefused Event; created just before a granted pod is bound to the same node, so
 *      that the two are admitted at the same moment, it is removed within a second of its creation
 *      (GrantViolation) while the granted pod keeps its GPU and runs;
 *   5. an mps capacity pod starts the stand-in MPS daemon with the limits asked (its limits file in
 *      the GPU's pipe directory), and an mps tenant on that GPU receives that pipe directory;
 *   6. a kubelet restart (the kubelets component killed) leads every agent to register again, the
 *      running tenants stay, and a pod bound afterwards is admitted;
 *   7. a node agent restart (its pod deleted; the DaemonSet makes another) loses nothing: the running
 *      tenants are adopted, not removed, and a new granted pod is admitted;
 *   8. usage driven on pods (sim.fracgpu.io/gpu-sm, gpu-memory) is read back per pod through a real
 *      Prometheus scraping every node agent, a pod that holds no GPU request included.
 * Every wait is bounded and, when it runs out, fails with the pod's status and Events, the node
 * agent's log and the kubelets' lines about the pod. The measured figures (the impostor's removal,
 * the agents' registration and the kubelets' slots after the kubelets' restart, the whole run) are
 * printed at the end. FG_KEEP_SIM=1 keeps the cluster's directories.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/test/node_fixture.h"
#include "e2e/cluster/test/node_pods.h"
#include "e2e/cluster/test/prom_fixture.h"
#include "reconcilers/podcontract.h"

#define SLOTS_PER_NODE "192"          /* 4 GPUs × the plugin's 48 slots */
#define REGISTERED "registered " FG_RES_GPU_SHARE " with the kubelet"

static struct {
    uint64_t start_ns;
    char cap_gpu[NODETEST_FORMS][NODETEST_UUID_MAX];   /* the GPU each capacity pod holds */
    char mps_gpu[NODETEST_UUID_MAX];
    double impostor_ms, reregister_ms, slots_back_ms;
    struct promtest prom;
} s;

/* Runs kubectl and fails the test, showing its output, unless it exits 0. */
#define KUBECTL(out, stdin_text, ...)                                                                \
    do {                                                                                             \
        int rc_ = fg_kubectl_run(&nt.sim.k, out, stdin_text, __VA_ARGS__, NULL);                     \
        if (rc_ != 0)                                                                                \
            fail_msg("kubectl %s: exit %d\n%s", #__VA_ARGS__, rc_, fg_buf_str(out));                \
    } while (0)

/* ---- pods ---- */

/* Creates tenant name — an mps tenant with mps's limits, else a timeslice one of 200 milli and
 * 4 GiB — binds it to gpu, held by capacity pod cap on the node of form f, waits for it to run and
 * checks what it got. */
static void run_tenant(enum nodetest_form f, const char *name, const char *gpu, const char *cap,
                       const struct nodetest_mps *mps)
{
    free(nodetest_tenant(name, mps ? mps->milli : 200, mps ? mps->mib : 4096, mps ? "mps" : "timeslice", ""));
    nodetest_bind(NODETEST_NS, name, nt.node[f], gpu, cap);
    nodetest_wait_phase(NODETEST_NS, name, nt.node[f], "Running", NODETEST_WAIT_MS);
    nodetest_check_devices(f, name, gpu, mps);
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    s.start_ns = fg_clock_mono_ns();
    return nodetest_start();
}

/* Fails when a log holds a sanitizer report or secret material; prints the measured figures. */
static int teardown(void **state)
{
    (void)state;
    promtest_stop(&s.prom);
    size_t reports = nodetest_log_problems();
    nodetest_stop(reports > 0);
    printf("e2e_sim_node: impostor removed %.0f ms after its creation; after the kubelets were killed, agents "
           "registered again in %.0f ms and the kubelets had their slots back in %.0f ms; %.1f s in all\n",
           s.impostor_ms, s.reregister_ms, s.slots_back_ms, (double)(fg_clock_mono_ns() - s.start_ns) / 1e9);
    return reports ? -1 : 0;
}

/* ---- install ---- */

static bool agents_ready(void *ud)
{
    (void)ud;
    size_t ready = 0;
    for (int f = 0; f < NODETEST_FORMS; f++) {
        json_object *a = nodetest_agent_pod(nt.node[f]);
        json_object *conds = fg_json_get(a, "status", "conditions", NULL);
        for (size_t i = 0; i < fg_json_array_len(conds); i++) {
            json_object *c = fg_json_at(conds, i);
            ready += fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready") &&
                     fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
        }
        json_object_put(a);
    }
    return ready == NODETEST_FORMS;
}

static bool grant_key_ready(void *ud)
{
    (void)ud;
    return nodetest_grant_key_ready();
}

static void test_install(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    char manifests[512];
    snprintf(manifests, sizeof manifests, "%s/manifests", getenv("FG_SOURCE_DIR"));
    KUBECTL(&out, NULL, "apply", "-k", manifests);
    /* the test places pods itself, as fracgpu's scheduler would: the operator's stays off */
    if (fg_simcluster_operator_arg(&nt.sim, "--no-scheduler", &out) != 0)
        fail_msg("cannot turn the operator's scheduler off: %s", fg_buf_str(&out));
    KUBECTL(&out, NULL, "create", "namespace", NODETEST_NS);
    if (!nodetest_wait(agents_ready, NULL, 60000)) {
        fg_kubectl_run(&nt.sim.k, &out, NULL, "get", "pods", "-n", NODETEST_SYSTEM_NS, "-o", "wide", NULL);
        nodetest_fail(NULL, NULL, nt.node[0], "the node agents are not Ready on the three nodes:\n%s",
                      fg_buf_str(&out));
    }
    if (!nodetest_wait(grant_key_ready, NULL, NODETEST_WAIT_MS)) {
        fg_kubectl_run(&nt.sim.k, &out, NULL, "logs", "-n", NODETEST_SYSTEM_NS, "deployment/fracgpu-operator", NULL);
        fail_msg("the operator wrote no key into Secret fracgpu-grant-key:\n%s", fg_buf_str(&out));
    }
    fg_buf_cleanup(&out);
}

/* ---- 1. registration ---- */

struct node_wait {
    const char *node;
};

static bool slots_allocatable(void *ud)
{
    const struct node_wait *w = ud;
    char path[192];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", w->node);
    json_object *node = nodetest_get(path);
    bool ok = fg_str_eq(fg_json_get_str(node, "status", "allocatable", FG_RES_GPU_SHARE, NULL), SLOTS_PER_NODE) &&
              fg_str_eq(fg_json_get_str(node, "status", "capacity", FG_RES_GPU_SHARE, NULL), SLOTS_PER_NODE);
    json_object_put(node);
    return ok;
}

static void wait_slots(enum nodetest_form f)
{
    struct node_wait w = { nt.node[f] };
    if (!nodetest_wait(slots_allocatable, &w, NODETEST_WAIT_MS)) {
        char path[192];
        snprintf(path, sizeof path, "/api/v1/nodes/%s", nt.node[f]);
        json_object *node = nodetest_get(path);
        nodetest_fail(NULL, NULL, nt.node[f], "node %s never had " FG_RES_GPU_SHARE " " SLOTS_PER_NODE ": %s",
                      nt.node[f], json_object_to_json_string(fg_json_get(node, "status", "allocatable", NULL)));
    }
}

static void test_registration(void **state)
{
    (void)state;
    for (int f = 0; f < NODETEST_FORMS; f++) {
        wait_slots(f);
        json_object *agent = nodetest_agent_pod(nt.node[f]);
        char *log = nodetest_agent_log(nt.node[f], agent);
        char form[96];
        snprintf(form, sizeof form, "devices in the %s form", nodetest_form_name(f));
        if (!strstr(log, REGISTERED) || !strstr(log, form))
            nodetest_fail(NULL, NULL, nt.node[f], "the agent on %s did not say \"%s\" and \"%s\"", nt.node[f],
                          REGISTERED, form);
        free(log);
        json_object_put(agent);
    }
}

/* ---- 2. capacity pods ---- */

static void test_capacity_pods(void **state)
{
    (void)state;
    for (int f = 0; f < NODETEST_FORMS; f++) {
        char name[64];
        snprintf(name, sizeof name, "capacity-%s", nodetest_group(f));
        nodetest_capacity(name, nt.node[f], "");
    }
    for (int f = 0; f < NODETEST_FORMS; f++) {
        char name[64];
        snprintf(name, sizeof name, "capacity-%s", nodetest_group(f));
        nodetest_check_capacity(f, name, s.cap_gpu[f]);
    }
}

/* ---- 3. granted pods, one per form ---- */

static void test_granted_forms(void **state)
{
    (void)state;
    static const char *const usage[NODETEST_FORMS] = {
        "\"sim.fracgpu.io/gpu-sm\":\"10\",\"sim.fracgpu.io/gpu-memory\":\"1Gi\"",
        "\"sim.fracgpu.io/gpu-sm\":\"20\",\"sim.fracgpu.io/gpu-memory\":\"2Gi\"",
        "\"sim.fracgpu.io/gpu-sm\":\"30\",\"sim.fracgpu.io/gpu-memory\":\"3Gi\"",
    };
    for (int f = 0; f < NODETEST_FORMS; f++) {
        char name[64], cap[64];
        snprintf(name, sizeof name, "tenant-%s", nodetest_group(f));
        snprintf(cap, sizeof cap, "capacity-%s", nodetest_group(f));
        free(nodetest_tenant(name, 300, 10240, "timeslice", usage[f]));
        nodetest_bind(NODETEST_NS, name, nt.node[f], s.cap_gpu[f], cap);
        /* the Binding's annotations are the pod's, as kube-apiserver copies them */
        json_object *pod = nodetest_pod(NODETEST_NS, name);
        assert_string_equal(fg_json_get_str(pod, "spec", "nodeName", NULL), nt.node[f]);
        assert_string_equal(fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_UUID, NULL), s.cap_gpu[f]);
        assert_string_equal(fg_json_get_str(pod, "metadata", "annotations", FG_ANN_CAPACITY_POD, NULL), cap);
        assert_non_null(fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_INDEX, NULL));
        const char *grant = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GRANT, NULL);
        assert_non_null(grant);
        assert_int_equal(strlen(grant), 46);   /* "v1." and the MAC in unpadded base64url */
        json_object_put(pod);
    }
    for (int f = 0; f < NODETEST_FORMS; f++) {
        char name[64];
        snprintf(name, sizeof name, "tenant-%s", nodetest_group(f));
        nodetest_wait_phase(NODETEST_NS, name, nt.node[f], "Running", NODETEST_WAIT_MS);
        nodetest_check_devices(f, name, s.cap_gpu[f], NULL);
    }
}

/* ---- 4. forged pods ---- */

/* No fracgpu.io/gpu-share device recorded for the pod, and none in its status. */
static void check_no_device(enum nodetest_form f, const char *name, const char *uid)
{
    json_object *d = nodetest_devices(nt.node[f], NODETEST_NS, name, uid);
    for (size_t i = 0; i < fg_json_array_len(d); i++)
        if (fg_str_eq(fg_json_get_str(fg_json_at(d, i), "resource", NULL), FG_RES_GPU_SHARE))
            nodetest_fail(NODETEST_NS, name, nt.node[f], "pod %s holds a device: %s", name,
                          json_object_to_json_string(d));
    json_object_put(d);
    json_object *pod = nodetest_pod(NODETEST_NS, name);
    json_object *cs = fg_json_get(pod, "status", "containerStatuses", NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++)
        assert_null(fg_json_get(fg_json_at(cs, i), "allocatedResourcesStatus", NULL));
    json_object_put(pod);
}

struct event_wait {
    const char *name, *reason, *needle;
};

static bool has_event(void *ud)
{
    const struct event_wait *w = ud;
    const char *msg = NULL;
    return nodetest_events(NODETEST_NS, w->name, w->reason, &msg) > 0 && msg && strstr(msg, w->needle);
}

static void wait_event(enum nodetest_form f, const char *name, const char *reason, const char *needle)
{
    struct event_wait w = { name, reason, needle };
    if (!nodetest_wait(has_event, &w, 10000))
        nodetest_fail(NODETEST_NS, name, nt.node[f], "no %s Event saying \"%s\" for %s", reason, needle, name);
}

static void test_forged(void **state)
{
    (void)state;
    char *uid = nodetest_forged("forged", "tenant-cdi", nt.node[NODETEST_CDI], NULL);
    nodetest_wait_phase(NODETEST_NS, "forged", nt.node[NODETEST_CDI], "Failed", NODETEST_WAIT_MS);
    json_object *pod = nodetest_pod(NODETEST_NS, "forged");
    const char *reason = fg_json_get_str(pod, "status", "reason", NULL);
    const char *msg = fg_json_get_str(pod, "status", "message", NULL);
    if (!fg_str_eq(reason, "UnexpectedAdmissionError") || !msg || !strstr(msg, FG_ANN_GRANT) ||
        !strstr(msg, "forged or altered"))
        nodetest_fail(NODETEST_NS, "forged", nt.node[NODETEST_CDI], "the forged pod failed for another reason");
    json_object_put(pod);
    check_no_device(NODETEST_CDI, "forged", uid);
    wait_event(NODETEST_CDI, "forged", "GrantRefused", "forged or altered");
    free(uid);
    /* the tenant whose grant was copied runs on */
    nodetest_wait_phase(NODETEST_NS, "tenant-cdi", nt.node[NODETEST_CDI], "Running", 1000);
}

struct gone_wait {
    const char *name, *uid;
};

static bool pod_gone(void *ud)
{
    const struct gone_wait *w = ud;
    json_object *pod = nodetest_pod(NODETEST_NS, w->name);
    bool gone = !pod || !fg_str_eq(fg_json_get_str(pod, "metadata", "uid", NULL), w->uid);
    json_object_put(pod);
    return gone;
}

/* The impostor is created first, with spec.nodeName; the granted pod just after, bound at once: the
 * kubelet admits both at the same moment, and the reply meant for the granted pod may go to the
 * impostor. The agent's audit must find it and remove it. */
static void test_forged_race(void **state)
{
    (void)state;
    const enum nodetest_form f = NODETEST_MOUNTS;
    uint64_t t0 = 0;
    char *uid = nodetest_forged("impostor", "tenant-mounts", nt.node[f], &t0);
    free(nodetest_tenant("racer", 300, 10240, "timeslice", ""));
    nodetest_bind(NODETEST_NS, "racer", nt.node[f], s.cap_gpu[f], "capacity-mounts");
    struct gone_wait w = { "impostor", uid };
    if (!nodetest_wait(pod_gone, &w, 10000))
        nodetest_fail(NODETEST_NS, "impostor", nt.node[f], "the impostor was not removed");
    s.impostor_ms = (double)(fg_clock_mono_ns() - t0) / 1e6;
    wait_event(f, "impostor", "GrantViolation", "allocated to " NODETEST_NS "/racer");
    if (s.impostor_ms > 1000)
        nodetest_fail(NODETEST_NS, "impostor", nt.node[f], "the impostor was removed %.0f ms after its creation",
                      s.impostor_ms);
    nodetest_wait_phase(NODETEST_NS, "racer", nt.node[f], "Running", NODETEST_WAIT_MS);
    nodetest_check_devices(f, "racer", s.cap_gpu[f], NULL);
    free(uid);
}

/* ---- 5. MPS ---- */

static bool file_exists(void *ud)
{
    return access(ud, F_OK) == 0;
}

static void test_mps(void **state)
{
    (void)state;
    const enum nodetest_form f = NODETEST_CDI;
    const struct nodetest_mps mps = { 250, 8192 };   /* a quarter of the SMs, 8 GiB */
    char ann[256];
    snprintf(ann, sizeof ann, "\"" FG_ANN_SHARING "\":\"mps\",\"" FG_ANN_COMPUTE_MILLI "\":\"%d\",\"" FG_ANN_MEMORY_MIB
             "\":\"%d\"", mps.milli, mps.mib);
    nodetest_capacity("capacity-mps", nt.node[f], ann);
    nodetest_check_capacity(f, "capacity-mps", s.mps_gpu);
    assert_string_not_equal(s.mps_gpu, s.cap_gpu[f]);

    char path[512];   /* the stand-in daemon's record of its limits, in the GPU's pipe directory */
    snprintf(path, sizeof path, "%s/nodes/%s/run/fracgpu/mps/%s/pipe/fracgpu-sim-limits.json", nt.work, nt.node[f],
             s.mps_gpu);
    if (!nodetest_wait(file_exists, path, NODETEST_WAIT_MS))
        nodetest_fail(NODETEST_SYSTEM_NS, "capacity-mps", nt.node[f], "no MPS daemon's limits file at %s", path);
    json_object *limits = json_object_from_file(path);
    assert_non_null(limits);
    double pct = json_object_get_double(fg_json_get(limits, "default_active_thread_percentage", NULL));
    char want[32];
    snprintf(want, sizeof want, "%dM", mps.mib);
    if (pct != mps.milli / 10 || !fg_str_eq(fg_json_get_str(limits, "visible_devices", NULL), s.mps_gpu) ||
        !fg_str_eq(fg_json_get_str(limits, "default_device_pinned_mem_limit", s.mps_gpu, NULL), want))
        nodetest_fail(NODETEST_SYSTEM_NS, "capacity-mps", nt.node[f], "the MPS daemon holds %s",
                      json_object_to_json_string(limits));
    json_object_put(limits);

    run_tenant(f, "tenant-mps", s.mps_gpu, "capacity-mps", &mps);
}

/* ---- 6. a kubelet restart ---- */

struct register_wait {
    size_t before[NODETEST_FORMS][2];   /* the agents' "registering again" and registrations */
};

/* How many times the agent on f's node said it registers again, and that it registered. */
static void registrations(enum nodetest_form f, size_t n[2])
{
    json_object *agent = nodetest_agent_pod(nt.node[f]);
    char *log = nodetest_agent_log(nt.node[f], agent);
    n[0] = nodetest_count(log, "registering again");
    n[1] = nodetest_count(log, REGISTERED);
    free(log);
    json_object_put(agent);
}

static bool node_registered_again(const struct register_wait *w, enum nodetest_form f)
{
    size_t n[2];
    registrations(f, n);
    return n[0] > w->before[f][0] && n[1] > w->before[f][1];
}

static bool registered_again(void *ud)
{
    for (int f = 0; f < NODETEST_FORMS; f++)
        if (!node_registered_again(ud, f))
            return false;
    return true;
}

/* The kubelet of each node (or of node `only`, when not -1) said it has all the slots again since
 * `before` such reports. */
struct slots_wait {
    size_t before[NODETEST_FORMS];
    int only;
};

static bool node_slots_back(const struct slots_wait *w, enum nodetest_form f)
{
    size_t reports = 0;
    return nodetest_kubelet_slots(nt.node[f], &reports) == atol(SLOTS_PER_NODE) && reports > w->before[f];
}

static bool slots_back(void *ud)
{
    const struct slots_wait *w = ud;
    for (int f = 0; f < NODETEST_FORMS; f++)
        if ((w->only < 0 || w->only == f) && !node_slots_back(w, f))
            return false;
    return true;
}

static bool kubelets_restarted(void *ud)
{
    pid_t pid = nodetest_kubelets_pid();
    return pid > 0 && pid != *(pid_t *)ud;
}

/* The tenants that run throughout: each still Running, with the same UID. */
static void check_tenants_run(const char *const *names, char uids[][40], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_object *pod = nodetest_pod(NODETEST_NS, names[i]);
        if (!pod || !fg_str_eq(fg_json_get_str(pod, "metadata", "uid", NULL), uids[i]) ||
            !fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running"))
            nodetest_fail(NODETEST_NS, names[i], fg_json_get_str(pod, "spec", "nodeName", NULL),
                          "tenant %s did not run on", names[i]);
        json_object_put(pod);
        assert_int_equal(nodetest_events(NODETEST_NS, names[i], "GrantViolation", NULL), 0);
    }
}

static const char *const running[] = { "tenant-cdi", "tenant-mounts", "tenant-env", "racer", "tenant-mps" };
#define NRUNNING (sizeof running / sizeof running[0])

static void test_kubelet_restart(void **state)
{
    (void)state;
    char uids[NRUNNING][40];
    for (size_t i = 0; i < NRUNNING; i++) {
        char *uid = nodetest_uid(NODETEST_NS, running[i]);
        snprintf(uids[i], sizeof uids[i], "%s", uid);
        free(uid);
    }
    struct register_wait w;
    struct slots_wait sw = { .only = -1 };
    for (int f = 0; f < NODETEST_FORMS; f++) {
        registrations(f, w.before[f]);
        nodetest_kubelet_slots(nt.node[f], &sw.before[f]);
    }
    pid_t old = nodetest_kubelets_pid();
    assert_true(old > 0);
    uint64_t t0 = fg_clock_mono_ns();
    assert_int_equal(kill(old, SIGKILL), 0);
    if (!nodetest_wait(kubelets_restarted, &old, NODETEST_WAIT_MS))
        fail_msg("the supervisor did not start the kubelets again");
    if (!nodetest_wait(registered_again, &w, NODETEST_WAIT_MS)) {
        int late = 0;
        while (late < NODETEST_FORMS - 1 && node_registered_again(&w, late))
            late++;
        nodetest_fail(NULL, NULL, nt.node[late], "the agent on %s did not say it registers again, then registered, "
                      "after the kubelets restarted", nt.node[late]);
    }
    s.reregister_ms = (double)(fg_clock_mono_ns() - t0) / 1e6;
    /* fracgpu's scheduler would bind once the Node shows the slots; here the Node's status kept them
     * all along, so what the kubelet says is what tells when it admits a share again */
    if (!nodetest_wait(slots_back, &sw, NODETEST_WAIT_MS)) {
        int late = 0;
        while (late < NODETEST_FORMS - 1 && node_slots_back(&sw, late))
            late++;
        nodetest_fail(NULL, NULL, nt.node[late], "the kubelet of %s did not get its " SLOTS_PER_NODE " slots back",
                      nt.node[late]);
    }
    s.slots_back_ms = (double)(fg_clock_mono_ns() - t0) / 1e6;
    for (int f = 0; f < NODETEST_FORMS; f++)
        wait_slots(f);
    check_tenants_run(running, uids, NRUNNING);
    run_tenant(NODETEST_ENV, "after-kubelet", s.cap_gpu[NODETEST_ENV], "capacity-env", NULL);
}

/* ---- 7. a node agent restart ---- */

struct agent_wait {
    const char *node, *old_uid;
};

static bool new_agent_ready(void *ud)
{
    const struct agent_wait *w = ud;
    json_object *a = nodetest_agent_pod(w->node);
    bool ok = a && !fg_str_eq(fg_json_get_str(a, "metadata", "uid", NULL), w->old_uid);
    json_object *conds = fg_json_get(a, "status", "conditions", NULL);
    bool ready = false;
    for (size_t i = 0; ok && i < fg_json_array_len(conds); i++) {
        json_object *c = fg_json_at(conds, i);
        ready = ready || (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready") &&
                          fg_str_eq(fg_json_get_str(c, "status", NULL), "True"));
    }
    json_object_put(a);
    return ok && ready;
}

/* The agent on node (ud) took at least two running pods into its ledger, in one audit or more. */
static bool adopted_two(void *ud)
{
    json_object *agent = nodetest_agent_pod(ud);
    char *log = nodetest_agent_log(ud, agent);
    static const char said[] = "\"took ";
    unsigned long n = 0;
    for (const char *p = log; (p = strstr(p, said)); p += strlen(said)) {
        char *end = NULL;
        unsigned long k = strtoul(p + strlen(said), &end, 10);
        if (fg_str_has_prefix(end, " running pod"))
            n += k;
    }
    free(log);
    json_object_put(agent);
    return n >= 2;
}

static void test_agent_restart(void **state)
{
    (void)state;
    const enum nodetest_form f = NODETEST_MOUNTS;
    static const char *const here[] = { "tenant-mounts", "racer" };
    char uids[2][40];
    for (size_t i = 0; i < 2; i++) {
        char *uid = nodetest_uid(NODETEST_NS, here[i]);
        snprintf(uids[i], sizeof uids[i], "%s", uid);
        free(uid);
    }
    json_object *agent = nodetest_agent_pod(nt.node[f]);
    assert_non_null(agent);
    char old_uid[40];
    snprintf(old_uid, sizeof old_uid, "%s", fg_json_get_str(agent, "metadata", "uid", NULL));
    struct slots_wait sw = { .only = f };
    nodetest_kubelet_slots(nt.node[f], &sw.before[f]);
    nodetest_delete_pod(NODETEST_SYSTEM_NS, fg_json_get_str(agent, "metadata", "name", NULL));
    json_object_put(agent);
    struct agent_wait w = { nt.node[f], old_uid };
    if (!nodetest_wait(new_agent_ready, &w, 60000))
        nodetest_fail(NULL, NULL, nt.node[f], "the DaemonSet brought no new Ready agent to %s", nt.node[f]);
    /* the kubelet lost the slots with the old agent's stream, and has them again from the new one */
    if (!nodetest_wait(slots_back, &sw, NODETEST_WAIT_MS))
        nodetest_fail(NULL, NULL, nt.node[f], "the kubelet of %s did not get the slots back from the new agent",
                      nt.node[f]);
    wait_slots(f);
    run_tenant(f, "after-agent", s.cap_gpu[f], "capacity-mounts", NULL);
    /* the new agent audits 300 ms after its grant: the two tenants it finds holding slots are adopted */
    if (!nodetest_wait(adopted_two, nt.node[f], 15000))
        nodetest_fail(NULL, NULL, nt.node[f], "the new agent did not take the two running tenants into its ledger");
    check_tenants_run(here, uids, 2);
    agent = nodetest_agent_pod(nt.node[f]);
    char *log = nodetest_agent_log(nt.node[f], agent);
    if (strstr(log, "removing it"))
        nodetest_fail(NULL, NULL, nt.node[f], "the new agent removed a pod");
    free(log);
    json_object_put(agent);
}

/* ---- 8. usage through Prometheus ---- */

struct series_want {
    const char *pod, *node, *gpu;
    const char *memory, *utilization;   /* the values Prometheus shows */
};

/* Whether Prometheus has the two series of w with their values; `last` gets what it said. */
static bool series_match(const struct series_want *w, struct fg_buf *last)
{
    static const char *const metrics[] = { "fracgpu_pod_gpu_memory_used_bytes", "fracgpu_pod_gpu_utilization_ratio" };
    const char *values[] = { w->memory, w->utilization };
    bool ok = true;
    for (int m = 0; m < 2; m++) {
        char q[256];
        snprintf(q, sizeof q, "%s{namespace=\"" NODETEST_NS "\",pod=\"%s\"}", metrics[m], w->pod);
        json_object *r = promtest_query(&s.prom, q);
        json_object *metric = fg_json_get(fg_json_at(r, 0), "metric", NULL);
        json_object *value = fg_json_get(fg_json_at(r, 0), "value", NULL);
        ok = ok && fg_json_array_len(r) == 1 && fg_str_eq(fg_json_get_str(metric, "node", NULL), w->node) &&
             fg_str_eq(fg_json_get_str(metric, "uuid", NULL), w->gpu) &&
             fg_str_eq(fg_json_get_str(metric, "container", NULL), "main") &&
             fg_str_eq(json_object_get_string(fg_json_at(value, 1)), values[m]);
        fg_buf_reset(last);
        fg_buf_put_str(last, r ? json_object_to_json_string(r) : "(no answer)");
        json_object_put(r);
    }
    return ok;
}

struct prom_wait {
    const struct series_want *w;
    struct fg_buf *last;
};

static bool series_there(void *ud)
{
    const struct prom_wait *p = ud;
    return series_match(p->w, p->last);
}

static void test_usage_prometheus(void **state)
{
    (void)state;
    const enum nodetest_form f = NODETEST_ENV;
    /* a pod that holds no GPU request and uses the env node's shared GPU all the same */
    char *json = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"notebook\",\"annotations\":{"
        "\"sim.fracgpu.io/gpu-uuid\":\"%s\",\"sim.fracgpu.io/gpu-sm\":\"15\",\"sim.fracgpu.io/gpu-memory\":\"512Mi\"}},"
        "\"spec\":{\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"},\"containers\":[{\"name\":\"main\","
        "\"image\":\"registry.example.com/notebook:1\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
        s.cap_gpu[f], nt.node[f]);
    json_object_put(nodetest_create_pod(NODETEST_NS, json));
    free(json);
    nodetest_wait_phase(NODETEST_NS, "notebook", nt.node[f], "Running", NODETEST_WAIT_MS);

    char targets[NODETEST_FORMS][64];
    const char *tp[NODETEST_FORMS];
    for (int n = 0; n < NODETEST_FORMS; n++) {
        json_object *agent = nodetest_agent_pod(nt.node[n]);
        const char *ip = fg_json_get_str(agent, "status", "podIP", NULL);
        assert_non_null(ip);
        snprintf(targets[n], sizeof targets[n], "%s:9402", ip);
        tp[n] = targets[n];
        json_object_put(agent);
    }
    promtest_start(&s.prom, nt.sim.dir, "fracgpu-node-agent", tp, NODETEST_FORMS);
    const struct series_want want[] = {
        { "tenant-cdi", nt.node[NODETEST_CDI], s.cap_gpu[NODETEST_CDI], "1073741824", "0.1" },
        { "tenant-mounts", nt.node[NODETEST_MOUNTS], s.cap_gpu[NODETEST_MOUNTS], "2147483648", "0.2" },
        { "tenant-env", nt.node[NODETEST_ENV], s.cap_gpu[NODETEST_ENV], "3221225472", "0.3" },
        { "notebook", nt.node[NODETEST_ENV], s.cap_gpu[NODETEST_ENV], "536870912", "0.15" },
    };
    struct fg_buf last, log;
    fg_buf_init(&last, 0);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct prom_wait p = { &want[i], &last };
        if (!nodetest_wait(series_there, &p, 45000)) {
            fg_buf_init(&log, 0);
            promtest_log(&s.prom, &log);
            fprintf(stderr, "Prometheus' log:\n%s\n", fg_buf_str(&log));
            fg_buf_cleanup(&log);
            nodetest_fail(NODETEST_NS, want[i].pod, want[i].node,
                          "Prometheus never showed %s using %s bytes and %s of GPU %s on %s; it said %s", want[i].pod,
                          want[i].memory, want[i].utilization, want[i].gpu, want[i].node, fg_buf_str(&last));
        }
    }
    fg_buf_cleanup(&last);
    promtest_stop(&s.prom);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_registration),
        cmocka_unit_test(test_capacity_pods),
        cmocka_unit_test(test_granted_forms),
        cmocka_unit_test(test_forged),
        cmocka_unit_test(test_forged_race),
        cmocka_unit_test(test_mps),
        cmocka_unit_test(test_kubelet_restart),
        cmocka_unit_test(test_agent_restart),
        cmocka_unit_test(test_usage_prometheus),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
