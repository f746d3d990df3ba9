/*
 * kubelet_fracgpu — fracgpu's device plugin on a simulated GPU node (kubelet.h).
 *
 * A real kubelet serves the Registration service on /var/lib/kubelet/device-plugins/kubelet.sock
 * and the PodResources API on /var/lib/kubelet/pod-resources/kubelet.sock, and at admission asks
 * the plugin of each extended resource a pod requests for its devices. Here each GPU node (gpuState
 * files) gets the same from e2e/devicemanager (fg_dm), on the kubelets' manager loop, at
 * <node>/var/lib/kubelet/...: fracgpu's node agent, whose DaemonSet's hostPaths map to those
 * directories, registers fracgpu.io/gpu-share there over the real gRPC. The node's device manager
 * (kubelet_devices.h) knows the resource through a plugin that `chooses`, which forwards:
 *   - allocate (a pod worker, no lock held) → fg_dm_allocate, waited for: the devices and the reply
 *     (env, mounts, CDI names) become the container's; a refusal fails the pod with kube's
 *     UnexpectedAdmissionError and the plugin's gRPC status in the message;
 *   - release and restore (under the kubelets' lock) → fg_dm_pod_gone and fg_dm_record, queued and
 *     handed to the loop, which must not be waited for under that lock.
 * The slots the plugin lists (healthy ones) are the node's fracgpu.io/gpu-share capacity, in its
 * status and at admission, as a kubelet reports a device plugin's resource. A restarted kubelets
 * process starts each node's device manager afresh, which removes the plugin's socket as a
 * restarting kubelet does, so the plugin registers again.
 *
 * With gpuState memory (thousands of nodes, for throughput benchmarks) no process runs per node:
 * the kubelet plays the node side in-process instead. fracgpu.io/gpu-share is FG_SIM_PLAYED_SLOTS
 * slots per GPU from boot, and a pod asking for one is given a slot of the GPU its
 * fracgpu.io/gpu-uuid names (its grant is trusted: the agent's checks are the e2e runs' subject, not
 * the benchmarks'); a capacity pod (fracgpu.io/role=capacity) holding a GPU is annotated with
 * fracgpu.io/gpu-uuid and fracgpu.io/gpu-memory-mib by the kubelet once it runs, as its holder would
 * (the model's memory less the driver's reservation and one context's overhead).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/devicemanager/devicemanager.h"
#include "operator/kube/loop.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define COMPONENT "kubelet"
#define FG_SIM_PLAYED_SLOTS 48            /* the device plugin's default slots per GPU */
#define FG_SIM_PLAYED_OVERHEAD_MIB 500    /* the capacity holder's default context overhead */
#define ALLOCATE_TIMEOUT_MS 15000
#define LOOP_TIMEOUT_MS 5000

/* A node's plugin state outlives the node: a pod worker may have taken it from the node's devices
 * under the kubelets' lock and be about to call it when the node goes. So a retired one is kept (its
 * sockets closed, its calls refused) until the kubelets stop and no worker runs. */
static pthread_mutex_t retired_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fg_sim_fracgpu *retired;
static struct played *retired_played;

struct queued {
    bool restore; /* else a release */
    char uid[64], ns[64], name[254], container[128];
    char **ids;
    size_t n;
};

struct fg_sim_fracgpu {
    struct fg_sim_fracgpu *next_retired;
    struct fg_sim_kubelets *k;
    char node[FG_SIM_NODE_NAME_MAX];
    char dir[PATH_MAX], pod_resources[PATH_MAX];
    struct fg_dm *dm;             /* the loop's */
    pthread_mutex_t mu;           /* guards what follows */
    pthread_cond_t idle;
    unsigned inflight;            /* allocations under way */
    bool stopping;
    struct queued *q;
    size_t nq;
    size_t slots;                 /* the ticker's: healthy slots last seen */
};

static struct fg_kube_loop *loop_of(const struct fg_sim_fracgpu *f)
{
    return fg_manager_loop(f->k->m);
}

static void queued_cleanup(struct queued *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->ids[i]);
    free(e->ids);
}

/* ---- the loop's side ---- */

struct start_step {
    struct fg_sim_fracgpu *f;
    enum fg_err err;
    char msg[FG_ERRMSG_MAX];
};

static void start_on_loop(void *ud)
{
    struct start_step *s = ud;
    struct fg_dm_opts o = { s->f->dir, s->f->pod_resources };
    s->err = fg_dm_new(fg_kube_loop_base(loop_of(s->f)), &o, &s->f->dm, s->msg);
}

static void free_on_loop(void *ud)
{
    struct fg_sim_fracgpu *f = ud;
    fg_dm_free(f->dm);
    f->dm = NULL;
}

static void drain_on_loop(void *ud)
{
    struct fg_sim_fracgpu *f = ud;
    pthread_mutex_lock(&f->mu);
    struct queued *q = f->q;
    size_t n = f->nq;
    f->q = NULL;
    f->nq = 0;
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; i < n; i++) {
        if (f->dm && q[i].restore)
            fg_dm_record(f->dm, q[i].ns, q[i].name, q[i].uid, q[i].container, FG_RES_GPU_SHARE,
                         (const char *const *)q[i].ids, q[i].n);
        else if (f->dm)
            fg_dm_pod_gone(f->dm, q[i].uid);
        queued_cleanup(&q[i]);
    }
    free(q);
}

struct probe {
    struct fg_sim_fracgpu *f;
    size_t healthy;
};

static void probe_on_loop(void *ud)
{
    struct probe *p = ud;
    p->healthy = 0;
    if (p->f->dm)
        fg_dm_resource(p->f->dm, FG_RES_GPU_SHARE, NULL, &p->healthy);
}

/* ---- the plugin, as the node's device manager sees it ---- */

static void enqueue(struct fg_sim_fracgpu *f, const struct queued *e)
{
    pthread_mutex_lock(&f->mu);
    f->q = fg_realloc(f->q, (f->nq + 1) * sizeof *f->q);
    f->q[f->nq++] = *e;
    pthread_mutex_unlock(&f->mu);
    fg_kube_loop_call(loop_of(f), drain_on_loop, f); /* freeing f waits for the loop past this call */
}

static void release(void *ud, const char *pod_uid)
{
    struct queued e = { .restore = false };
    snprintf(e.uid, sizeof e.uid, "%s", pod_uid);
    enqueue(ud, &e);
}

static void restore(void *ud, const struct fg_sim_alloc_request *req)
{
    struct queued e = { .restore = true };
    snprintf(e.uid, sizeof e.uid, "%s", req->pod_uid);
    snprintf(e.ns, sizeof e.ns, "%s", req->pod_namespace);
    snprintf(e.name, sizeof e.name, "%s", req->pod_name);
    snprintf(e.container, sizeof e.container, "%s", req->container);
    e.ids = fg_calloc(req->nids ? req->nids : 1, sizeof *e.ids);
    for (size_t i = 0; i < req->nids; i++)
        e.ids[e.n++] = fg_strdup(req->ids[i]);
    enqueue(ud, &e);
}

/* The reply of the plugin as the node's device manager keeps it. */
static void take_reply(const struct fg_dm_result *r, struct fg_sim_alloc_response *resp)
{
    const V1beta1__ContainerAllocateResponse *c = r->reply;
    resp->env = fg_calloc(c->n_envs ? c->n_envs : 1, sizeof *resp->env);
    for (size_t i = 0; i < c->n_envs; i++)
        resp->env[resp->nenv++] = fg_asprintf("%s=%s", c->envs[i]->key, c->envs[i]->value);
    resp->mounts = fg_calloc(c->n_mounts ? c->n_mounts : 1, sizeof *resp->mounts);
    for (size_t i = 0; i < c->n_mounts; i++)
        resp->mounts[resp->nmounts++] = (struct fg_sim_plugin_mount){
            fg_strdup(c->mounts[i]->container_path), fg_strdup(c->mounts[i]->host_path), c->mounts[i]->read_only };
    resp->cdi = fg_calloc(c->n_cdi_devices ? c->n_cdi_devices : 1, sizeof *resp->cdi);
    for (size_t i = 0; i < c->n_cdi_devices; i++)
        resp->cdi[resp->ncdi++] = fg_strdup(c->cdi_devices[i]->name);
    resp->ids = fg_calloc(r->n ? r->n : 1, sizeof *resp->ids);
    for (size_t i = 0; i < r->n; i++)
        resp->ids[resp->nids++] = fg_strdup(r->device_ids[i]);
}

/* gRPC's status names as Go's codes.Code prints them, for kube's messages. */
static const char *go_code(enum fg_grpc_status s)
{
    static const char *const names[] = { "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
                                         "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
                                         "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
                                         "Internal", "Unavailable", "DataLoss", "Unauthenticated" };
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "Unknown";
}

static enum fg_err allocate(void *ud, const struct fg_sim_alloc_request *req, struct fg_sim_alloc_response *resp,
                            char *errmsg)
{
    struct fg_sim_fracgpu *f = ud;
    pthread_mutex_lock(&f->mu);
    bool stopping = f->stopping;
    if (!stopping)
        f->inflight++;
    pthread_mutex_unlock(&f->mu);
    if (stopping)
        return fg_errmsg(errmsg, FG_E_SHUTDOWN, "the kubelet is stopping");
    struct fg_dm_result r;
    enum fg_err err = fg_dm_allocate_wait(loop_of(f), f->dm, req->pod_namespace, req->pod_name, req->pod_uid,
                                          req->container, req->resource, req->n, ALLOCATE_TIMEOUT_MS, &r);
    if (err == FG_E_NOT_FOUND_LOCAL)
        fg_errmsg(errmsg, err, "no healthy devices present; cannot allocate unhealthy devices %s", req->resource);
    else if (err == FG_E_BUSY)
        fg_errmsg(errmsg, err, "requested number of devices unavailable for %s. Requested: %zu", req->resource, req->n);
    else if (err)
        fg_errmsg(errmsg, err, "the %s device plugin did not answer: %s", req->resource, fg_err_str(err));
    else if (r.status != FG_GRPC_OK)
        err = fg_errmsg(errmsg, FG_E_KUBE_FORBIDDEN, "rpc error: code = %s desc = %s", go_code(r.status), r.message);
    else
        take_reply(&r, resp);
    if (!err || err == FG_E_KUBE_FORBIDDEN)
        fg_dm_result_cleanup(&r);
    pthread_mutex_lock(&f->mu);
    f->inflight--;
    pthread_cond_broadcast(&f->idle);
    pthread_mutex_unlock(&f->mu);
    return err;
}

static const struct fg_sim_device_plugin fracgpu_plugin = {
    .name = "fracgpu", .chooses = true, .allocate = allocate, .release = release, .restore = restore,
};

/* ---- played in-process (gpuState memory) ---- */

struct played {
    struct played *next_retired;
    struct fg_sim_kubelets *k;
    char node[FG_SIM_NODE_NAME_MAX];
    atomic_uint next; /* slot numbers handed out, for distinct IDs */
};

static enum fg_err played_allocate(void *ud, const struct fg_sim_alloc_request *req, struct fg_sim_alloc_response *resp,
                                   char *errmsg)
{
    struct played *pl = ud;
    char key[400];
    snprintf(key, sizeof key, "%s/%s", req->pod_namespace, req->pod_name);
    json_object *pod = fg_store_get_json(fg_informer_store(pl->k->pods), key);
    const char *uuid = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_UUID, NULL);
    enum fg_err err = FG_OK;
    if (!uuid)
        err = fg_errmsg(errmsg, FG_E_KUBE_FORBIDDEN, "rpc error: code = PermissionDenied desc = no %s on pod %s",
                        FG_ANN_GPU_UUID, key);
    else {
        resp->env = fg_calloc(1, sizeof *resp->env);
        resp->env[resp->nenv++] = fg_asprintf("NVIDIA_VISIBLE_DEVICES=%s", uuid);
        resp->ids = fg_calloc(req->n ? req->n : 1, sizeof *resp->ids);
        for (size_t i = 0; i < req->n; i++)
            resp->ids[resp->nids++] = fg_asprintf("%s::%u", uuid, atomic_fetch_add(&pl->next, 1));
    }
    json_object_put(pod);
    return err;
}

static const struct fg_sim_device_plugin played_plugin = {
    .name = "fracgpu (played)", .chooses = true, .allocate = played_allocate,
    .release = fg_sim_device_plugin_release_none, .restore = fg_sim_device_plugin_restore_none,
};

static void play_boot(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    struct played *pl = fg_calloc(1, sizeof *pl);
    pl->k = k;
    snprintf(pl->node, sizeof pl->node, "%s", n->name);
    pthread_mutex_lock(&k->mu);
    n->played = pl;
    fg_sim_devices_register(&n->devices, FG_RES_GPU_SHARE, &played_plugin, pl, NULL, 0);
    enum fg_err err = fg_resources_set(&n->capacity, FG_RES_GPU_SHARE, (int64_t)n->ngpus * FG_SIM_PLAYED_SLOTS * 1000);
    pthread_mutex_unlock(&k->mu);
    if (err)
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot record %s capacity", n->name, FG_RES_GPU_SHARE);
}

void fg_sim_fracgpu_play_holder(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod)
{
    if (k->cfg->kubelet.gpu_state != FG_SIM_GPU_STATE_MEMORY ||
        !fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_ROLE, NULL), FG_ROLE_CAPACITY) ||
        fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_UUID, NULL) ||
        !fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running"))
        return;
    char uuid[FG_SIM_DEVICE_ID_MAX] = "";
    int64_t memory_mib = 0;
    pthread_mutex_lock(&k->mu);
    for (size_t i = 0; i < p->ngrants && !uuid[0]; i++)
        if (!strcmp(p->grants[i].resource, FG_RES_NVIDIA_GPU) && p->grants[i].nids == 1)
            snprintf(uuid, sizeof uuid, "%s", p->grants[i].ids[0]);
    if (p->node)
        memory_mib = p->node->group->gpu_memory_mib - (FG_SIM_GPU_RESERVED_BYTES >> 20) - FG_SIM_PLAYED_OVERHEAD_MIB;
    pthread_mutex_unlock(&k->mu);
    if (!uuid[0])
        return;
    char patch[512];
    snprintf(patch, sizeof patch, "{\"metadata\":{\"annotations\":{\"%s\":\"%s\",\"%s\":\"%lld\"}}}", FG_ANN_GPU_UUID,
             uuid, FG_ANN_GPU_MEMORY_MIB, (long long)memory_mib);
    char *path = fg_kube_path(&fg_kube_pods, fg_json_get_str(pod, "metadata", "namespace", NULL),
                              fg_json_get_str(pod, "metadata", "name", NULL), NULL, NULL);
    if (fg_kube_patch(k->client, path, FG_KUBE_PATCH_MERGE, patch, NULL, NULL) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "capacity pod %s: cannot report its GPU (played holder)", p->key);
    free(path);
}

/* ---- the node's side ---- */

void fg_sim_fracgpu_boot(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    if (n->ngpus && k->cfg->kubelet.gpu_state == FG_SIM_GPU_STATE_MEMORY && !n->played)
        play_boot(k, n);
    if (!n->ngpus || k->cfg->kubelet.gpu_state != FG_SIM_GPU_STATE_FILES || n->fracgpu)
        return;
    struct fg_sim_fracgpu *f = fg_calloc(1, sizeof *f);
    f->k = k;
    snprintf(f->node, sizeof f->node, "%s", n->name);
    snprintf(f->dir, sizeof f->dir, "%.1279s/var/lib/kubelet/device-plugins", n->root);
    snprintf(f->pod_resources, sizeof f->pod_resources, "%.1279s/var/lib/kubelet/pod-resources/kubelet.sock", n->root);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->idle, NULL);
    struct start_step s = { f, FG_OK, "" };
    if (fg_kube_loop_call_wait(fg_manager_loop(k->m), start_on_loop, &s, LOOP_TIMEOUT_MS) != FG_OK || s.err) {
        fg_log(FG_LOG_ERROR, COMPONENT, "node %s: cannot serve the device-plugin sockets: %s", n->name,
               s.msg[0] ? s.msg : "the loop did not answer");
        pthread_cond_destroy(&f->idle);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return;
    }
    pthread_mutex_lock(&k->mu);
    n->fracgpu = f;
    fg_sim_devices_register(&n->devices, FG_RES_GPU_SHARE, &fracgpu_plugin, f, NULL, 0);
    /* none until the plugin lists them: reported as 0, so a status written by an earlier run of the
     * kubelets does not keep advertising its slots meanwhile (a merge patch keeps what it omits) */
    enum fg_err err = fg_resources_set(&n->capacity, FG_RES_GPU_SHARE, 0);
    pthread_mutex_unlock(&k->mu);
    if (err)
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot record %s capacity", n->name, FG_RES_GPU_SHARE);
}

bool fg_sim_fracgpu_tick(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    struct fg_sim_fracgpu *f = n->fracgpu;
    struct probe p = { f, 0 };
    if (!f || fg_kube_loop_call_wait(fg_manager_loop(k->m), probe_on_loop, &p, LOOP_TIMEOUT_MS) != FG_OK ||
        p.healthy == f->slots)
        return false;
    f->slots = p.healthy;
    pthread_mutex_lock(&k->mu);
    enum fg_err err = fg_resources_set(&n->capacity, FG_RES_GPU_SHARE, (int64_t)p.healthy * 1000);
    pthread_mutex_unlock(&k->mu);
    if (err)
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot record %s capacity", n->name, FG_RES_GPU_SHARE);
    fg_log(FG_LOG_INFO, COMPONENT, "node %s: %s %zu (the device plugin's healthy devices)", n->name,
           FG_RES_GPU_SHARE, p.healthy);
    return true;
}

static void fracgpu_destroy(struct fg_sim_fracgpu *f)
{
    for (size_t i = 0; i < f->nq; i++)
        queued_cleanup(&f->q[i]);
    free(f->q);
    pthread_cond_destroy(&f->idle);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void fg_sim_fracgpu_free(struct fg_sim_kubelets *k, struct fg_sim_node *n, bool loop_running)
{
    pthread_mutex_lock(&retired_mu);
    if (n->played) {
        if (loop_running) {
            n->played->next_retired = retired_played;
            retired_played = n->played;
        } else {
            free(n->played);
        }
    }
    pthread_mutex_unlock(&retired_mu);
    n->played = NULL;
    struct fg_sim_fracgpu *f = n->fracgpu;
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    while (f->inflight)
        pthread_cond_wait(&f->idle, &f->mu);
    pthread_mutex_unlock(&f->mu);
    /* the loop runs calls in order: once this one ran, no drain of f is left in it */
    if (!loop_running)
        free_on_loop(f); /* the loop is stopped: nothing else runs there */
    else if (fg_kube_loop_call_wait(fg_manager_loop(k->m), free_on_loop, f, LOOP_TIMEOUT_MS) != FG_OK) {
        fg_log(FG_LOG_ERROR, COMPONENT, "node %s: the loop did not close its device-plugin sockets", n->name);
        n->fracgpu = NULL; /* the loop may still run its calls: leaking f beats a use after free */
        return;
    }
    n->fracgpu = NULL;
    if (!loop_running) {
        fracgpu_destroy(f);
        return;
    }
    pthread_mutex_lock(&retired_mu);
    f->next_retired = retired;
    retired = f;
    pthread_mutex_unlock(&retired_mu);
}

void fg_sim_fracgpu_cleanup(void)
{
    pthread_mutex_lock(&retired_mu);
    while (retired) {
        struct fg_sim_fracgpu *f = retired;
        retired = f->next_retired;
        fracgpu_destroy(f);
    }
    while (retired_played) {
        struct played *pl = retired_played;
        retired_played = pl->next_retired;
        free(pl);
    }
    pthread_mutex_unlock(&retired_mu);
}
