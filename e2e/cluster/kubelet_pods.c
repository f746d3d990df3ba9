/*
 * kubelet_pods — the lifecycle of a pod on a simulated node, as one level-based reconcile per pod
 * key. See kubelet.h for the picture and the locking.
 *
 * Admission (once per pod UID): the pod's requests (resources.h) must fit the node's allocatable
 * next to the pods already admitted there, its node selector and required node affinity must match
 * and its tolerations cover the node's NoExecute taints; otherwise it fails at once with kube's
 * reasons (OutOfcpu, OutOfmemory, OutOfpods, Out<resource>, NodeAffinity, Taint) and message. An
 * admitted pod gets an address of its node and, after the configured pod start delay, its init
 * containers run one after another, then its containers. A container of fracgpu's image is a real
 * process (kubelet_proc.c); any other is simulated: it runs for the pod's
 * sim.fracgpu.io/run-seconds annotation, else — in a pod whose restartPolicy is not Always — the
 * configured jobDuration, else until stopped, and exits with sim.fracgpu.io/exit-code (default 0).
 * A container that ends is restarted as restartPolicy says, after CrashLoopBackOff (the configured
 * first delay, doubling to 5 minutes). Readiness and liveness probes run against real processes;
 * simulated containers pass theirs. The phase follows kube's rules (Pending, Running, Succeeded,
 * Failed).
 *
 * Deletion: a pod given a deletionTimestamp has its processes sent SIGTERM, and SIGKILL when its
 * grace period runs out; then the kubelet deletes it for good (grace period 0), as kube's does.
 * A pod that vanished from the API has its processes killed and is forgotten.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/objects.h"
#include "e2e/cluster/pidfile.h"
#include "operator/kube/event.h"
#include "operator/kube/nodematch.h"
#include "operator/kube/quantity.h"

#define COMPONENT "kubelet"
#define BACKOFF_MAX_NS (300 * FG_NS_PER_S)
#define POLL_NS (100 * FG_NS_PER_MS)

static struct fg_sim_pod *pod_find(struct fg_sim_kubelets *k, const char *key)
{
    void *p = NULL;
    return lh_table_lookup_ex(k->pod_index, key, &p) ? p : NULL;
}

static void kill_processes(struct fg_sim_pod *p, int sig)
{
    for (size_t i = 0; i < p->ncontainers; i++)
        if (p->containers[i].state == CONTAINER_RUNNING && p->containers[i].real)
            fg_sim_proc_signal(&p->containers[i], sig);
}

/* Forgets p: its processes killed and reaped, its address returned. mu held. */
static void pod_forget(struct fg_sim_kubelets *k, struct fg_sim_pod *p)
{
    kill_processes(p, SIGKILL);
    for (size_t i = 0; i < p->ncontainers; i++) {
        struct fg_sim_container *c = &p->containers[i];
        if (c->real && c->pid > 0 && c->child && !c->exited)
            waitpid(c->pid, NULL, 0);
        char pidfile[PATH_MAX];
        fg_sim_proc_pidfile(p, c, pidfile);
        unlink(pidfile);
    }
    if (p->node) {
        fg_sim_node_release_ip(p->node, p->ip);
        if (p->admitted && !p->rejected)
            fg_resources_sub(&p->node->used, &p->requests);
    }
    lh_table_delete(k->pod_index, p->key);
    k->pods_v[p->slot] = k->pods_v[--k->npods];
    k->pods_v[p->slot]->slot = p->slot;
    free(p);
}

void fg_sim_pods_kill_all(struct fg_sim_kubelets *k, struct fg_sim_node *node)
{
    for (size_t i = 0; i < k->npods; i++) {
        struct fg_sim_pod *p = k->pods_v[i];
        if (node && p->node != node)
            continue;
        kill_processes(p, SIGKILL);
        p->node = NULL;   /* the node's table of addresses and its charges go with it */
        fg_manager_controller_enqueue(k->pod_ctl, p->key);
    }
}

void fg_sim_pods_tick(struct fg_sim_kubelets *k)
{
    pthread_mutex_lock(&k->mu);
    for (size_t i = 0; i < k->npods; i++) {
        struct fg_sim_pod *p = k->pods_v[i];
        bool changed = false;
        for (size_t j = 0; j < p->ncontainers; j++) {
            struct fg_sim_container *c = &p->containers[j];
            if (!c->real || c->state != CONTAINER_RUNNING || c->exited || c->pid <= 0)
                continue;
            int status = 0;
            if (c->child ? waitpid(c->pid, &status, WNOHANG) == c->pid : fg_sim_proc_starttime(c->pid) == 0) {
                c->exited = true;
                c->exit_code = !c->child ? 137 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                changed = true;
            }
        }
        if (changed)
            fg_manager_controller_enqueue(k->pod_ctl, p->key);
    }
    pthread_mutex_unlock(&k->mu);
}

/* ---- admission ---- */

/* What admission reads of the node: its name, labels and taints, as it registered them. */
static json_object *admission_node(const struct fg_sim_node *node)
{
    json_object *n = json_object_new_object();
    json_object *meta = fg_json_ensure_obj(n, "metadata");
    fg_json_set_str(meta, "name", node->name);
    json_object_object_add(meta, "labels", fg_sim_cloud_node_labels(node->group, node->name));
    json_object_object_add(fg_json_ensure_obj(n, "spec"), "taints", json_object_get(node->group->taints));
    return n;
}

/* NULL when pod fits node next to the pods admitted there; else the reason, and why in message. */
static const char *admit(struct fg_sim_node *node, json_object *node_json, json_object *pod,
                         struct fg_resources *requests, char *message, size_t size)
{
    char why[FG_ERRMSG_MAX];
    if (fg_pod_requests(pod, requests, why) != FG_OK) {
        snprintf(message, size, "Pod was rejected: %.400s", why);
        return "UnexpectedAdmissionError";
    }
    if (fg_resources_add(requests, "pods", 1000) != FG_OK) {
        snprintf(message, size, "Pod was rejected: too many resources");
        return "UnexpectedAdmissionError";
    }
    if (!fg_node_matches_pod(pod, node_json)) {
        snprintf(message, size, "Pod was rejected: Predicate NodeAffinity failed");
        return "NodeAffinity";
    }
    if (fg_untolerated_taint(fg_json_get(node_json, "spec", "taints", NULL), fg_json_get(pod, "spec", "tolerations", NULL),
                             true)) {
        snprintf(message, size, "Pod was rejected: Predicate TaintToleration failed");
        return "Taint";
    }
    const struct fg_resources *used = &node->used;
    for (size_t i = 0; i < requests->n; i++) {
        const struct fg_resource_amount *r = &requests->v[i];
        int64_t have = fg_resources_get(used, r->name), cap = fg_resources_get(&node->group->capacity, r->name);
        if (r->milli <= 0 || have + r->milli <= cap)
            continue;
        static char reason[FG_RESOURCE_NAME_MAX + 8];
        snprintf(reason, sizeof reason, "Out%s", r->name);
        bool milli = !strcmp(r->name, "cpu");
        snprintf(message, size, "Pod was rejected: Node didn't have enough resource: %s, requested: %lld, used: %lld, "
                 "capacity: %lld", r->name, (long long)(milli ? r->milli : fg_quantity_units(r->milli)),
                 (long long)(milli ? have : fg_quantity_units(have)), (long long)(milli ? cap : fg_quantity_units(cap)));
        return reason;
    }
    return NULL;
}

/* ---- containers ---- */

static int64_t annotation_int(json_object *pod, const char *name, int64_t dflt)
{
    const char *s = fg_json_get_str(pod, "metadata", "annotations", name, NULL);
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : 0;
    return s && *s && !*end ? v : dflt;
}

static json_object *container_spec(const struct fg_sim_pod *p, json_object *pod, size_t i)
{
    return i < p->ninit ? json_object_array_get_idx(fg_json_get(pod, "spec", "initContainers", NULL), i)
                        : json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), i - p->ninit);
}

static void set_up_containers(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod)
{
    json_object *lists[2] = { fg_json_get(pod, "spec", "initContainers", NULL), fg_json_get(pod, "spec", "containers", NULL) };
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < fg_json_array_len(lists[l]) && p->ncontainers < FG_SIM_MAX_CONTAINERS; i++) {
            json_object *spec = json_object_array_get_idx(lists[l], i);
            struct fg_sim_container *c = &p->containers[p->ncontainers++];
            snprintf(c->name, sizeof c->name, "%s", fg_json_get_str(spec, "name", NULL) ? fg_json_get_str(spec, "name", NULL) : "");
            c->init = l == 0;
            c->real = fg_sim_config_is_fracgpu_image(k->cfg, fg_json_get_str(spec, "image", NULL));
            c->state = CONTAINER_WAITING;
            c->waiting_reason = c->init ? "PodInitializing" : "ContainerCreating";
            c->backoff_ns = k->cfg->kubelet.crash_backoff_ns;
            p->has_real = p->has_real || c->real;
        }
        if (l == 0)
            p->ninit = p->ncontainers;
    }
}

static const char *restart_policy(json_object *pod)
{
    const char *r = fg_json_get_str(pod, "spec", "restartPolicy", NULL);
    return r ? r : "Always";
}

static void start_container(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, size_t i, uint64_t now)
{
    struct fg_sim_container *c = &p->containers[i];
    json_object *spec = container_spec(p, pod, i);
    c->ready = false;
    c->ready_successes = c->ready_failures = c->live_failures = 0;
    c->exited = false;
    c->run_until_ns = 0;
    if (c->real) {
        char why[FG_ERRMSG_MAX] = "";
        pthread_mutex_unlock(&k->mu);   /* spawning reads ConfigMaps and Secrets from the API */
        enum fg_err err = fg_sim_proc_start(k, p, pod, i, why);
        pthread_mutex_lock(&k->mu);
        if (err) {
            c->state = CONTAINER_WAITING;
            c->waiting_reason = "CreateContainerError";
            c->restart_at_ns = now + c->backoff_ns;
            fg_log_obj(FG_LOG_WARN, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
                       fg_json_get_str(pod, "metadata", "name", NULL), "container %s: %s", c->name, why);
            return;
        }
    } else {
        int64_t secs = annotation_int(pod, FG_SIM_ANN_RUN_SECONDS, -1);
        if (secs >= 0)
            c->run_until_ns = now + (uint64_t)secs * FG_NS_PER_S;
        else if (strcmp(restart_policy(pod), "Always") || c->init)
            c->run_until_ns = now + k->cfg->kubelet.job_run_ns;
        c->ready = !fg_json_get(spec, "readinessProbe", NULL);
    }
    c->state = CONTAINER_RUNNING;
    c->started_ms = fg_clock_wall_ms();
    int64_t delay = 0;
    fg_json_get_int64(spec, &delay, "readinessProbe", "initialDelaySeconds", NULL);
    c->next_readiness_ns = now + (uint64_t)delay * FG_NS_PER_S;
    delay = 0;
    fg_json_get_int64(spec, &delay, "livenessProbe", "initialDelaySeconds", NULL);
    c->next_liveness_ns = now + (uint64_t)delay * FG_NS_PER_S;
}

/* Records that c ended with exit_code; schedules its restart when the policy wants one. */
static void container_ended(struct fg_sim_pod *p, json_object *pod, struct fg_sim_container *c, int exit_code,
                            uint64_t now)
{
    (void)p;
    c->state = CONTAINER_TERMINATED;
    c->exit_code = exit_code;
    c->finished_ms = fg_clock_wall_ms();
    c->terminated_reason = exit_code ? "Error" : "Completed";
    c->ready = false;
    c->pid = 0;
    const char *policy = restart_policy(pod);
    bool restart = !strcmp(policy, "Always") || (!strcmp(policy, "OnFailure") && exit_code != 0) ||
                   (c->init && exit_code != 0 && strcmp(policy, "Never"));
    if (!restart)
        return;
    c->had_last = true;
    c->last_exit_code = exit_code;
    c->last_started_ms = c->started_ms;
    c->last_finished_ms = c->finished_ms;
    c->last_reason = c->terminated_reason;
    c->restarts++;
    c->state = CONTAINER_WAITING;
    c->waiting_reason = "CrashLoopBackOff";
    if ((uint64_t)(c->finished_ms - c->started_ms) * FG_NS_PER_MS > 10 * 60 * FG_NS_PER_S)
        c->backoff_ns = c->backoff_ns ? c->backoff_ns : FG_NS_PER_S;   /* ran long enough: backoff starts over */
    c->restart_at_ns = now + c->backoff_ns;
    c->backoff_ns = c->backoff_ns * 2 < BACKOFF_MAX_NS ? c->backoff_ns * 2 : BACKOFF_MAX_NS;
}

static void note_next(uint64_t *next, uint64_t at)
{
    if (at && (!*next || at < *next))
        *next = at;
}

struct probe_job {
    size_t container;
    bool liveness;
    json_object *probe, *spec;   /* borrowed from the pod */
};

/* Moves container i forward at now: started when it waits and its backoff is over, ended when its
 * process exited or its simulated run is over. */
static void step_container(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, size_t i, uint64_t now,
                           uint64_t *next)
{
    struct fg_sim_container *c = &p->containers[i];
    if (c->state == CONTAINER_WAITING && now >= c->restart_at_ns)
        start_container(k, p, pod, i, now);
    if (c->state == CONTAINER_RUNNING && c->real && c->exited)
        container_ended(p, pod, c, c->exit_code, now);
    else if (c->state == CONTAINER_RUNNING && !c->real && c->run_until_ns && now >= c->run_until_ns)
        container_ended(p, pod, c, (int)annotation_int(pod, FG_SIM_ANN_EXIT_CODE, 0), now);
    note_next(next, c->state == CONTAINER_WAITING ? c->restart_at_ns
                    : c->state == CONTAINER_RUNNING ? c->run_until_ns
                                                    : 0);
}

static bool succeeded(const struct fg_sim_container *c)
{
    return c->state == CONTAINER_TERMINATED && c->exit_code == 0;
}

/* Moves every container forward at now: the init containers one after another, then the others;
 * probes due are listed in jobs. mu held. */
static void advance(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, uint64_t now, uint64_t *next,
                    struct probe_job *jobs, size_t *njobs)
{
    if (now < p->start_at_ns) {
        note_next(next, p->start_at_ns);
        return;
    }
    p->started = true;
    for (size_t i = 0; i < p->ninit; i++) {
        if (!succeeded(&p->containers[i]))
            step_container(k, p, pod, i, now, next);
        if (!succeeded(&p->containers[i]))
            return;   /* the next one waits for this one */
    }
    for (size_t i = p->ninit; i < p->ncontainers; i++) {
        struct fg_sim_container *c = &p->containers[i];
        step_container(k, p, pod, i, now, next);
        if (c->state != CONTAINER_RUNNING)
            continue;
        json_object *spec = container_spec(p, pod, i);
        json_object *rp = fg_json_get(spec, "readinessProbe", NULL), *lp = fg_json_get(spec, "livenessProbe", NULL);
        if (!c->real) {   /* a simulated container passes its probes */
            if (rp && now >= c->next_readiness_ns)
                c->ready = true;
            else if (rp)
                note_next(next, c->next_readiness_ns);
            continue;
        }
        if (!rp)
            c->ready = true;
        if (rp && now >= c->next_readiness_ns)
            jobs[(*njobs)++] = (struct probe_job){ i, false, rp, spec };
        if (lp && now >= c->next_liveness_ns)
            jobs[(*njobs)++] = (struct probe_job){ i, true, lp, spec };
        note_next(next, rp ? c->next_readiness_ns : 0);
        note_next(next, lp ? c->next_liveness_ns : 0);
    }
}

static int64_t probe_field(json_object *probe, const char *field, int64_t dflt)
{
    int64_t v = dflt;
    fg_json_get_int64(probe, &v, field, NULL);
    return v > 0 ? v : dflt;
}

/* Applies a probe's outcome to container i. mu held. */
static void probed(struct fg_sim_pod *p, json_object *pod, const struct probe_job *j,
                   bool ok, uint64_t now)
{
    struct fg_sim_container *c = &p->containers[j->container];
    if (c->state != CONTAINER_RUNNING)
        return;
    uint64_t period = (uint64_t)probe_field(j->probe, "periodSeconds", 10) * FG_NS_PER_S;
    if (!j->liveness) {
        c->next_readiness_ns = now + period;
        if (ok) {
            c->ready_failures = 0;
            c->ready = c->ready || ++c->ready_successes >= (unsigned)probe_field(j->probe, "successThreshold", 1);
        } else {
            c->ready_successes = 0;
            c->ready = c->ready && ++c->ready_failures < (unsigned)probe_field(j->probe, "failureThreshold", 3);
        }
        return;
    }
    c->next_liveness_ns = now + period;
    c->live_failures = ok ? 0 : c->live_failures + 1;
    if (c->live_failures >= (unsigned)probe_field(j->probe, "failureThreshold", 3)) {
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
                   fg_json_get_str(pod, "metadata", "name", NULL), "container %s failed liveness probe, will be restarted",
                   c->name);
        fg_sim_proc_signal(c, SIGKILL);
        c->live_failures = 0;
    }
}

/* The pod's phase and readiness from its containers. */
static const char *phase_of(const struct fg_sim_pod *p, json_object *pod, bool *initialized, bool *ready)
{
    *initialized = true;
    for (size_t i = 0; i < p->ninit; i++)
        *initialized = *initialized && p->containers[i].state == CONTAINER_TERMINATED && !p->containers[i].exit_code;
    bool all_ready = p->ncontainers > p->ninit, any_running = false, all_done = p->ncontainers > p->ninit, failed = false;
    for (size_t i = p->ninit; i < p->ncontainers; i++) {
        const struct fg_sim_container *c = &p->containers[i];
        all_ready = all_ready && c->state == CONTAINER_RUNNING && c->ready;
        any_running = any_running || c->state == CONTAINER_RUNNING || (c->state == CONTAINER_WAITING && c->restarts);
        all_done = all_done && c->state == CONTAINER_TERMINATED;
        failed = failed || (c->state == CONTAINER_TERMINATED && c->exit_code);
    }
    for (size_t i = 0; i < p->ninit; i++)   /* an init container that failed for good fails the pod */
        if (p->containers[i].state == CONTAINER_TERMINATED && p->containers[i].exit_code)
            return *ready = false, "Failed";
    *ready = *initialized && all_ready;
    (void)pod;
    if (*initialized && all_done)
        return failed ? "Failed" : "Succeeded";
    return *initialized && any_running ? "Running" : "Pending";
}

/* ---- writes ---- */

static enum fg_err write_status(struct fg_sim_kubelets *k, const char *key, json_object *pod, json_object *status)
{
    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "status", json_object_get(status));
    char *path = fg_kube_path(&fg_kube_pods, fg_json_get_str(pod, "metadata", "namespace", NULL),
                              fg_json_get_str(pod, "metadata", "name", NULL), "status", NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_patch(k->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, &st);
    if (err && err != FG_E_KUBE_NOT_FOUND)
        fg_log(FG_LOG_WARN, COMPONENT, "pod %s: status not written: %s", key, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(patch);
    return err == FG_E_KUBE_NOT_FOUND ? FG_OK : err;
}

/* Deletes the pod for good once its containers are stopped (grace period 0, its uid as precondition). */
static enum fg_err finish_deletion(struct fg_sim_kubelets *k, json_object *pod)
{
    json_object *opts = json_object_new_object(), *pre = json_object_new_object();
    json_object_object_add(opts, "gracePeriodSeconds", json_object_new_int(0));
    fg_json_set_str(pre, "uid", fg_json_get_str(pod, "metadata", "uid", NULL));
    json_object_object_add(opts, "preconditions", pre);
    char *path = fg_kube_path(&fg_kube_pods, fg_json_get_str(pod, "metadata", "namespace", NULL),
                              fg_json_get_str(pod, "metadata", "name", NULL), NULL, NULL);
    enum fg_err err = fg_kube_delete(k->client, path, opts, NULL, NULL);
    free(path);
    json_object_put(opts);
    return err == FG_E_KUBE_NOT_FOUND || err == FG_E_KUBE_CONFLICT ? FG_OK : err;
}

static void event(struct fg_sim_kubelets *k, json_object *pod, const char *node, const char *type, const char *reason,
                  const char *message)
{
    struct fg_kube_event ev = { type, reason, message, "kubelet", node };
    enum fg_err err = fg_kube_event_emit(k->client, pod, &ev);
    (void)err;   /* events are best effort */
}

/* ---- the reconcile ---- */

/* A new state for pod on node, adopted from its status when a previous run of the kubelet left
 * it running. mu held. */
static struct fg_sim_pod *pod_new(struct fg_sim_kubelets *k, const char *key, json_object *pod, struct fg_sim_node *node)
{
    struct fg_sim_pod *p = fg_calloc(1, sizeof *p);
    snprintf(p->key, sizeof p->key, "%s", key);
    snprintf(p->uid, sizeof p->uid, "%s", fg_json_get_str(pod, "metadata", "uid", NULL));
    p->node = node;
    snprintf(p->dir, sizeof p->dir, "%.1279s/pods/%.63s_%.253s_%.63s", node->root,
             fg_json_get_str(pod, "metadata", "namespace", NULL), fg_json_get_str(pod, "metadata", "name", NULL), p->uid);
    set_up_containers(k, p, pod);
    k->pods_v = fg_realloc(k->pods_v, (k->npods + 1) * sizeof *k->pods_v);
    p->slot = k->npods;
    k->pods_v[k->npods++] = p;
    lh_table_insert(k->pod_index, p->key, p);
    return p;
}

/* Takes over a pod a previous run of this kubelet admitted: its address, start time and containers
 * (a real process found through its pid file keeps running; one gone is a container that ended). */
static void adopt(struct fg_sim_pod *p, json_object *pod)
{
    const char *ip = fg_json_get_str(pod, "status", "podIP", NULL);
    unsigned a, b, c3, d;
    if (ip && sscanf(ip, "%u.%u.%u.%u", &a, &b, &c3, &d) == 4 && d < 256) {
        snprintf(p->ip, sizeof p->ip, "%s", ip);
        p->node->ip_used[d] = true;
    }
    p->admitted = p->started = true;
    p->start_ms = fg_clock_wall_ms();
    fg_time_parse(fg_json_get_str(pod, "status", "startTime", NULL), &p->start_ms);
    if (fg_pod_requests(pod, &p->requests, NULL) == FG_OK && fg_resources_add(&p->requests, "pods", 1000) == FG_OK)
        fg_resources_sum(&p->node->used, &p->requests);
    json_object *lists[2] = { fg_json_get(pod, "status", "initContainerStatuses", NULL),
                              fg_json_get(pod, "status", "containerStatuses", NULL) };
    for (size_t i = 0; i < p->ncontainers; i++) {
        struct fg_sim_container *c = &p->containers[i];
        json_object *statuses = lists[c->init ? 0 : 1], *st = NULL;
        for (size_t j = 0; j < fg_json_array_len(statuses) && !st; j++)
            if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(statuses, j), "name", NULL), c->name))
                st = json_object_array_get_idx(statuses, j);
        int64_t restarts = 0;
        fg_json_get_int64(st, &restarts, "restartCount", NULL);
        c->restarts = (unsigned)restarts;
        if (fg_json_get(st, "state", "terminated", NULL)) {
            int64_t code = 0;
            fg_json_get_int64(st, &code, "state", "terminated", "exitCode", NULL);
            c->state = CONTAINER_TERMINATED;
            c->exit_code = (int)code;
            c->terminated_reason = code ? "Error" : "Completed";
            continue;
        }
        if (!fg_json_get(st, "state", "running", NULL))
            continue;
        c->state = CONTAINER_RUNNING;
        c->ready = json_object_get_boolean(fg_json_get(st, "ready", NULL));
        fg_time_parse(fg_json_get_str(st, "state", "running", "startedAt", NULL), &c->started_ms);
        if (!c->real)
            continue;
        char pidfile[PATH_MAX];
        fg_sim_proc_pidfile(p, c, pidfile);
        pid_t pid;
        if (fg_sim_pidfile_alive(pidfile, &pid)) {
            c->pid = pid;
            c->child = false;
        } else {
            c->exited = true;   /* it died while nobody watched */
            c->exit_code = 137;
        }
    }
}

struct fg_reconcile_result fg_sim_pod_reconcile(void *ud, const char *key)
{
    struct fg_sim_kubelets *k = ud;
    json_object *pod = NULL;
    struct fg_kobj *o = fg_store_get(fg_informer_store(k->pods), key);
    if (o && fg_kobj_parse(o, &pod, NULL) != FG_OK)
        pod = NULL;
    fg_kobj_unref(o);
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL), *name = fg_json_get_str(pod, "metadata", "name", NULL);
    const char *node_name = fg_json_get_str(pod, "spec", "nodeName", NULL);
    uint64_t now = fg_clock_mono_ns(), next = 0;
    enum fg_err err = FG_OK;

    pthread_mutex_lock(&k->mu);
    struct fg_sim_pod *p = pod_find(k, key);
    struct fg_sim_node *node = node_name ? fg_sim_node_find(k, node_name) : NULL;
    if (p && (!pod || strcmp(p->uid, fg_json_get_str(pod, "metadata", "uid", NULL)) || !p->node)) {
        pod_forget(k, p);   /* deleted, replaced by a pod of the same name, or its node went */
        p = NULL;
    }
    if (!pod || !node || !node->registered || node->gone) {
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return fg_reconcile_ok();
    }
    if (!p) {
        if (fg_sim_pod_finished(pod)) {   /* finished before this kubelet started: nothing to run */
            pthread_mutex_unlock(&k->mu);
            json_object_put(pod);
            return fg_reconcile_ok();
        }
        p = pod_new(k, key, pod, node);
        if (fg_json_get_str(pod, "status", "podIP", NULL) && fg_json_get(pod, "status", "containerStatuses", NULL)) {
            adopt(p, pod);
        } else {
            char message[512];
            json_object *node_json = admission_node(node);
            const char *reason = admit(node, node_json, pod, &p->requests, message, sizeof message);
            json_object_put(node_json);
            if (reason) {
                p->rejected = true;
                pthread_mutex_unlock(&k->mu);
                fg_log_obj(FG_LOG_INFO, COMPONENT, "Pod", ns, name, "rejected on %s: %s", node->name, message);
                json_object *status = json_object_new_object();
                fg_json_set_str(status, "phase", "Failed");
                fg_json_set_str(status, "reason", reason);
                fg_json_set_str(status, "message", message);
                err = write_status(k, key, pod, status);
                event(k, pod, node_name, "Warning", reason, message);
                json_object_put(status);
                json_object_put(pod);
                return fg_reconcile_error(err);
            }
            p->admitted = true;
            fg_resources_sum(&node->used, &p->requests);
            p->start_ms = fg_clock_wall_ms();
            p->start_at_ns = now + k->cfg->kubelet.pod_start_ns;
            if (!fg_sim_node_take_ip(node, p->ip))
                p->ip[0] = '\0';
            if (p->has_real)
                mkdir(p->dir, 0755);
        }
    }
    if (p->rejected) {
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return fg_reconcile_ok();
    }
    if (fg_sim_pod_terminating(pod)) {
        if (!p->killing) {
            int64_t grace = 30;
            if (!fg_json_get_int64(pod, &grace, "metadata", "deletionGracePeriodSeconds", NULL))
                fg_json_get_int64(pod, &grace, "spec", "terminationGracePeriodSeconds", NULL);
            p->killing = true;
            p->kill_deadline_ns = now + (uint64_t)(grace > 0 ? grace : 0) * FG_NS_PER_S;
            kill_processes(p, SIGTERM);
        }
        bool alive = false;
        for (size_t i = 0; i < p->ncontainers; i++) {
            struct fg_sim_container *c = &p->containers[i];
            alive = alive || (c->state == CONTAINER_RUNNING && c->real && !c->exited);
        }
        if (alive && now >= p->kill_deadline_ns)
            kill_processes(p, SIGKILL);
        pthread_mutex_unlock(&k->mu);
        if (alive) {
            json_object_put(pod);
            return fg_reconcile_requeue_after(POLL_NS);
        }
        err = finish_deletion(k, pod);
        json_object_put(pod);
        return fg_reconcile_error(err);
    }

    struct probe_job jobs[2 * FG_SIM_MAX_CONTAINERS];
    size_t njobs = 0;
    advance(k, p, pod, now, &next, jobs, &njobs);
    pthread_mutex_unlock(&k->mu);
    for (size_t i = 0; i < njobs; i++) {   /* probes run without the lock: they take up to their timeout */
        bool ok = fg_sim_probe_run(jobs[i].probe, jobs[i].spec, p->ip);
        pthread_mutex_lock(&k->mu);
        if (pod_find(k, key) == p)
            probed(p, pod, &jobs[i], ok, fg_clock_mono_ns());
        pthread_mutex_unlock(&k->mu);
    }
    pthread_mutex_lock(&k->mu);
    if (pod_find(k, key) != p) {
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return fg_reconcile_ok();
    }
    if (njobs) {   /* the probes' next runs */
        for (size_t i = p->ninit; i < p->ncontainers; i++) {
            note_next(&next, p->containers[i].state == CONTAINER_RUNNING && p->containers[i].real &&
                                     fg_json_get(container_spec(p, pod, i), "readinessProbe", NULL)
                                 ? p->containers[i].next_readiness_ns
                                 : 0);
            note_next(&next, p->containers[i].state == CONTAINER_RUNNING && p->containers[i].real &&
                                     fg_json_get(container_spec(p, pod, i), "livenessProbe", NULL)
                                 ? p->containers[i].next_liveness_ns
                                 : 0);
        }
    }
    bool initialized, ready;
    const char *phase = phase_of(p, pod, &initialized, &ready);
    json_object *status = fg_sim_pod_status(p, pod, phase, initialized, ready);
    const char *text = json_object_to_json_string_ext(status, JSON_C_TO_STRING_PLAIN);
    bool changed = strcmp(text, p->last_status) != 0;
    if (changed)
        snprintf(p->last_status, sizeof p->last_status, "%s", text);
    pthread_mutex_unlock(&k->mu);
    if (changed)
        err = write_status(k, key, pod, status);
    if (err) {
        pthread_mutex_lock(&k->mu);
        if (pod_find(k, key) == p)
            p->last_status[0] = '\0';   /* write it again next time */
        pthread_mutex_unlock(&k->mu);
    }
    json_object_put(status);
    json_object_put(pod);
    if (err)
        return fg_reconcile_error(err);
    now = fg_clock_mono_ns();
    return next ? fg_reconcile_requeue_after(next > now ? next - now : 1) : fg_reconcile_ok();
}
