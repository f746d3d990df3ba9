/*
 * The device plugin in a real `fracgpu node-agent` process, against the test API server, the fake
 * NVML (two GPUs) and the kubelet's device manager played over the real gRPC (e2e/devicemanager):
 *   - it registers fracgpu.io/gpu-share and advertises 48 healthy slots per GPU;
 *   - a pod whose grant verifies gets exactly its GPU (env form), on a slot of that GPU;
 *   - a pod with annotations copied from a granted pod is refused (PERMISSION_DENIED, a GrantRefused
 *     Event), and when it is admitted first with the granted pod waiting, the kubelet's records show it
 *     holding the granted pod's slot: it is deleted within a second and the granted pod is served;
 *   - a GPU that fails has its slots re-sent Unhealthy and a pod granted on it is refused; one that
 *     vanishes takes its slots along, and they come back with it;
 *   - Allocate for devices it never advertised, or with a body that is not an AllocateRequest, is
 *     INVALID_ARGUMENT; garbage on its socket harms nobody;
 *   - a kubelet restart (sockets removed, kubelet.sock re-created) leads to a new registration;
 *   - a restarted agent adopts the pods it had granted (none removed) before it serves anything, so
 *     the first pod admitted after it, granted another GPU, gets that GPU and not the one of a pod
 *     admitted before (which still looks waiting: no start time); it detects CDI in --cdi-spec-dirs
 *     and answers with the CDI device; an mps tenant gets its GPU's MPS pipe and limits;
 *   - a key rotation keeps grants of the previous key valid; a deleted key Secret refuses everything;
 *   - a pod the kubelet admits before the agent's watch shows it is refused, saying so; shown bound at
 *     last, it is not served to the next pod admitted (which would then hold its GPU, and every pod
 *     after it the grant of the one before): Allocate waits until the kubelet's failure of that pod
 *     is seen;
 *   - GetPreferredAllocation for a pod whose grant the agent has not seen yet waits for it, and
 *     offers slots of the granted GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/devicemanager/devicemanager.h"
#include "e2e/tests/harness.h"
#include "exporter/test/fake_state.h"
#include "nodeagent/grpc/client.h"
#include "nodeagent/grpc/kubelet.h"
#include "operator/kube/loop.h"
#include "reconcilers/grant.h"
#include "reconcilers/podcontract.h"

extern char **environ;

#define NODE "gpu-node-1"
#define NS "ml"
#define SYS "fracgpu-system"
#define GPU1 "GPU-5f2c1d9e-0000-4000-8000-000000000001"
#define GPU2 "GPU-5f2c1d9e-0000-4000-8000-000000000002"
#define SHARE "fracgpu.io/gpu-share"
#define GPU_STATE                                                                                              \
    "{\"gpus\":[{\"uuid\":\"" GPU1 "\",\"name\":\"NVIDIA A100-SXM4-80GB\",\"total\":85899345920,\"used\":0,\"util\":0}," \
    "{\"uuid\":\"" GPU2 "\",\"name\":\"NVIDIA A100-SXM4-80GB\",\"total\":85899345920,\"used\":0,\"util\":0}]}"

static const unsigned char key1[32] = "first grant key for plugin tests";
static const unsigned char key2[32] = "second grant key after rotation!";

struct env {
    struct fg_harness h;
    char dir[64];
    char dp_dir[128], podres[128], mps_root[128], host_root[128], cdi_dirs[300], log[160];
    struct fg_dm *dm;
    pid_t agent;
};

static struct env E;

/* ---- the device manager, on the harness's loop thread ---- */

struct dm_new_step {
    struct env *e;
    enum fg_err err;
    char msg[FG_ERRMSG_MAX];
};

static void dm_new_on_loop(void *ud)
{
    struct dm_new_step *s = ud;
    struct fg_dm_opts o = { s->e->dp_dir, s->e->podres };
    s->err = fg_dm_new(fg_kube_loop_base(s->e->h.loop), &o, &s->e->dm, s->msg);
}

static void dm_free_on_loop(void *ud)
{
    fg_dm_free(ud);
}

static void dm_restart_on_loop(void *ud)
{
    assert_int_equal(fg_dm_restart(ud, NULL), FG_OK);
}

struct probe {
    unsigned registrations;
    bool streaming;
    size_t devices, healthy;
};

static void probe_on_loop(void *ud)
{
    struct probe *p = ud;
    p->registrations = fg_dm_registrations(E.dm);
    p->streaming = fg_dm_resource(E.dm, SHARE, &p->devices, &p->healthy);
}

static struct probe probe(void)
{
    struct probe p;
    assert_int_equal(fg_kube_loop_call_wait(E.h.loop, probe_on_loop, &p, 5000), FG_OK);
    return p;
}

/* What the kubelet got for one container when it admitted a pod. */
struct admission {
    enum fg_grpc_status status;
    char message[1024];
    char device[128];
    char env_visible[256], env_pipe[256], cdi[256], mount_pipe[256];
};

static void read_done(void *ud)
{
    (void)ud; /* a round trip through the loop: what its callbacks wrote is visible afterwards */
}

/* The kubelet admits pod (name, uid) of NS: one slot for its container, the plugin's answer awaited. */
static struct admission admit(const char *name, const char *uid)
{
    struct fg_dm_result r;
    struct admission a = { 0 };
    assert_int_equal(fg_dm_allocate_wait(E.h.loop, E.dm, NS, name, uid, "main", SHARE, 1, 10000, &r), FG_OK);
    a.status = r.status;
    snprintf(a.message, sizeof(a.message), "%s", r.message);
    if (r.reply) {
        const char *v = fg_dm_reply_env(r.reply, "NVIDIA_VISIBLE_DEVICES"), *pipe = fg_dm_reply_env(r.reply, "CUDA_MPS_PIPE_DIRECTORY");
        snprintf(a.device, sizeof(a.device), "%s", r.n ? r.device_ids[0] : "");
        snprintf(a.env_visible, sizeof(a.env_visible), "%s", v ? v : "");
        snprintf(a.env_pipe, sizeof(a.env_pipe), "%s", pipe ? pipe : "");
        if (r.reply->n_cdi_devices)
            snprintf(a.cdi, sizeof(a.cdi), "%s", r.reply->cdi_devices[0]->name);
        for (size_t i = 0; i < r.reply->n_mounts; i++)
            if (!strcmp(r.reply->mounts[i]->container_path, "/tmp/nvidia-mps"))
                snprintf(a.mount_pipe, sizeof(a.mount_pipe), "%s", r.reply->mounts[i]->host_path);
    }
    fg_dm_result_cleanup(&r);
    return a;
}

/* ---- the cluster ---- */

static void put_secret(const unsigned char *key, const unsigned char *previous)
{
    char *k = fg_base64_encode(key, 32), *p = previous ? fg_base64_encode(previous, 32) : NULL;
    char *json = fg_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"" FG_SECRET_GRANT_KEY
                             "\",\"namespace\":\"" SYS "\"},\"data\":{\"key\":\"%s\"%s%s%s}}",
                             k, p ? ",\"previous\":\"" : "", p ? p : "", p ? "\"" : "");
    json_object *obj = json_tokener_parse(json);
    const char *path = "/api/v1/namespaces/" SYS "/secrets/" FG_SECRET_GRANT_KEY;
    if (fg_kube_update(E.h.client, path, obj, NULL, NULL) != FG_OK)
        assert_int_equal(fg_kube_create(E.h.client, "/api/v1/namespaces/" SYS "/secrets", obj, NULL, NULL), FG_OK);
    json_object_put(obj);
    free(json), free(k), free(p);
}

/* Creates a pending pod on NODE asking for a share; returns its UID (static buffer per call site). */
static void make_pod(const char *name, char uid[64])
{
    char *json = fg_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"" NS
                             "\"},\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"main\",\"image\":\"x\","
                             "\"resources\":{\"limits\":{\"" SHARE "\":\"1\"}}}]}}",
                             name);
    json_object *obj = json_tokener_parse(json), *out = NULL;
    assert_int_equal(fg_kube_create(E.h.client, "/api/v1/namespaces/" NS "/pods", obj, &out, NULL), FG_OK);
    snprintf(uid, 64, "%s", fg_json_get_str(out, "metadata", "uid", NULL));
    json_object_put(obj), json_object_put(out);
    free(json);
}

/* Writes the placement annotations on pod `name`, signed for `for_uid` under key (the scheduler's
 * Binding does this in production). */
static void place(const char *name, const char *for_uid, const char *gpu, const unsigned char *key, const char *sharing)
{
    struct fg_grant g = { for_uid, NODE, gpu, 300, 8192 };
    char grant[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, key, 32, grant), FG_OK);
    char *patch = fg_asprintf("{\"metadata\":{\"annotations\":{\"" FG_ANN_GPU_UUID "\":\"%s\",\"" FG_ANN_COMPUTE_MILLI
                              "\":\"300\",\"" FG_ANN_MEMORY_MIB "\":\"8192\",\"" FG_ANN_SHARING "\":\"%s\",\"" FG_ANN_GRANT
                              "\":\"%s\"}}}",
                              gpu, sharing, grant);
    char *path = fg_asprintf("/api/v1/namespaces/" NS "/pods/%s", name);
    assert_int_equal(fg_kube_patch(E.h.client, path, FG_KUBE_PATCH_MERGE, patch, NULL, NULL), FG_OK);
    free(patch), free(path);
    /* a kubelet admits a pod once its own watch shows it bound; give the agent's watch as long */
    fg_test_sleep_ms(200);
}

/* What the kubelet writes on a pod whose admission failed: phase Failed, UnexpectedAdmissionError and
 * the plugin's answer in kube's words. */
static void fail_admission(const char *name, const char *answer)
{
    char *message = fg_asprintf("Allocate failed due to rpc error: code = PermissionDenied desc = %s, which is "
                                "unexpected",
                                answer);
    json_object *patch = json_object_new_object(), *st = fg_json_ensure_obj(patch, "status");
    json_object_object_add(st, "phase", json_object_new_string("Failed"));
    json_object_object_add(st, "reason", json_object_new_string("UnexpectedAdmissionError"));
    json_object_object_add(st, "message", json_object_new_string(message));
    char *path = fg_asprintf("/api/v1/namespaces/" NS "/pods/%s/status", name);
    assert_int_equal(fg_kube_patch(E.h.client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, NULL),
                     FG_OK);
    json_object_put(patch);
    free(path), free(message);
}

static bool pod_exists(const char *name)
{
    char *path = fg_asprintf("/api/v1/namespaces/" NS "/pods/%s", name);
    json_object *pod = NULL;
    enum fg_err err = fg_kube_get(E.h.client, path, &pod, NULL);
    json_object_put(pod);
    free(path);
    return err == FG_OK;
}

static bool event_about(const char *pod, const char *reason)
{
    json_object *list = NULL;
    bool found = false;
    if (fg_kube_get(E.h.client, "/api/v1/namespaces/" NS "/events", &list, NULL) != FG_OK)
        return false;
    json_object *items = fg_json_get(list, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items) && !found; i++) {
        json_object *ev = json_object_array_get_idx(items, i);
        found = fg_str_eq(fg_json_get_str(ev, "involvedObject", "name", NULL), pod) &&
                fg_str_eq(fg_json_get_str(ev, "reason", NULL), reason);
    }
    json_object_put(list);
    return found;
}

/* ---- the agent ---- */

static void agent_start(const char *strategy)
{
    static unsigned n;
    snprintf(E.log, sizeof(E.log), "%s/agent-%u.log", E.dir, ++n);
    char proc[96];
    snprintf(proc, sizeof(proc), "%s/proc", E.dir);
    const char *argv[] = { FG_FRACGPU, "node-agent", "--node-name", NODE, "--kubeconfig", E.h.kubeconfig,
                           "--nvml-lib", FG_FAKE_NVML_PATH, "--proc-root", proc, "--interval", "200ms",
                           "--listen", "127.0.0.1:0", "--device-plugin-dir", E.dp_dir,
                           "--pod-resources-socket", E.podres, "--mps-root", E.mps_root,
                           "--grant-key-namespace", SYS, "--cdi-spec-dirs", E.cdi_dirs,
                           "--device-list-strategy", strategy, NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, E.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    assert_int_equal(posix_spawn(&E.agent, FG_FRACGPU, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
}

static void agent_stop(void)
{
    if (!E.agent)
        return;
    kill(E.agent, SIGTERM);
    int st = 0;
    for (int i = 0; i < 500 && waitpid(E.agent, &st, WNOHANG) == 0; i++)
        fg_test_sleep_ms(20);
    if (kill(E.agent, 0) == 0) {
        kill(E.agent, SIGKILL);
        waitpid(E.agent, &st, 0);
    }
    E.agent = 0;
}

static bool log_has(const char *text)
{
    struct fg_buf b = FG_BUF_INIT;
    bool has = fg_buf_read_file(&b, E.log, NULL) == FG_OK && strstr(fg_buf_str(&b), text);
    fg_buf_cleanup(&b);
    return has;
}

static void dump_log(void)
{
    struct fg_buf b = FG_BUF_INIT;
    if (fg_buf_read_file(&b, E.log, NULL) == FG_OK)
        fprintf(stderr, "---- node agent log ----\n%s\n", fg_buf_str(&b));
    fg_buf_cleanup(&b);
}

/* Waits until the plugin has registered more than `after` times and streams its slots. */
static void wait_registered(unsigned after)
{
    for (int i = 0; i < 500; i++) {
        struct probe p = probe();
        if (p.registrations > after && p.streaming && p.healthy == 2 * 48)
            return;
        fg_test_sleep_ms(20);
    }
    dump_log();
    struct probe p = probe();
    fail_msg("not registered: %u registrations, streaming %d, %zu devices (%zu healthy)", p.registrations, p.streaming,
             p.devices, p.healthy);
}

/* Waits until the kubelet's list of slots has devices entries, healthy of them healthy. */
static void wait_slots(size_t devices, size_t healthy)
{
    for (int i = 0; i < 250; i++) {
        struct probe p = probe();
        if (p.devices == devices && p.healthy == healthy)
            return;
        fg_test_sleep_ms(20);
    }
    struct probe p = probe();
    fail_msg("the kubelet sees %zu slots (%zu healthy), not %zu (%zu)", p.devices, p.healthy, devices, healthy);
}

static int setup(void **state)
{
    (void)state;
    memset(&E, 0, sizeof(E));
    fg_log_set_level(FG_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fg_test_fake_dir(E.dir);
    snprintf(E.dp_dir, sizeof(E.dp_dir), "%s/device-plugins", E.dir);
    snprintf(E.podres, sizeof(E.podres), "%s/podres.sock", E.dir);
    snprintf(E.mps_root, sizeof(E.mps_root), "%s/mps", E.dir);
    snprintf(E.host_root, sizeof(E.host_root), "%s/host", E.dir);
    snprintf(E.cdi_dirs, sizeof(E.cdi_dirs), "%s/etc/cdi,%s/var/run/cdi", E.host_root, E.host_root);
    assert_int_equal(fg_mkdir_p(E.dp_dir), 0);
    assert_int_equal(fg_mkdir_p(E.host_root), 0);
    fg_test_fake_state(E.dir, GPU_STATE);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&E.h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    assert_int_equal(fg_harness_namespace(&E.h, NS), FG_OK);
    assert_int_equal(fg_harness_namespace(&E.h, SYS), FG_OK);
    struct dm_new_step s = { &E, FG_OK, "" };
    assert_int_equal(fg_kube_loop_call_wait(E.h.loop, dm_new_on_loop, &s, 5000), FG_OK);
    if (s.err)
        fail_msg("device manager: %s", s.msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    agent_stop();
    assert_int_equal(fg_kube_loop_call_wait(E.h.loop, dm_free_on_loop, E.dm, 5000), FG_OK);
    fg_harness_stop(&E.h);
    fg_test_fake_rm(E.dir);
    curl_global_cleanup();
    return 0;
}

/* ---- the scenarios ---- */

static void grants_and_refusals(void **state)
{
    (void)state;
    put_secret(key1, NULL);
    agent_start("envvar");
    wait_registered(0);

    char uid[64];
    make_pod("granted", uid);
    place("granted", uid, GPU2, key1, "timeslice");
    struct admission a = admit("granted", uid);
    if (a.status != FG_GRPC_OK)
        dump_log();
    assert_int_equal(a.status, FG_GRPC_OK);
    assert_string_equal(a.env_visible, GPU2);
    assert_true(fg_str_has_prefix(a.device, GPU2 "::")); /* the preferred slot is on its GPU */

    /* the same annotations on a pod of one's own: refused, with an Event */
    char fuid[64];
    make_pod("forged", fuid);
    place("forged", uid, GPU2, key1, "timeslice");
    struct admission f = admit("forged", fuid);
    assert_int_equal(f.status, FG_GRPC_PERMISSION_DENIED);
    assert_non_null(strstr(f.message, "ml/forged: grant forged or altered"));
    for (int i = 0; i < 250 && !event_about("forged", "GrantRefused"); i++)
        fg_test_sleep_ms(20);
    assert_true(event_about("forged", "GrantRefused"));

    /* admitted together, the forged pod first: it is found holding the granted pod's slot and removed */
    char u2[64], f2[64];
    make_pod("forged-2", f2);
    make_pod("granted-2", u2);
    place("granted-2", u2, GPU1, key1, "timeslice");
    place("forged-2", u2, GPU1, key1, "timeslice");
    struct admission first = admit("forged-2", f2);
    assert_int_equal(first.status, FG_GRPC_OK); /* the plugin could not tell: it served granted-2's grant */
    uint64_t t0 = fg_clock_real_ns();
    while (pod_exists("forged-2") && fg_clock_real_ns() - t0 < 5 * FG_NS_PER_S)
        fg_test_sleep_ms(20);
    uint64_t gone_ms = (fg_clock_real_ns() - t0) / FG_NS_PER_MS;
    if (pod_exists("forged-2"))
        dump_log();
    assert_false(pod_exists("forged-2"));
    assert_true(gone_ms < 1000);
    struct admission second = admit("granted-2", u2);
    assert_int_equal(second.status, FG_GRPC_OK);
    assert_string_equal(second.env_visible, GPU1);
    assert_true(pod_exists("granted-2") && pod_exists("granted"));
    assert_true(log_has("holds device"));

    /* Allocate for devices never advertised; garbage on the socket */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%.90s/fracgpu.sock", E.dp_dir);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_true(write(fd, "GET / HTTP/1.1\r\n\r\n\x00\x01garbage", 28) > 0);
    close(fd);
    char u3[64];
    make_pod("third", u3);
    place("third", u3, GPU1, key1, "timeslice");
    struct admission t = admit("third", u3);
    assert_int_equal(t.status, FG_GRPC_OK); /* the plugin still serves */

    /* GPU2 fails: its slots are re-sent Unhealthy, and a pod granted on it is refused */
    fg_test_fake_state(E.dir, "{\"gpus\":[{\"uuid\":\"" GPU1 "\",\"name\":\"NVIDIA A100-SXM4-80GB\",\"total\":85899345920,"
                              "\"used\":0,\"util\":0},{\"uuid\":\"" GPU2 "\",\"error\":\"gpu_is_lost\"}]}");
    wait_slots(96, 48);
    char u4[64];
    make_pod("on-lost-gpu", u4);
    place("on-lost-gpu", u4, GPU2, key1, "timeslice");
    struct admission lost = admit("on-lost-gpu", u4);
    assert_int_equal(lost.status, FG_GRPC_PERMISSION_DENIED);
    assert_non_null(strstr(lost.message, "is unhealthy"));
    /* it vanishes, then comes back */
    fg_test_fake_state(E.dir, "{\"gpus\":[{\"uuid\":\"" GPU1 "\",\"name\":\"NVIDIA A100-SXM4-80GB\",\"total\":85899345920,"
                              "\"used\":0,\"util\":0}]}");
    wait_slots(48, 48);
    fg_test_fake_state(E.dir, GPU_STATE);
    wait_slots(96, 96);
}

/* Devices the plugin never advertised, asked for directly over gRPC. */
struct raw_call {
    bool done;
    enum fg_grpc_status status;
    char message[256];
    struct fg_grpc_client *c;
};

static void raw_done(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    (void)resp, (void)len;
    struct raw_call *r = ud;
    r->status = status;
    snprintf(r->message, sizeof(r->message), "%s", message);
    r->done = true;
    struct fg_grpc_client *c = r->c;
    r->c = NULL;
    fg_grpc_client_free(c);
}

/* An Allocate whose body is msg (what a kubelet would send, or not). */
static void raw_call_on_loop(struct raw_call *r, const ProtobufCMessage *msg)
{
    char path[160];
    snprintf(path, sizeof(path), "%.120s/fracgpu.sock", E.dp_dir);
    struct fg_grpc_client_opts co = { .socket_path = path };
    assert_int_equal(fg_grpc_client_new(fg_kube_loop_base(E.h.loop), &co, &r->c, NULL), FG_OK);
    assert_int_equal(fg_grpc_client_unary(r->c, FG_DEVICE_PLUGIN_ALLOCATE, msg, 5000, raw_done, r, NULL), FG_OK);
}

static void unknown_devices_on_loop(void *ud)
{
    char *ids[] = { "GPU-nope::1" };
    V1beta1__ContainerAllocateRequest cr = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    cr.n_devices_ids = 1;
    cr.devices_ids = ids;
    V1beta1__ContainerAllocateRequest *crs[] = { &cr };
    V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
    req.n_container_requests = 1;
    req.container_requests = crs;
    raw_call_on_loop(ud, &req.base);
}

/* A Device whose ID "abc" reads, as an AllocateRequest, as a container request cut short: 'a' opens a
 * 64-bit field that the remaining two bytes cannot hold. */
static void truncated_protobuf_on_loop(void *ud)
{
    V1beta1__Device d = V1BETA1__DEVICE__INIT;
    d.id = "abc";
    raw_call_on_loop(ud, &d.base);
}

/* Runs one raw call to its end and returns it. */
static struct raw_call raw(void (*start)(void *ud))
{
    struct raw_call r = { 0 };
    assert_int_equal(fg_kube_loop_call_wait(E.h.loop, start, &r, 5000), FG_OK);
    for (int i = 0; i < 250 && !r.done; i++) {
        fg_test_sleep_ms(20);
        assert_int_equal(fg_kube_loop_call_wait(E.h.loop, read_done, NULL, 5000), FG_OK);
    }
    assert_true(r.done);
    return r;
}

static void restarts_forms_and_keys(void **state)
{
    (void)state;
    put_secret(key1, NULL);
    agent_start("envvar");
    wait_registered(0);

    struct raw_call r = raw(unknown_devices_on_loop);
    assert_int_equal(r.status, FG_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(r.message, "unknown device \"GPU-nope::1\""));
    r = raw(truncated_protobuf_on_loop);
    assert_int_equal(r.status, FG_GRPC_INVALID_ARGUMENT);
    assert_string_equal(r.message, "not an AllocateRequest");

    char uid[64];
    make_pod("kept", uid);
    place("kept", uid, GPU1, key1, "timeslice");
    struct admission a = admit("kept", uid);
    assert_int_equal(a.status, FG_GRPC_OK);

    /* the kubelet restarts: sockets removed, its own re-created */
    unsigned before = probe().registrations;
    assert_int_equal(fg_kube_loop_call_wait(E.h.loop, dm_restart_on_loop, E.dm, 5000), FG_OK);
    wait_registered(before);

    /* the agent restarts on a CDI host: the pod it granted is adopted, not removed */
    agent_stop();
    char cdi[160];
    snprintf(cdi, sizeof(cdi), "%s/etc/cdi", E.host_root);
    assert_int_equal(fg_mkdir_p(cdi), 0);
    snprintf(cdi, sizeof(cdi), "%s/etc/cdi/nvidia.yaml", E.host_root);
    FILE *f = fopen(cdi, "w");
    assert_non_null(f);
    fputs("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n", f);
    fclose(f);
    /* an mps tenant of the other GPU, bound while the agent is down and admitted as soon as it is
     * back: "kept" (no start time written here) still looks waiting, and first in the watch's order,
     * until the agent's first audit takes it into the ledger, so nothing is served before that */
    char mu[64];
    make_pod("tenant", mu);
    place("tenant", mu, GPU2, key1, "mps");
    before = probe().registrations;
    agent_start("auto");
    wait_registered(before);
    struct admission m = admit("tenant", mu);
    for (int i = 0; i < 100 && !log_has("took 1 running pod"); i++)
        fg_test_sleep_ms(50);
    if (!log_has("took 1 running pod"))
        dump_log();
    assert_true(log_has("took 1 running pod"));
    assert_true(pod_exists("kept"));
    assert_true(log_has("devices in the cdi-cri form"));

    /* the mps tenant: its own GPU, its MPS pipe, and the CDI device */
    assert_int_equal(m.status, FG_GRPC_OK);
    assert_string_equal(m.cdi, "nvidia.com/gpu=" GPU2);
    assert_string_equal(m.env_pipe, "/tmp/nvidia-mps");
    char pipe[200];
    snprintf(pipe, sizeof(pipe), "%s/" GPU2 "/pipe", E.mps_root);
    assert_string_equal(m.mount_pipe, pipe);

    /* a rotation: grants of the previous key still verify */
    put_secret(key2, key1);
    fg_test_sleep_ms(300);
    char ou[64];
    make_pod("old-key", ou);
    place("old-key", ou, GPU1, key1, "timeslice");
    struct admission o = admit("old-key", ou);
    assert_int_equal(o.status, FG_GRPC_OK);

    /* the key Secret deleted: nothing verifies, and the refusal says why */
    assert_int_equal(fg_kube_delete(E.h.client, "/api/v1/namespaces/" SYS "/secrets/" FG_SECRET_GRANT_KEY, NULL, NULL,
                                    NULL),
                     FG_OK);
    fg_test_sleep_ms(300);
    char nu[64];
    make_pod("no-key", nu);
    place("no-key", nu, GPU1, key2, "timeslice");
    struct admission k = admit("no-key", nu);
    assert_int_equal(k.status, FG_GRPC_PERMISSION_DENIED);
    assert_non_null(strstr(k.message, "was deleted"));
}

static void refusal_unseen(void **state)
{
    (void)state;
    put_secret(key1, NULL);
    agent_start("envvar");
    wait_registered(0);

    /* the kubelet's watch is ahead of the agent's: it admits a pod the agent has not seen */
    struct admission late = admit("late", "5f2c1d9e-1111-4111-8111-000000000001");
    assert_int_equal(late.status, FG_GRPC_PERMISSION_DENIED);
    assert_non_null(strstr(late.message, "refused unseen"));
    /* the agent's watch catches up: "late" shows bound and granted, but the kubelet failed it */
    char lu[64], nu[64];
    make_pod("late", lu);
    place("late", lu, GPU2, key1, "timeslice");
    make_pod("next", nu);
    place("next", nu, GPU1, key1, "timeslice");
    struct admission next = admit("next", nu);
    if (next.status == FG_GRPC_OK)
        fail_msg("pod next was served %s (the grant of the failed pod late on GPU2: a swap)", next.env_visible);
    assert_int_equal(next.status, FG_GRPC_PERMISSION_DENIED);
    assert_non_null(strstr(next.message, "refused unseen"));
    /* the kubelet's failures reach the agent: admissions go on as before */
    fail_admission("late", late.message);
    fail_admission("next", next.message);
    char u2[64];
    make_pod("next-2", u2);
    place("next-2", u2, GPU1, key1, "timeslice");
    struct admission a = admit("next-2", u2);
    if (a.status != FG_GRPC_OK)
        dump_log();
    assert_int_equal(a.status, FG_GRPC_OK);
    assert_string_equal(a.env_visible, GPU1);
    assert_true(log_has("failed on a refusal made unseen"));
}

/* The kubelet admitting pod "ahead" on its own thread, as its watch shows the pod before the agent's. */
struct ahead {
    char uid[64];
    enum fg_err err;
    struct fg_dm_result r;
};

static void *admit_ahead(void *ud)
{
    struct ahead *h = ud;
    h->err = fg_dm_allocate_wait(E.h.loop, E.dm, NS, "ahead", h->uid, "main", SHARE, 1, 10000, &h->r);
    return NULL;
}

static void preference_waits_for_the_grant(void **state)
{
    (void)state;
    put_secret(key1, NULL);
    agent_start("envvar");
    wait_registered(0);

    /* the kubelet asks for slots (GetPreferredAllocation, then Allocate) before the agent has seen the
     * pod's grant; it comes 300 ms later, on the second GPU: the slots are of that GPU, not the first
     * free ones of the first */
    struct ahead h = { 0 };
    make_pod("ahead", h.uid);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, admit_ahead, &h), 0);
    fg_test_sleep_ms(300);
    place("ahead", h.uid, GPU2, key1, "timeslice");
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(h.err, FG_OK);
    if (h.r.status != FG_GRPC_OK)
        dump_log();
    assert_int_equal(h.r.status, FG_GRPC_OK);
    assert_string_equal(fg_dm_reply_env(h.r.reply, "NVIDIA_VISIBLE_DEVICES"), GPU2);
    assert_true(h.r.n == 1 && fg_str_has_prefix(h.r.device_ids[0], GPU2 "::"));
    fg_dm_result_cleanup(&h.r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(grants_and_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(restarts_forms_and_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(refusal_unseen, setup, teardown),
        cmocka_unit_test_setup_teardown(preference_waits_for_the_grant, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
