/* fracgpu's kubelet device plugin: its life, registration, GPUs and ListAndWatch (plugin.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "nodeagent/deviceplugin/plugin_int.h"
#include "nodeagent/grpc/kubelet.h"
#include "operator/cache/kobj.h"
#include "operator/cache/store.h"
#include "operator/kube/loop.h"
#include "operator/kube/resource.h"
#include "operator/manager/informers.h"
#include "reconcilers/podcontract.h"

#define COMPONENT "device-plugin"
#define TICK_MS 100
#define REGISTER_RETRY_NS (1 * FG_NS_PER_S)
#define REGISTER_TIMEOUT_MS 5000
#define PERIODIC_AUDIT_NS (10 * FG_NS_PER_S)

/* What the plugin reads of this node's pods (the exporter's informer, shared; fields added). */
static const char *const pod_fields[] = {
    "metadata.annotations", "metadata.creationTimestamp", "metadata.deletionTimestamp", "spec.nodeName",
    "spec.containers[].name", "spec.containers[].resources", "spec.initContainers[].resources", "status.phase",
    "status.message", NULL,
};

/* ---- GPUs and ListAndWatch ---- */

static void send_devices(struct fg__dp *p, struct fg_grpc_call *to)
{
    size_t n = p->ngpus * p->o.slots;
    V1beta1__Device *devs = fg_calloc(n ? n : 1, sizeof(*devs));
    V1beta1__Device **ptrs = fg_calloc(n ? n : 1, sizeof(*ptrs));
    char (*ids)[FG_DP_SLOT_ID_MAX] = fg_calloc(n ? n : 1, FG_DP_SLOT_ID_MAX);
    for (size_t g = 0, k = 0; g < p->ngpus; g++)
        for (unsigned s = 0; s < p->o.slots; s++, k++) {
            v1beta1__device__init(&devs[k]);
            fg_dp_slot_id(p->gpus[g].uuid, s, ids[k]);
            devs[k].id = ids[k];
            devs[k].health = p->gpus[g].healthy ? FG_DEVICE_HEALTHY : FG_DEVICE_UNHEALTHY;
            ptrs[k] = &devs[k];
        }
    V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    resp.n_devices = n;
    resp.devices = ptrs;
    for (size_t i = 0; i < p->nwatchers; i++)
        if (!to || p->watchers[i] == to) {
            enum fg_err err = fg_grpc_call_send(p->watchers[i], &resp.base);
            if (err != FG_OK)
                fg_log(FG_LOG_WARN, COMPONENT, "cannot send the device list to the kubelet: %s", fg_err_str(err));
        }
    free(devs);
    free(ptrs);
    free(ids);
}

/* Exporter's sampler thread: the devices NVML showed; failing NVML makes every known GPU unhealthy. */
static void on_devices(void *ud, const struct fg_device_sample *devs, size_t n, bool nvml_up)
{
    struct fg__dp *p = ud;
    pthread_mutex_lock(&p->incoming_mu);
    if (!nvml_up) {
        for (size_t i = 0; i < p->nincoming; i++)
            p->incoming[i].healthy = false;
    } else {
        struct fg_dp_gpu before[FG_DP_GPUS_MAX];
        size_t nbefore = p->nincoming;
        memcpy(before, p->incoming, nbefore * sizeof(*before));
        p->nincoming = 0;
        for (size_t i = 0; i < n && p->nincoming < FG_DP_GPUS_MAX; i++) {
            if (devs[i].mig)
                continue;
            const struct fg_dp_gpu *known = NULL; /* a failing GPU may not even tell its UUID: its index does */
            for (size_t j = 0; !devs[i].uuid[0] && j < nbefore && !known; j++)
                known = before[j].index == devs[i].index ? &before[j] : NULL;
            if (!devs[i].uuid[0] && !known)
                continue;
            struct fg_dp_gpu *g = &p->incoming[p->nincoming++];
            snprintf(g->uuid, sizeof(g->uuid), "%s", devs[i].uuid[0] ? devs[i].uuid : known->uuid);
            g->index = devs[i].index;
            g->healthy = devs[i].error[0] == '\0';
        }
    }
    p->incoming_new = true;
    pthread_mutex_unlock(&p->incoming_mu);
}

static void apply_gpus(struct fg__dp *p)
{
    struct fg_dp_gpu fresh[FG_DP_GPUS_MAX];
    size_t n = 0;
    pthread_mutex_lock(&p->incoming_mu);
    bool news = p->incoming_new;
    if (news) {
        n = p->nincoming;
        memcpy(fresh, p->incoming, n * sizeof(*fresh));
        p->incoming_new = false;
    }
    pthread_mutex_unlock(&p->incoming_mu);
    if (!news || (p->gpus_known && fg_dp_gpus_equal(fresh, n, p->gpus, p->ngpus)))
        return;
    size_t healthy = 0;
    for (size_t i = 0; i < n; i++)
        healthy += fresh[i].healthy;
    fg_log(FG_LOG_INFO, COMPONENT, "advertising %zu GPU%s (%zu healthy), %u " FG_RES_GPU_SHARE " slots each", n,
           n == 1 ? "" : "s", healthy, p->o.slots);
    memcpy(p->gpus, fresh, n * sizeof(*fresh));
    p->ngpus = n;
    p->gpus_known = true;
    send_devices(p, NULL);
}

static void list_and_watch(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req, (void)len;
    struct fg__dp *p = ud;
    if (p->nwatchers == FG_DP_WATCHERS_MAX) {
        fg_grpc_call_finish(call, FG_GRPC_RESOURCE_EXHAUSTED, "too many ListAndWatch streams");
        return;
    }
    p->watchers[p->nwatchers++] = call;
    send_devices(p, call);
}

static void list_and_watch_gone(struct fg_grpc_call *call, void *ud)
{
    struct fg__dp *p = ud;
    for (size_t i = 0; i < p->nwatchers; i++)
        if (p->watchers[i] == call) {
            p->watchers[i] = p->watchers[--p->nwatchers];
            return;
        }
}

static void options(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req, (void)len, (void)ud;
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    if (fg_grpc_call_reply(call, &o.base) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "cannot answer GetDevicePluginOptions");
}

static void pre_start(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req, (void)len, (void)ud;
    V1beta1__PreStartContainerResponse r = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
    if (fg_grpc_call_reply(call, &r.base) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "cannot answer PreStartContainer");
}

/* ---- the socket and registration ---- */

static ino_t inode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

static void close_server(struct fg__dp *p)
{
    fg__dp_pending_abort(p);
    fg_grpc_server_free(p->server); /* watchers and held calls get their gone callbacks */
    p->server = NULL;
    p->socket_ino = 0;
}

static enum fg_err listen_socket(struct fg__dp *p, char *errmsg)
{
    const struct fg_grpc_method methods[] = {
        { FG_DEVICE_PLUGIN_GET_OPTIONS, FG_GRPC_UNARY, options, NULL, p },
        { FG_DEVICE_PLUGIN_LIST_AND_WATCH, FG_GRPC_SERVER_STREAM, list_and_watch, list_and_watch_gone, p },
        { FG_DEVICE_PLUGIN_GET_PREFERRED_ALLOCATION, FG_GRPC_UNARY, fg__dp_preferred, fg__dp_held_gone, p },
        { FG_DEVICE_PLUGIN_ALLOCATE, FG_GRPC_UNARY, fg__dp_allocate, fg__dp_held_gone, p },
        { FG_DEVICE_PLUGIN_PRE_START_CONTAINER, FG_GRPC_UNARY, pre_start, NULL, p },
    };
    struct fg_grpc_server_opts so = { .socket_path = p->socket_path, .methods = methods,
                                      .n_methods = sizeof(methods) / sizeof(*methods) };
    enum fg_err err = fg_grpc_server_new(p->base, &so, &p->server, errmsg);
    if (err)
        return err;
    p->socket_ino = inode_of(p->socket_path);
    return FG_OK;
}

/* Logs a registration or serving problem when it starts or changes; a repeat every retry stays quiet. */
static void problem(struct fg__dp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct fg__dp *p, const char *fmt, ...)
{
    char msg[FG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (strcmp(msg, p->problem) == 0)
        return;
    snprintf(p->problem, sizeof(p->problem), "%s", msg);
    fg_log(FG_LOG_WARN, COMPONENT, "%s (retrying every second; logged again only when it changes)", msg);
}

static void registered(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    (void)resp, (void)len;
    struct fg__dp *p = ud;
    struct fg_grpc_client *c = p->kubelet;
    if (!c && status == FG_GRPC_CANCELLED)
        return; /* we let go of it: the kubelet went, or the plugin stops */
    p->kubelet = NULL;
    fg_grpc_client_free(c); /* allowed inside its own callback */
    p->registering = false;
    if (status == FG_GRPC_OK) {
        p->registered = true;
        fg_counter_add(p->reg_ok, 1);
        p->problem[0] = '\0';
        fg_log(FG_LOG_INFO, COMPONENT, "registered " FG_RES_GPU_SHARE " with the kubelet at %s", p->kubelet_path);
        return;
    }
    fg_counter_add(p->reg_failed, 1);
    problem(p, "registration with the kubelet at %s failed: %s: %s", p->kubelet_path, fg_grpc_status_name(status),
            message);
    p->next_register_ns = fg_clock_mono_ns() + REGISTER_RETRY_NS;
}

static void register_now(struct fg__dp *p)
{
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_grpc_client_opts co = { .socket_path = p->kubelet_path };
    p->next_register_ns = fg_clock_mono_ns() + REGISTER_RETRY_NS;
    if (fg_grpc_client_new(p->base, &co, &p->kubelet, msg) != FG_OK) {
        problem(p, "cannot reach the kubelet: %s", msg);
        return;
    }
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
    req.version = FG_DEVICE_PLUGIN_VERSION;
    req.endpoint = FG_DP_RESOURCE_SOCKET;
    req.resource_name = FG_RES_GPU_SHARE;
    req.options = &o;
    p->registering = true;
    if (fg_grpc_client_unary(p->kubelet, FG_REGISTRATION_REGISTER, &req.base, REGISTER_TIMEOUT_MS, registered, p,
                             NULL) != FG_OK) {
        p->registering = false;
        fg_grpc_client_free(p->kubelet);
        p->kubelet = NULL;
    }
}

/* The kubelet removed our socket (it does so when it starts) or replaced its own: listen and
 * register again. */
static void check_sockets(struct fg__dp *p)
{
    ino_t mine = inode_of(p->socket_path);
    if (!p->server || mine != p->socket_ino) {
        char msg[FG_ERRMSG_MAX] = "";
        if (p->server)
            fg_log(FG_LOG_INFO, COMPONENT, "%s was removed (the kubelet restarted?): serving and registering again",
                   p->socket_path);
        close_server(p);
        if (listen_socket(p, msg) != FG_OK) {
            problem(p, "cannot serve on %s: %s", p->socket_path, msg);
            return;
        }
        p->registered = false;
        p->next_register_ns = 0;
    }
    ino_t kubelet = inode_of(p->kubelet_path);
    if (kubelet && kubelet != p->kubelet_ino) {
        if (p->kubelet_ino && p->registered)
            fg_log(FG_LOG_INFO, COMPONENT, "the kubelet's socket was re-created: registering again");
        p->kubelet_ino = kubelet;
        struct fg_grpc_client *stale = p->kubelet; /* a registration with the kubelet that went */
        p->kubelet = NULL;
        fg_grpc_client_free(stale);                /* its answer, CANCELLED, runs now and is not taken */
        p->registering = false;
        p->registered = false;
        p->next_register_ns = 0;
    }
}

static void tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd, (void)what;
    struct fg__dp *p = ud;
    uint64_t now = fg_clock_mono_ns();
    apply_gpus(p);
    check_sockets(p);
    if (p->server && !p->registered && !p->registering && now >= p->next_register_ns)
        register_now(p);
    if (p->npending)
        fg__dp_decide_pending(p);
    if ((p->audit_at_ns && now >= p->audit_at_ns) || now >= p->next_periodic_audit_ns) {
        p->audit_at_ns = 0;
        p->next_periodic_audit_ns = now + PERIODIC_AUDIT_NS;
        fg__dp_audit(p);
    }
}

/* ---- pods ---- */

void fg__dp_view_waiting(struct fg__dp *p, struct fg_dp_node_view *v)
{
    struct fg_kobj_list l;
    fg_store_list(fg_informer_store(p->pods), &l);
    json_object **pods = fg_calloc(l.n ? l.n : 1, sizeof(*pods));
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++)
        if (strstr(fg_kobj_text(l.items[i], NULL), "\"" FG_RES_GPU_SHARE "\"") &&
            !fg_dp_ledger_get(&p->ledger, fg_kobj_uid(l.items[i])) && fg_kobj_parse(l.items[i], &pods[n], NULL) == FG_OK)
            n++;
    fg_kobj_list_cleanup(&l);
    *v = (struct fg_dp_node_view){ p->o.node, pods, n, fg_grant_watch_get(p->keys), p->gpus, p->ngpus, fg__dp_seq, p };
}

void fg__dp_view_holders(struct fg__dp *p, const struct fg_dp_holding *h, size_t nh, struct fg_dp_node_view *v)
{
    json_object **pods = fg_calloc(nh ? nh : 1, sizeof(*pods));
    size_t n = 0;
    for (size_t i = 0; i < nh; i++) {
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", h[i].ns, h[i].name);
        if ((pods[n] = fg_store_get_json(fg_informer_store(p->pods), key)))
            n++;
    }
    *v = (struct fg_dp_node_view){ p->o.node, pods, n, fg_grant_watch_get(p->keys), p->gpus, p->ngpus, fg__dp_seq, p };
}

void fg__dp_view_cleanup(struct fg_dp_node_view *v)
{
    for (size_t i = 0; i < v->npods; i++)
        json_object_put(v->pods[i]);
    free(v->pods);
    v->pods = NULL;
    v->npods = 0;
}

static void pod_changed(void *ud, struct fg_kobj *obj)
{
    (void)obj;
    struct fg__dp *p = ud;
    if (p->running && p->npending)
        fg__dp_decide_pending(p);
}

/* The order in which this node's watch showed pods bound (as the kubelet's watch shows them). */
static void note_bound(struct fg__dp *p, struct fg_kobj *obj)
{
    const char *uid = fg_kobj_uid(obj);
    for (size_t i = 0; i < p->nseen; i++)
        if (strcmp(p->seen[i].uid, uid) == 0)
            return;
    if (p->nseen == p->seen_cap) {
        p->seen_cap = p->seen_cap ? 2 * p->seen_cap : 64;
        p->seen = fg_realloc(p->seen, p->seen_cap * sizeof(*p->seen));
    }
    snprintf(p->seen[p->nseen].uid, sizeof(p->seen[0].uid), "%s", uid);
    p->seen[p->nseen++].seq = ++p->next_seq;
}

static void forget_bound(struct fg__dp *p, const char *uid)
{
    for (size_t i = 0; i < p->nseen; i++)
        if (strcmp(p->seen[i].uid, uid) == 0) {
            p->seen[i] = p->seen[--p->nseen];
            return;
        }
}

uint64_t fg__dp_seq(void *ud, json_object *pod)
{
    struct fg__dp *p = ud;
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    for (size_t i = 0; uid && i < p->nseen; i++)
        if (strcmp(p->seen[i].uid, uid) == 0)
            return p->seen[i].seq;
    return UINT64_MAX;
}

/* A pod that ended has no devices any more (the kubelet gives them to the next pod); one that has just
 * failed (failed_before: it had already) may be the pod of a refusal made unseen. A relist shows a pod
 * that ended meanwhile as an add. */
static void note_ended(struct fg__dp *p, struct fg_kobj *obj, bool failed_before)
{
    const char *text = fg_kobj_text(obj, NULL);
    json_object *pod = NULL;
    if ((strstr(text, "\"phase\":\"Succeeded\"") || strstr(text, "\"phase\":\"Failed\"")) &&
        fg_kobj_parse(obj, &pod, NULL) == FG_OK) { /* (the text alone: an annotation could say so too) */
        const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
        if (fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed"))
            fg_dp_ledger_drop(&p->ledger, fg_kobj_uid(obj));
        if (fg_str_eq(phase, "Failed") && !failed_before)
            fg__dp_unseen_failed(p, pod);
        json_object_put(pod);
    }
}

static void pod_added(void *ud, struct fg_kobj *obj)
{
    note_ended(ud, obj, false);
    note_bound(ud, obj);
    pod_changed(ud, obj);
}

/* A pod replaced by one of the same name (seen as an update after a relist) is another pod. */
static void pod_updated(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    struct fg__dp *p = ud;
    if (strcmp(fg_kobj_uid(old), fg_kobj_uid(obj)) != 0) {
        fg_dp_ledger_drop(&p->ledger, fg_kobj_uid(old));
        forget_bound(p, fg_kobj_uid(old));
    }
    note_ended(p, obj, strstr(fg_kobj_text(old, NULL), "\"phase\":\"Failed\"") != NULL);
    note_bound(p, obj);
    pod_changed(ud, obj);
}

static void pod_deleted(void *ud, struct fg_kobj *obj)
{
    struct fg__dp *p = ud;
    fg_dp_ledger_drop(&p->ledger, fg_kobj_uid(obj));
    forget_bound(p, fg_kobj_uid(obj));
}

static const struct fg_resource_handler pod_handler = { pod_added, pod_updated, pod_deleted };

/* ---- life ---- */

struct start_step {
    struct fg__dp *p;
    enum fg_err err;
    char *errmsg;
};

static void start_on_loop(void *ud)
{
    struct start_step *s = ud;
    struct fg__dp *p = s->p;
    s->err = fg_mkdir_p(p->dir) == 0 || errno == EEXIST ? FG_OK : FG_E_IO;
    if (s->err) {
        fg_errmsg(s->errmsg, FG_E_IO, "cannot create %s: %s", p->dir, strerror(errno));
        return;
    }
    if ((s->err = listen_socket(p, s->errmsg)))
        return;
    p->tick = event_new(p->base, -1, EV_PERSIST, tick, p);
    struct timeval tv = { 0, TICK_MS * 1000 };
    event_add(p->tick, &tv);
    p->next_periodic_audit_ns = fg_clock_mono_ns() + 2 * FG_NS_PER_S;
    p->running = true;
    fg_log(FG_LOG_INFO, COMPONENT, "serving on %s, devices in the %s form, grants from Secret %s/" FG_SECRET_GRANT_KEY,
           p->socket_path, fg_dp_form_name(p->form), p->o.key_namespace);
    tick(-1, 0, p);
}

static void stop_on_loop(void *ud)
{
    struct fg__dp *p = ud;
    p->running = false;
    if (p->tick)
        event_free(p->tick);
    p->tick = NULL;
    close_server(p);
    struct fg_grpc_client *kubelet = p->kubelet, *podres = p->podres;
    p->kubelet = p->podres = NULL; /* their callbacks, run by the frees, find nothing to free again */
    fg_grpc_client_free(kubelet);
    fg_grpc_client_free(podres);
    p->registering = p->registered = false;
    p->auditing = false;
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct fg__dp *p = ud;
    struct start_step s = { p, FG_OK, errmsg };
    enum fg_err err = fg_kube_loop_call_wait(p->loop, start_on_loop, &s, 10000);
    return err ? fg_errmsg(errmsg, err, "the loop did not start the device plugin") : s.err;
}

static void stop(void *ud)
{
    struct fg__dp *p = ud;
    if (fg_kube_loop_call_wait(p->loop, stop_on_loop, p, 10000) != FG_OK)
        fg_log(FG_LOG_ERROR, COMPONENT, "the loop did not stop the device plugin in time");
}

static void plugin_free(void *ud)
{
    struct fg__dp *p = ud;
    fg_dp_ledger_cleanup(&p->ledger);
    free(p->seen);
    pthread_mutex_destroy(&p->incoming_mu);
    free(p);
}

static void register_metrics(struct fg__dp *p, struct fg_metrics *m)
{
    static const char *const outcomes[] = { "granted", "refused", "invalid" };
    struct fg_counter **c[] = { &p->granted, &p->refused, &p->invalid };
    for (int i = 0; i < 3; i++)
        *c[i] = fg_metrics_counter(m, "fracgpu_device_plugin_allocations_total",
                                   "Allocate calls answered, by outcome: granted (the pod's grant verified), refused "
                                   "(no waiting pod had a valid grant), invalid (unknown devices or a bad request).",
                                   (const char *[]){ "outcome", outcomes[i], NULL });
    p->reg_ok = fg_metrics_counter(m, "fracgpu_device_plugin_registrations_total", "Registrations with the kubelet.",
                                   (const char *[]){ "result", "ok", NULL });
    p->reg_failed = fg_metrics_counter(m, "fracgpu_device_plugin_registrations_total",
                                       "Registrations with the kubelet.", (const char *[]){ "result", "failed", NULL });
    static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1, 5 };
    p->allocate_seconds = fg_metrics_histogram(m, "fracgpu_device_plugin_allocate_seconds",
                                               "Time from an Allocate call to its answer (held calls included).", NULL,
                                               bounds, sizeof(bounds) / sizeof(*bounds));
}

enum fg_err fg_dp_setup(struct fg_manager *m, const struct fg_dp_opts *opts, struct fg_exporter *exporter,
                        char *errmsg)
{
    struct fg__dp *p = fg_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->incoming_mu, NULL);
    fg_manager_on_free(m, plugin_free, p);
    p->o = *opts;
    if (!p->o.slots)
        p->o.slots = FG_DP_SLOTS_DEFAULT;
    if (p->o.slots > FG_DP_SLOTS_MAX)
        return fg_errmsg(errmsg, FG_E_INVAL, "at most %d slots per GPU", FG_DP_SLOTS_MAX);
    if (!p->o.hold_ms)
        p->o.hold_ms = 3000;
    if (!p->o.mps_root)
        p->o.mps_root = "/run/fracgpu/mps";
    if (!p->o.key_namespace)
        p->o.key_namespace = "fracgpu-system";
    if (!p->o.pod_resources_socket)
        p->o.pod_resources_socket = FG_KUBELET_POD_RESOURCES_SOCKET;
    snprintf(p->dir, sizeof(p->dir), "%s", p->o.dir ? p->o.dir : FG_KUBELET_DEVICE_PLUGIN_DIR);
    size_t dl = strlen(p->dir);
    while (dl > 1 && p->dir[dl - 1] == '/')
        p->dir[--dl] = '\0';
    snprintf(p->socket_path, sizeof(p->socket_path), "%s/" FG_DP_RESOURCE_SOCKET, p->dir);
    snprintf(p->kubelet_path, sizeof(p->kubelet_path), "%s/" FG_KUBELET_SOCKET, p->dir);
    if (strlen(p->socket_path) > 107)
        return fg_errmsg(errmsg, FG_E_INVAL, "the device-plugin directory %s is too long for a unix socket", p->dir);
    p->form = p->o.form;
    if (p->form == FG_DP_FORM_AUTO) {
        char why[FG_ERRMSG_MAX] = "";
        p->form = fg_dp_form_detect(p->o.cdi_dirs ? p->o.cdi_dirs : FG_DP_CDI_DIRS_DEFAULT,
                                    p->o.runtime_config ? p->o.runtime_config : FG_DP_RUNTIME_CONFIG_DEFAULT, why);
        fg_log(FG_LOG_INFO, COMPONENT, "devices in the %s form: %s", fg_dp_form_name(p->form), why);
    }
    p->loop = fg_manager_loop(m);
    p->base = fg_kube_loop_base(p->loop);
    register_metrics(p, fg_manager_metrics(m));

    enum fg_err err;
    char *selector = fg_asprintf("spec.nodeName=%s", p->o.node);
    err = fg_informer_factory_get(fg_manager_informers(m),
                                  &(struct fg_informer_want){ .resource = &fg_kube_pods, .field_selector = selector,
                                                              .fields = pod_fields },
                                  &p->pods, errmsg);
    free(selector);
    if (err || (err = fg_informer_add_handler(p->pods, &pod_handler, p)) ||
        (err = fg_grant_watch_setup(m, p->o.key_namespace, COMPONENT, &p->keys, errmsg)) ||
        (err = fg_dp_enforcer_setup(m, p->o.node, &p->enforcer, errmsg)))
        return err;
    fg_exporter_on_devices(exporter, on_devices, p);
    err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "device-plugin", .start = start, .stop = stop,
                                                           .ud = p });
    return err ? fg_errmsg(errmsg, err, "cannot register the device plugin") : FG_OK;
}
