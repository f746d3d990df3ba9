/* node_fixture — the cluster, the API calls and the nodes' files of e2e_sim_node; see node_fixture.h. */
#include "e2e/cluster/test/node_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/config.h"
#include "e2e/cluster/simids.h"
#include "reconcilers/grant.h"
#include "reconcilers/podcontract.h"

struct nodetest nt;

static const char *const groups[NODETEST_FORMS] = { "cdi", "mounts", "env" };
static const char *const forms[NODETEST_FORMS] = { "cdi-cri", "volume-mounts", "envvar" };

const char *nodetest_group(enum nodetest_form f)
{
    return groups[f];
}

const char *nodetest_form_name(enum nodetest_form f)
{
    return forms[f];
}

/* ---- the cluster ---- */

int nodetest_start(void)
{
    fg_log_set_level(FG_LOG_WARN);
    char config[512], msg[FG_ERRMSG_MAX] = "";
    snprintf(config, sizeof config, "%s/e2e/cluster/testdata/node-e2e.yaml", getenv("FG_SOURCE_DIR"));
    if (fg_simcluster_start(&nt.sim, config, NULL, 60, msg) != FG_OK) {
        fprintf(stderr, "cannot start the simulated cluster: %s\n", msg);
        return -1;
    }
    snprintf(nt.work, sizeof nt.work, "%s", nt.sim.work);
    nt.sim.k.timeout_s = 60;
    for (int f = 0; f < NODETEST_FORMS; f++) {
        char path[160];
        snprintf(path, sizeof path, "/api/v1/nodes?labelSelector=sim.fracgpu.io%%2Fnode-group%%3D%s", groups[f]);
        json_object *l = nodetest_get(path), *items = fg_json_get(l, "items", NULL);
        const char *name = fg_json_get_str(fg_json_at(items, 0), "metadata", "name", NULL);
        if (fg_json_array_len(items) != 1 || !name) {
            fprintf(stderr, "node group %s has %zu nodes, not 1\n", groups[f], fg_json_array_len(items));
            json_object_put(l);
            nodetest_stop(true);
            return -1;
        }
        snprintf(nt.node[f], sizeof nt.node[f], "%s", name);
        json_object_put(l);
    }
    return 0;
}

void nodetest_stop(bool keep)
{
    fg_simcluster_stop(&nt.sim, keep);
    if (keep || getenv("FG_KEEP_SIM"))
        fprintf(stderr, "its working directory kept in %s\n", nt.work);
}

char *nodetest_component_log(const char *component)
{
    char path[400];
    snprintf(path, sizeof path, "%s/logs/%s.log", nt.work, component);
    struct fg_buf b;
    fg_buf_init(&b, 0);
    if (fg_buf_read_file(&b, path, NULL) != FG_OK)
        fg_buf_reset(&b);
    char *s = fg_strdup(fg_buf_str(&b));
    fg_buf_cleanup(&b);
    return s;
}

/* ---- the API ---- */

json_object *nodetest_get(const char *path)
{
    json_object *obj = NULL;
    return fg_kube_get(nt.sim.client, path, &obj, NULL) == FG_OK ? obj : NULL;
}

json_object *nodetest_pod(const char *ns, const char *name)
{
    char path[320];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    return nodetest_get(path);
}

json_object *nodetest_create(const char *collection, const char *json)
{
    json_object *obj = NULL, *out = NULL;
    if (fg_json_parse(json, strlen(json), 0, &obj, NULL) != FG_OK)
        fail_msg("not JSON: %s", json);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(nt.sim.client, collection, obj, &out, &st);
    json_object_put(obj);
    if (err) {
        char said[1024];
        snprintf(said, sizeof said, "%s", st.message ? st.message : "");
        fg_kube_status_cleanup(&st);
        fail_msg("create in %s: %s: %s\n%s", collection, fg_err_str(err), said, json);
    }
    return out;
}

json_object *nodetest_create_pod(const char *ns, const char *json)
{
    char path[160];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    return nodetest_create(path, json);
}

void nodetest_delete_pod(const char *ns, const char *name)
{
    char path[320];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    enum fg_err err = fg_kube_delete(nt.sim.client, path, NULL, NULL, NULL);
    if (err && err != FG_E_KUBE_NOT_FOUND)
        fail_msg("delete pod %s/%s: %s", ns, name, fg_err_str(err));
}

static bool grant_keys(struct fg_grant_keys *keys)
{
    json_object *secret = nodetest_get("/api/v1/namespaces/" NODETEST_SYSTEM_NS "/secrets/" FG_SECRET_GRANT_KEY);
    char msg[FG_ERRMSG_MAX] = "";
    bool ok = secret && fg_grant_keys_from_secret(secret, keys, msg) == FG_OK;
    json_object_put(secret);
    return ok;
}

bool nodetest_grant_key_ready(void)
{
    struct fg_grant_keys keys;
    return grant_keys(&keys);
}

void nodetest_sign(const char *uid, const char *node, const char *gpu, int64_t milli, int64_t mib, char *out)
{
    struct fg_grant_keys keys;
    if (!grant_keys(&keys))
        fail_msg("no grant key in Secret " NODETEST_SYSTEM_NS "/" FG_SECRET_GRANT_KEY);
    struct fg_grant g = { uid, node, gpu, milli, mib };
    assert_int_equal(fg_grant_sign(&g, keys.current, keys.current_len, out), FG_OK);
}

void nodetest_bind(const char *ns, const char *name, const char *node, const char *gpu, const char *capacity_pod)
{
    json_object *pod = nodetest_pod(ns, name);
    if (!pod)
        fail_msg("no pod %s/%s to bind", ns, name);
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    const char *milli = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_COMPUTE_MILLI, NULL);
    const char *mib = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_MEMORY_MIB, NULL);
    assert_non_null(uid);
    assert_non_null(milli);
    assert_non_null(mib);
    char grant[FG_GRANT_MAX];
    nodetest_sign(uid, node, gpu, atoll(milli), fg_str_eq(mib, "whole") ? 0 : atoll(mib), grant);
    char *body = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","
        "\"annotations\":{\"" FG_ANN_GPU_UUID "\":\"%s\",\"" FG_ANN_GPU_INDEX "\":\"%d\","
        "\"" FG_ANN_CAPACITY_POD "\":\"%s\","
        "\"" FG_ANN_GRANT "\":\"%s\"}},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"%s\"}}",
        name, ns, uid, gpu, nodetest_gpu_index(node, gpu), capacity_pod, grant, node);
    json_object_put(pod);
    char path[320];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    struct fg_buf reply;
    fg_buf_init(&reply, 0);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_request(nt.sim.client, "POST", path, "application/json", body, strlen(body), &reply, &st);
    free(body);
    if (err) {
        char said[1024];
        snprintf(said, sizeof said, "%ld %s", st.http_code, st.message ? st.message : "");
        fg_kube_status_cleanup(&st);
        fg_buf_cleanup(&reply);
        fail_msg("bind %s/%s to %s: %s: %s", ns, name, node, fg_err_str(err), said);
    }
    fg_buf_cleanup(&reply);
}

size_t nodetest_events(const char *ns, const char *name, const char *reason, const char **message)
{
    static json_object *last;
    json_object_put(last);
    char path[160];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", ns);
    last = nodetest_get(path);
    json_object *items = fg_json_get(last, "items", NULL);
    size_t n = 0;
    if (message)
        *message = NULL;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *ev = json_object_array_get_idx(items, i);
        if (!fg_str_eq(fg_json_get_str(ev, "involvedObject", "name", NULL), name) ||
            !fg_str_eq(fg_json_get_str(ev, "reason", NULL), reason))
            continue;
        n++;
        if (message)
            *message = fg_json_get_str(ev, "message", NULL);
    }
    return n;
}

/* ---- the nodes' files ---- */

char *nodetest_pod_dir(const char *node, const char *ns, const char *name, const char *uid)
{
    return fg_asprintf("%s/nodes/%s/pods/%s_%s_%s", nt.work, node, ns, name, uid);
}

json_object *nodetest_devices(const char *node, const char *ns, const char *name, const char *uid)
{
    char *dir = nodetest_pod_dir(node, ns, name, uid);
    char *path = fg_asprintf("%s/devices.json", dir);
    json_object *d = json_object_from_file(path);
    free(path);
    free(dir);
    return d;
}

json_object *nodetest_nvml_state(const char *node)
{
    char path[512];
    snprintf(path, sizeof path, "%s/nodes/%s/nvml/state.json", nt.work, node);
    return json_object_from_file(path);
}

json_object *nodetest_nvml_gpu(json_object *state, const char *uuid)
{
    json_object *gpus = fg_json_get(state, "gpus", NULL);
    for (size_t i = 0; i < fg_json_array_len(gpus); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(gpus, i), "uuid", NULL), uuid))
            return json_object_array_get_idx(gpus, i);
    return NULL;
}

int nodetest_gpu_index(const char *node, const char *uuid)
{
    for (unsigned g = 0; g < FG_SIM_MAX_GPUS; g++) {
        char u[FG_SIM_GPU_UUID_LEN + 1];
        fg_sim_gpu_uuid(node, g, u);
        if (fg_str_eq(u, uuid))
            return (int)g;
    }
    return -1;
}

json_object *nodetest_agent_pod(const char *node)
{
    json_object *l = nodetest_get("/api/v1/namespaces/" NODETEST_SYSTEM_NS
                                  "/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnode-agent");
    json_object *items = fg_json_get(l, "items", NULL), *found = NULL;
    for (size_t i = 0; i < fg_json_array_len(items) && !found; i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (fg_str_eq(fg_json_get_str(p, "spec", "nodeName", NULL), node) &&
            !fg_json_get(p, "metadata", "deletionTimestamp", NULL) &&
            fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running"))
            found = json_object_get(p);
    }
    json_object_put(l);
    return found;
}

char *nodetest_agent_log(const char *node, json_object *agent_pod)
{
    if (!agent_pod)
        return fg_strdup("");
    char *dir = nodetest_pod_dir(node, NODETEST_SYSTEM_NS, fg_json_get_str(agent_pod, "metadata", "name", NULL),
                                 fg_json_get_str(agent_pod, "metadata", "uid", NULL));
    char *path = fg_asprintf("%s/node-agent.log", dir);
    struct fg_buf b;
    fg_buf_init(&b, 0);
    if (fg_buf_read_file(&b, path, NULL) != FG_OK)
        fg_buf_reset(&b);
    free(path);
    free(dir);
    char *s = fg_strdup(fg_buf_str(&b));
    fg_buf_cleanup(&b);
    return s;
}

size_t nodetest_log_problems(void)
{
    return fg_simcluster_log_problems(&nt.sim);
}

size_t nodetest_count(const char *s, const char *text)
{
    size_t n = 0;
    for (const char *p = s; p && (p = strstr(p, text)); p += strlen(text))
        n++;
    return n;
}

long nodetest_kubelet_slots(const char *node, size_t *reports)
{
    char *log = nodetest_component_log("kubelets");
    char said[160];
    snprintf(said, sizeof said, "\"node %s: fracgpu.io/gpu-share ", node);
    long slots = -1;
    *reports = 0;
    for (const char *p = log; (p = strstr(p, said)); p += strlen(said)) {
        slots = strtol(p + strlen(said), NULL, 10);
        (*reports)++;
    }
    free(log);
    return slots;
}

pid_t nodetest_kubelets_pid(void)
{
    return fg_simcluster_component_pid(&nt.sim, "kubelets");
}

/* ---- waits ---- */

bool nodetest_wait(bool (*cond)(void *ud), void *ud, unsigned timeout_ms)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    while (!cond(ud)) {
        if (fg_clock_mono_ns() > deadline)
            return false;
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    return true;
}

static bool ready(json_object *pod)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready"))
            return fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    return false;
}

struct phase_wait {
    const char *ns, *name, *phase;
};

static bool in_phase(void *ud)
{
    const struct phase_wait *w = ud;
    json_object *pod = nodetest_pod(w->ns, w->name);
    bool ok = fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), w->phase) &&
              (!fg_str_eq(w->phase, "Running") || ready(pod));
    json_object_put(pod);
    return ok;
}

void nodetest_wait_phase(const char *ns, const char *name, const char *node, const char *phase, unsigned timeout_ms)
{
    struct phase_wait w = { ns, name, phase };
    if (!nodetest_wait(in_phase, &w, timeout_ms))
        nodetest_fail(ns, name, node, "pod %s/%s did not become %s within %u ms", ns, name, phase, timeout_ms);
}

struct annotation_wait {
    const char *ns, *name, *key;
};

static bool annotated(void *ud)
{
    const struct annotation_wait *w = ud;
    json_object *pod = nodetest_pod(w->ns, w->name);
    bool ok = fg_json_get_str(pod, "metadata", "annotations", w->key, NULL) != NULL;
    json_object_put(pod);
    return ok;
}

void nodetest_wait_annotation(const char *ns, const char *name, const char *node, const char *key,
                              unsigned timeout_ms)
{
    struct annotation_wait w = { ns, name, key };
    if (!nodetest_wait(annotated, &w, timeout_ms))
        nodetest_fail(ns, name, node, "pod %s/%s was not annotated %s within %u ms", ns, name, key, timeout_ms);
}

/* The last `lines` lines of s that contain needle (all lines when NULL), appended to out. */
static void tail_lines(struct fg_buf *out, const char *s, const char *needle, size_t lines)
{
    const char *starts[64];
    size_t n = 0;
    for (const char *l = s; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = fg_strndup(l, len);
        if (!needle || strstr(line, needle))
            starts[n++ % 64] = l;
        free(line);
        l = end ? end + 1 : NULL;
    }
    size_t first = n > lines ? n - lines : 0;
    for (size_t i = first; i < n; i++) {
        const char *l = starts[i % 64], *end = strchr(l, '\n');
        fg_buf_put(out, l, end ? (size_t)(end - l) + 1 : strlen(l));
    }
}

void nodetest_fail(const char *ns, const char *name, const char *node, const char *fmt, ...)
{
    struct fg_buf out;
    fg_buf_init(&out, 0);
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fg_buf_put_str(&out, msg);
    fg_buf_put_str(&out, "\n");
    if (ns && name) {
        json_object *pod = nodetest_pod(ns, name);
        fg_buf_put_str(&out, "--- the pod's metadata.annotations and status:\n");
        json_object *annotations = fg_json_get(pod, "metadata", "annotations", NULL);
        fg_buf_put_str(&out, pod ? json_object_to_json_string(annotations) : "(gone)");
        fg_buf_put_str(&out, "\n");
        fg_buf_put_str(&out, pod ? json_object_to_json_string(fg_json_get(pod, "status", NULL)) : "");
        json_object_put(pod);
        char path[160];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", ns);
        json_object *evs = nodetest_get(path), *items = fg_json_get(evs, "items", NULL);
        fg_buf_put_str(&out, "\n--- its Events:\n");
        for (size_t i = 0; i < fg_json_array_len(items); i++) {
            json_object *ev = json_object_array_get_idx(items, i);
            if (!fg_str_eq(fg_json_get_str(ev, "involvedObject", "name", NULL), name))
                continue;
            char line[1200];
            snprintf(line, sizeof line, "%s %s: %s\n", fg_json_get_str(ev, "type", NULL),
                     fg_json_get_str(ev, "reason", NULL), fg_json_get_str(ev, "message", NULL));
            fg_buf_put_str(&out, line);
        }
        json_object_put(evs);
    }
    if (node) {
        json_object *agent = nodetest_agent_pod(node);
        char *log = nodetest_agent_log(node, agent);
        fg_buf_put_str(&out, "--- the node agent's log on ");
        fg_buf_put_str(&out, node);
        fg_buf_put_str(&out, " (last 30 lines):\n");
        tail_lines(&out, log, NULL, 30);
        free(log);
        json_object_put(agent);
    }
    if (name) {
        char *kl = nodetest_component_log("kubelets");
        fg_buf_put_str(&out, "--- the kubelets' lines about it (last 20):\n");
        tail_lines(&out, kl, name, 20);
        free(kl);
    }
    fprintf(stderr, "%s\n", fg_buf_str(&out));
    fg_buf_cleanup(&out);
    fail_msg("%s", msg);
    abort();
}
