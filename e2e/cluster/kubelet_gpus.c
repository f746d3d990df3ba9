/*
 * kubelet_gpus — what the pods on a simulated node do with its GPUs, and how a node agent sees it.
 *
 * Which GPU a container uses (c->gpus), decided when the pod is taken on:
 *   - a container granted nvidia.com/gpu devices: those GPUs;
 *   - a fractional pod (it requests fracgpu.io/gpu-share; fracgpu's scheduler bound it with the
 *     annotation fracgpu.io/gpu-uuid): its containers that request a share, on that GPU;
 *   - a pod with no GPU request annotated sim.fracgpu.io/gpu-uuid: its first container, on that
 *     GPU — a pod an exporter must see although it holds no GPU.
 * A GPU named that is not one of the node's is a problem reported on the pod, which runs anyway.
 *
 * While such a container runs it has one GPU process (a PID from simids.h), on each of its GPUs,
 * using what the pod's usage profile (gpuusage.h) says at that moment of the container's life,
 * sampled at whole usage intervals. The processes of a node make its snapshot (nvmlstate.h): in
 * memory mode taken only when asked (fg_sim_gpus_snapshot); with gpuState files written by the
 * ticker as the fake NVML's state (nodes/<node>/nvml/state.json) and a proc tree
 * (nodes/<node>/proc/<pid>/cgroup, cmdline) with the cgroup paths of the node's runtime
 * (runtime.h), each file replaced whole and only when it changed. A process's proc entry is
 * written before the state lists it and removed after the state stops listing it, so a reader of
 * the state never meets a PID it cannot place.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"

#define COMPONENT "kubelet"

/* ---- which GPUs ---- */

/* Appends "; what" (or "what" first) to p->problem. */
__attribute__((format(printf, 2, 3))) static void problem(struct fg_sim_pod *p, const char *fmt, ...)
{
    size_t len = strlen(p->problem);
    if (len + 3 >= sizeof p->problem)
        return;
    if (len)
        len += (size_t)snprintf(p->problem + len, sizeof p->problem - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->problem + len, sizeof p->problem - len, fmt, ap);
    va_end(ap);
}

/* The index of the GPU annotation name names on p's node, or -1 (a problem said). */
static int annotated_gpu(struct fg_sim_pod *p, json_object *pod, const char *name)
{
    const char *uuid = fg_json_get_str(pod, "metadata", "annotations", name, NULL);
    int g = fg_sim_nvidia_gpu_index(p->node, uuid);
    if (g < 0)
        problem(p, "annotation %s: %s%s%s is not a GPU of node %s", name, uuid ? "\"" : "", uuid ? uuid : "missing",
                uuid ? "\"" : "", p->node->name);
    return g;
}

void fg_sim_gpus_pod_setup(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod)
{
    fg_sim_usage_parse(pod, &k->traces, &p->usage, p->problem, sizeof p->problem);
    if (!p->node || !p->node->ngpus)
        return;
    bool whole = false, shared = false;
    for (size_t i = 0; i < p->ngrants; i++) {
        const struct fg_sim_grant *g = &p->grants[i];
        for (size_t d = 0; d < g->nids && !strcmp(g->resource, FG_RES_NVIDIA_GPU); d++) {
            int idx = fg_sim_nvidia_gpu_index(p->node, g->ids[d]);
            if (idx >= 0)
                p->containers[g->container].gpus |= 1u << idx;
        }
    }
    for (size_t i = 0; i < p->ncontainers; i++) {
        json_object *spec = fg_sim_container_spec(p, pod, i);
        whole = whole || fg_sim_container_wants(spec, FG_RES_NVIDIA_GPU) > 0;
        shared = shared || fg_sim_container_wants(spec, FG_RES_GPU_SHARE) > 0;
    }
    int g;
    if (shared && (g = annotated_gpu(p, pod, FG_ANN_GPU_UUID)) >= 0) {
        for (size_t i = 0; i < p->ncontainers; i++)
            if (fg_sim_container_wants(fg_sim_container_spec(p, pod, i), FG_RES_GPU_SHARE) > 0)
                p->containers[i].gpus |= 1u << g;
    }
    if (!fg_json_get(pod, "metadata", "annotations", FG_SIM_ANN_GPU_UUID, NULL))
        return;
    if (whole || shared)
        problem(p, "annotation %s: ignored, the pod requests GPUs of its own", FG_SIM_ANN_GPU_UUID);
    else if (p->ncontainers > p->ninit && (g = annotated_gpu(p, pod, FG_SIM_ANN_GPU_UUID)) >= 0)
        p->containers[p->ninit].gpus |= 1u << g;
}

/* ---- the snapshot ---- */

struct procs {
    struct fg_sim_gpu_process *v;
    size_t n;
};

/* The moment use is sampled at for now_ms: the last whole usage interval. */
static int64_t sample_time(const struct fg_sim_kubelets *k, int64_t now_ms)
{
    int64_t interval_ms = (int64_t)(k->cfg->usage.interval_ns / FG_NS_PER_MS);
    return interval_ms > 0 ? now_ms - now_ms % interval_ms : now_ms;
}

/* p's running GPU processes at t_ms. mu held. */
static void add_processes(const struct fg_sim_kubelets *k, const struct fg_sim_pod *p, int64_t t_ms, struct procs *out)
{
    if (p->released)
        return;
    for (size_t i = 0; i < p->ncontainers; i++) {
        const struct fg_sim_container *c = &p->containers[i];
        if (!c->gpus || c->state != CONTAINER_RUNNING)
            continue;
        out->v = fg_realloc(out->v, (out->n + 1) * sizeof *out->v);
        struct fg_sim_gpu_process *e = &out->v[out->n++];
        memset(e, 0, sizeof *e);
        e->pid = fg_sim_container_pid(p->uid, c->name, c->restarts);
        e->gpus = c->gpus;
        fg_sim_usage_at(&p->usage, (double)(t_ms - c->started_ms) / 1000.0, k->cfg->usage.time_scale, &e->sm, &e->mem);
        snprintf(e->pod_uid, sizeof e->pod_uid, "%s", p->uid);
        fg_sim_container_id(p->uid, c->name, c->restarts, e->container_id);
        e->qos = p->qos;
    }
}

static int by_pid(const void *a, const void *b)
{
    const struct fg_sim_gpu_process *x = a, *y = b;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Sorts the processes by PID; two that drew one PID: the later moves on. */
static void order(struct procs *procs)
{
    if (procs->n < 2)
        return;
    qsort(procs->v, procs->n, sizeof *procs->v, by_pid);
    for (size_t i = 1; i < procs->n; i++)
        if (procs->v[i].pid <= procs->v[i - 1].pid)
            procs->v[i].pid = procs->v[i - 1].pid + 1 < FG_SIM_PID_MAX ? procs->v[i - 1].pid + 1 : FG_SIM_PID_MIN;
    qsort(procs->v, procs->n, sizeof *procs->v, by_pid);
}

/* n's snapshot with the processes given (taken). */
static void snapshot_of(const struct fg_sim_node *n, struct procs *procs, struct fg_sim_gpu_snapshot *out)
{
    memset(out, 0, sizeof *out);
    out->ngpus = n->ngpus;
    snprintf(out->model, sizeof out->model, "%s", n->group->gpu_model);
    out->memory_bytes = n->group->gpu_memory_mib * 1024 * 1024;
    memcpy(out->uuids, n->gpu_uuid, sizeof out->uuids);
    order(procs);
    out->procs = procs->v;
    out->nprocs = procs->n;
}

/* n's processes at now_ms. mu held. */
static void node_processes(const struct fg_sim_kubelets *k, const struct fg_sim_node *n, int64_t now_ms,
                           struct procs *out)
{
    int64_t t = sample_time(k, now_ms);
    for (size_t i = 0; i < k->npods; i++)
        if (k->pods_v[i]->node == n)
            add_processes(k, k->pods_v[i], t, out);
}

bool fg_sim_gpus_snapshot(struct fg_sim_kubelets *k, const char *node, int64_t now_ms, struct fg_sim_gpu_snapshot *out)
{
    struct procs procs = { 0 };
    pthread_mutex_lock(&k->mu);
    const struct fg_sim_node *n = fg_sim_node_find(k, node);
    if (n) {
        node_processes(k, n, now_ms, &procs);
        snapshot_of(n, &procs, out);
    }
    pthread_mutex_unlock(&k->mu);
    return n != NULL;
}

/* ---- the files ---- */

static bool shown(const struct fg_sim_node *n, unsigned pid)
{
    size_t lo = 0, hi = n->nshown;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (n->shown[mid].pid == pid)
            return true;
        if (n->shown[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static bool shows(const struct fg_sim_gpu_snapshot *s, unsigned pid)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid)
            return true;
    return false;
}

/* Does the snapshot show what n's files show? */
static bool unchanged(const struct fg_sim_node *n, const struct fg_sim_gpu_snapshot *s)
{
    if (!n->gpus_written || n->nshown != s->nprocs)
        return false;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct fg_sim_gpu_process *a = &n->shown[i], *b = &s->procs[i];
        if (a->pid != b->pid || a->gpus != b->gpus || a->sm != b->sm || a->mem != b->mem)
            return false;
    }
    return true;
}

static void write_proc(const struct fg_sim_node *n, const struct fg_sim_gpu_process *e)
{
    char path[PATH_MAX + 64], text[2048];
    snprintf(path, sizeof path, "%s/proc/%u", n->root, e->pid);
    fg_mkdir_p(path);
    size_t len = fg_sim_runtime_cgroup(n->runtime, e->qos, e->pod_uid, e->container_id, text, sizeof text);
    snprintf(path, sizeof path, "%s/proc/%u/cgroup", n->root, e->pid);
    bool ok = fg_write_file_atomic(path, text, len) == 0;
    static const char cmdline[] = "/usr/bin/python3\0serve.py";   /* argv as the kernel lays it out */
    snprintf(path, sizeof path, "%s/proc/%u/cmdline", n->root, e->pid);
    ok = fg_write_file_atomic(path, cmdline, sizeof cmdline) == 0 && ok;
    if (!ok)
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot write the proc entry of pid %u: %s", n->name, e->pid,
               strerror(errno));
}

/* Makes n's files show s (taking its processes): new processes' proc entries, the state, then
 * the proc entries of processes gone. */
static void show(struct fg_sim_node *n, struct fg_sim_gpu_snapshot *s)
{
    if (unchanged(n, s)) {
        fg_sim_gpu_snapshot_cleanup(s);
        return;
    }
    for (size_t i = 0; i < s->nprocs; i++)
        if (!shown(n, s->procs[i].pid))
            write_proc(n, &s->procs[i]);
    char path[PATH_MAX + 64], *text = fg_sim_nvml_state(s);
    snprintf(path, sizeof path, "%s/nvml/state.json", n->root);
    if (fg_write_file_atomic(path, text, strlen(text)))
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot write %s: %s", n->name, path, strerror(errno));
    free(text);
    for (size_t i = 0; i < n->nshown; i++) {
        if (shows(s, n->shown[i].pid))
            continue;
        snprintf(path, sizeof path, "%s/proc/%u", n->root, n->shown[i].pid);
        fg_remove_tree(path);
    }
    free(n->shown);
    n->shown = s->procs;
    n->nshown = s->nprocs;
    n->gpus_written = true;
    s->procs = NULL;
    s->nprocs = 0;
}

void fg_sim_gpus_write_node(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    if (!n->ngpus || k->cfg->kubelet.gpu_state != FG_SIM_GPU_STATE_FILES)
        return;
    struct procs procs = { 0 };
    struct fg_sim_gpu_snapshot s;
    pthread_mutex_lock(&k->mu);
    node_processes(k, n, fg_clock_wall_ms(), &procs);
    pthread_mutex_unlock(&k->mu);
    snapshot_of(n, &procs, &s);
    show(n, &s);
}

void fg_sim_gpus_tick(struct fg_sim_kubelets *k)
{
    if (k->cfg->kubelet.gpu_state != FG_SIM_GPU_STATE_FILES)
        return;
    int64_t t = sample_time(k, fg_clock_wall_ms());
    pthread_mutex_lock(&k->mu);
    size_t n = k->nnodes;
    struct fg_sim_node **nodes = fg_calloc(n ? n : 1, sizeof *nodes);
    struct procs *procs = fg_calloc(n ? n : 1, sizeof *procs);
    memcpy(nodes, k->nodes, n * sizeof *nodes);
    for (size_t i = 0; i < n; i++)
        nodes[i]->slot = i;
    for (size_t i = 0; i < k->npods; i++) {   /* one pass: each pod's processes to its node */
        const struct fg_sim_pod *p = k->pods_v[i];
        if (p->node && p->node->ngpus)
            add_processes(k, p, t, &procs[p->node->slot]);
    }
    pthread_mutex_unlock(&k->mu);
    for (size_t i = 0; i < n; i++) {   /* nodes are freed only on this thread */
        struct fg_sim_gpu_snapshot s;
        snapshot_of(nodes[i], &procs[i], &s);
        if (nodes[i]->registered && !nodes[i]->gone && nodes[i]->ngpus)
            show(nodes[i], &s);
        else
            fg_sim_gpu_snapshot_cleanup(&s);
    }
    free(procs);
    free(nodes);
}

void fg_sim_gpus_node_free(struct fg_sim_node *n)
{
    free(n->shown);
    n->shown = NULL;
    n->nshown = 0;
}
