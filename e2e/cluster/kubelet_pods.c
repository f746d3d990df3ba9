/*
 * kubelet_pods — the lifecycle of a pod on a simulated node, as one level-based reconcile per pod
 * key. See kubelet.h for the picture and the locking.
 *
 * A pod bound to one of this process's nodes is taken on once per UID: admitted
 * (kubelet_admit.c; then its devices reserved and the device plugins asked, kubelet_devices.h; a
 * refusal fails it with kube's reason, message and Event), or adopted from a previous run of the
 * kubelets — all of a node's such pods at its first take-on, before any new pod is admitted there,
 * so that no new pod is given a device an old one holds. New pods of a node are taken on one at a
 * time, in the order the watch showed them bound, and one admission (its device plugin calls
 * included) at a time, as a kubelet admits them: the reconcile of a pod whose turn has not come
 * looks again 10 ms later. Its GPU use is set up then
 * (kubelet_gpus.c; simulation annotations that cannot be used are reported once, as a Warning
 * Event SimAnnotationInvalid, and the pod runs anyway). An admitted pod gets an address of its
 * node and, after the configured pod start delay, its containers run (kubelet_containers.c);
 * probes due run without the lock; the status (kubelet_status.c) is written when it changed, and
 * the reconcile comes back when the next timer of the pod falls due. A pod that ended (Succeeded
 * or Failed) gives its requests and devices back to the node at once, as kube's admission counts
 * only active pods.
 *
 * Deletion: a pod given a deletionTimestamp has its processes sent SIGTERM, and SIGKILL when its
 * grace period runs out; then the kubelet deletes it for good (grace period 0), as kube's does.
 * A pod that vanished from the API, or whose node went, has its processes killed and is forgotten.
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
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/objects.h"
#include "e2e/cluster/pidfile.h"
#include "operator/kube/event.h"

#define COMPONENT "kubelet"
#define POLL_NS (100 * FG_NS_PER_MS)
#define ORDER_WAIT_NS (10 * FG_NS_PER_MS)   /* a pod whose turn has not come looks again after this */

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
        if (p->admitted && !p->rejected && !p->released) {   /* an ended pod gave them back already */
            fg_resources_sub(&p->node->used, &p->requests);
            fg_sim_devices_release(p->node, p);
        }
    }
    fg_sim_grants_free(p);
    lh_table_delete(k->pod_index, p->key);
    k->pods_v[p->slot] = k->pods_v[--k->npods];
    k->pods_v[p->slot]->slot = p->slot;
    free(p);
}

void fg_sim_pods_kill_all(struct fg_sim_kubelets *k, struct fg_sim_node *node)
{
    for (size_t i = 0; i < k->npods; i++) {
        struct fg_sim_pod *p = k->pods_v[i];
        if (p->node != node)
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
            if (c->child ? waitpid(c->pid, &status, WNOHANG) == c->pid
                         : fg_sim_proc_starttime(c->pid) != c->starttime) {
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

/* ---- writes ---- */

static enum fg_err write_status(struct fg_sim_kubelets *k, const char *key, json_object *pod, json_object *status)
{
    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "status", json_object_get(status));
    char *path = fg_kube_path(&fg_kube_pods, fg_json_get_str(pod, "metadata", "namespace", NULL),
                              fg_json_get_str(pod, "metadata", "name", NULL), "status", NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_patch(k->client, path, FG_KUBE_PATCH_STRATEGIC, json_object_to_json_string(patch), NULL, &st);
    if (err && err != FG_E_KUBE_NOT_FOUND)
        fg_log(FG_LOG_WARN, COMPONENT, "pod %s: status not written: %s", key, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(patch);
    return err == FG_E_KUBE_NOT_FOUND ? FG_OK : err;
}

static void event(struct fg_sim_kubelets *k, json_object *pod, const char *node, const char *type, const char *reason,
                  const char *message)
{
    struct fg_kube_event ev = { type, reason, message, "kubelet", node };
    enum fg_err err = fg_kube_event_emit(k->client, pod, &ev);
    (void)err;   /* events are best effort */
}

/* ---- the reconcile ---- */

/* A new state for pod on node, not yet admitted or adopted. mu held. */
static struct fg_sim_pod *pod_new(struct fg_sim_kubelets *k, const char *key, json_object *pod, struct fg_sim_node *node)
{
    struct fg_sim_pod *p = fg_calloc(1, sizeof *p);
    snprintf(p->key, sizeof p->key, "%s", key);
    snprintf(p->uid, sizeof p->uid, "%s", fg_json_get_str(pod, "metadata", "uid", NULL));
    p->node = node;
    p->qos = fg_sim_pod_qos(pod);
    p->runtime = node->runtime;
    snprintf(p->dir, sizeof p->dir, "%.1279s/pods/%.63s_%.253s_%.63s", node->root,
             fg_json_get_str(pod, "metadata", "namespace", NULL), fg_json_get_str(pod, "metadata", "name", NULL), p->uid);
    fg_sim_containers_set_up(k, p, pod);
    k->pods_v = fg_realloc(k->pods_v, (k->npods + 1) * sizeof *k->pods_v);
    p->slot = k->npods;
    k->pods_v[k->npods++] = p;
    lh_table_insert(k->pod_index, p->key, p);
    return p;
}

/* Did a previous run of the kubelets start pod? */
static bool ran_before(json_object *pod)
{
    return fg_json_get_str(pod, "status", "podIP", NULL) && fg_json_get(pod, "status", "containerStatuses", NULL);
}

/* Takes over pod, which a previous run of the kubelets ran on node: its address, containers and
 * devices. mu held. */
static struct fg_sim_pod *adopt(struct fg_sim_kubelets *k, const char *key, json_object *pod, struct fg_sim_node *node)
{
    struct fg_sim_pod *p = pod_new(k, key, pod, node);
    fg_sim_pod_adopt(p, pod);
    fg_sim_devices_adopt(node, p, pod);
    fg_sim_gpus_pod_setup(k, p, pod);
    return p;
}

/* Adopts every pod a previous run of the kubelets ran on node and this run has not met yet. mu held. */
static void adopt_node(struct fg_sim_kubelets *k, struct fg_sim_node *node)
{
    struct fg_kobj_list l = { 0 };
    if (fg_store_by_index(fg_informer_store(k->pods), FG_SIM_INDEX_NODE, node->name, &l) != FG_OK)
        return;
    for (size_t i = 0; i < l.n; i++) {
        json_object *pod = NULL;
        const char *key = fg_kobj_key(l.items[i]);
        if (pod_find(k, key) || fg_kobj_parse(l.items[i], &pod, NULL) != FG_OK)
            continue;
        if (ran_before(pod) && !fg_sim_pod_finished(pod))
            adopt(k, key, pod, node);
        json_object_put(pod);
    }
    fg_kobj_list_cleanup(&l);
}

/* Whether a pod the watch showed bound to node before key waits to be met: a kubelet admits the pods
 * of its node one at a time in the order its watch brings them (the device plugins are asked in that
 * order, and fracgpu's plugin serves them in that order), never a later one first. mu held. */
static bool earlier_waits(struct fg_sim_kubelets *k, struct fg_sim_node *node, const char *key)
{
    if (node->admitting)
        return true;   /* one admission at a time, its plugin calls included */
    uint64_t *mine = NULL;
    if (!lh_table_lookup_ex(k->arrivals, key, (void **)&mine))
        return false;
    struct fg_kobj_list l = { 0 };
    if (fg_store_by_index(fg_informer_store(k->pods), FG_SIM_INDEX_NODE, node->name, &l) != FG_OK)
        return false;
    bool waits = false;
    for (size_t i = 0; i < l.n && !waits; i++) {
        const char *other = fg_kobj_key(l.items[i]);
        uint64_t *seq = NULL;
        json_object *pod = NULL;
        if (pod_find(k, other) || !lh_table_lookup_ex(k->arrivals, other, (void **)&seq) || *seq >= *mine ||
            fg_kobj_parse(l.items[i], &pod, NULL) != FG_OK)
            continue;
        waits = !fg_sim_pod_finished(pod) && !fg_json_get(pod, "metadata", "deletionTimestamp", NULL);
        json_object_put(pod);
    }
    fg_kobj_list_cleanup(&l);
    return waits;
}

/* Takes pod on as p: adopted when a previous run of the kubelets admitted it, else admitted — its
 * resources charged to node, its devices reserved, *fresh set: the device plugins are to be asked
 * — or rejected (p->rejected, with its reason and message). mu held. */
static struct fg_sim_pod *take_on(struct fg_sim_kubelets *k, const char *key, json_object *pod, struct fg_sim_node *node,
                                  uint64_t now, bool *fresh)
{
    *fresh = false;
    if (!node->adopted) {
        node->adopted = true;
        adopt_node(k, node);
        struct fg_sim_pod *p = pod_find(k, key);
        if (p)
            return p;
    }
    if (ran_before(pod))
        return adopt(k, key, pod, node);
    struct fg_sim_pod *p = pod_new(k, key, pod, node);
    if (!fg_sim_pod_admit(node, pod, p) || !fg_sim_devices_reserve(node, p, pod)) {
        p->rejected = true;
        return p;
    }
    p->admitted = true;
    *fresh = true;
    fg_resources_sum(&node->used, &p->requests);
    p->start_ms = fg_clock_wall_ms();
    p->start_at_ns = now + k->cfg->kubelet.pod_start_ns;
    if (!fg_sim_node_take_ip(node, p->ip))
        p->ip[0] = '\0';
    if (p->has_real)
        mkdir(p->dir, 0755);
    fg_sim_gpus_pod_setup(k, p, pod);
    return p;
}

/* Undoes the admission of p, which a device plugin refused. mu held. */
static void unadmit(struct fg_sim_pod *p)
{
    if (p->node) {
        fg_resources_sub(&p->node->used, &p->requests);
        fg_sim_devices_release(p->node, p);
        fg_sim_node_release_ip(p->node, p->ip);
    }
    fg_sim_grants_free(p);
    for (size_t i = 0; i < p->ncontainers; i++)
        p->containers[i].gpus = 0;
    p->ip[0] = '\0';
    p->admitted = false;
    p->rejected = true;
}

/* Gives back what p holds once it ended. mu held. */
static void release_if_ended(struct fg_sim_pod *p, json_object *pod)
{
    bool initialized, ready;
    const char *phase = fg_sim_pod_phase(p, pod, &initialized, &ready);
    if (p->released || !p->node || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed")))
        return;
    fg_resources_sub(&p->node->used, &p->requests);
    fg_sim_devices_release(p->node, p);
    p->released = true;
}

/* Fails a pod admission refused, with the Event saying why. */
static enum fg_err reject(struct fg_sim_kubelets *k, const char *key, json_object *pod, const char *node,
                          const char *reason, const char *message)
{
    fg_log_obj(FG_LOG_INFO, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
               fg_json_get_str(pod, "metadata", "name", NULL), "rejected on %s: %s", node, message);
    json_object *status = json_object_new_object();
    fg_json_set_str(status, "phase", "Failed");
    fg_json_set_str(status, "reason", reason);
    fg_json_set_str(status, "message", message);
    enum fg_err err = write_status(k, key, pod, status);
    event(k, pod, node, "Warning", reason, message);
    json_object_put(status);
    return err;
}

/* Stops p's processes for its deletion: SIGTERM at once, SIGKILL once the grace period is over.
 * True while one still runs. mu held. */
static bool stopping(struct fg_sim_pod *p, json_object *pod, uint64_t now)
{
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
    return alive;
}

/* Runs the probes due (mu not held: they take up to their timeouts) and applies their outcomes to p
 * if it is still the pod of key; *next gets the probes' next runs. */
static void run_probes(struct fg_sim_kubelets *k, const char *key, struct fg_sim_pod *p, json_object *pod,
                       const struct fg_sim_probe_job *jobs, size_t njobs, uint64_t *next)
{
    for (size_t i = 0; i < njobs; i++) {
        bool ok = fg_sim_probe_run(jobs[i].probe, jobs[i].spec, p->ip);
        pthread_mutex_lock(&k->mu);
        if (pod_find(k, key) == p) {
            fg_sim_containers_probed(p, pod, &jobs[i], ok, fg_clock_mono_ns());
            const struct fg_sim_container *c = &p->containers[jobs[i].container];
            if (c->state == CONTAINER_RUNNING)
                fg_sim_note_next(next, jobs[i].liveness ? c->next_liveness_ns : c->next_readiness_ns);
        }
        pthread_mutex_unlock(&k->mu);
    }
}

/* Writes p's status when it changed since the last write. mu not held. */
static enum fg_err report(struct fg_sim_kubelets *k, const char *key, struct fg_sim_pod *p, json_object *pod)
{
    pthread_mutex_lock(&k->mu);
    if (pod_find(k, key) != p) {
        pthread_mutex_unlock(&k->mu);
        return FG_OK;
    }
    bool initialized, ready;
    const char *phase = fg_sim_pod_phase(p, pod, &initialized, &ready);
    json_object *status = fg_sim_pod_status(p, pod, phase, initialized, ready);
    const char *text = json_object_to_json_string_ext(status, JSON_C_TO_STRING_PLAIN);
    bool changed = strcmp(text, p->last_status) != 0;
    if (changed)
        snprintf(p->last_status, sizeof p->last_status, "%s", text);
    pthread_mutex_unlock(&k->mu);
    enum fg_err err = changed ? write_status(k, key, pod, status) : FG_OK;
    json_object_put(status);
    if (err) {
        pthread_mutex_lock(&k->mu);
        if (pod_find(k, key) == p)
            p->last_status[0] = '\0';   /* write it again next time */
        pthread_mutex_unlock(&k->mu);
    }
    return err;
}

struct fg_reconcile_result fg_sim_pod_reconcile(void *ud, const char *key)
{
    struct fg_sim_kubelets *k = ud;
    json_object *pod = fg_store_get_json(fg_informer_store(k->pods), key);
    const char *node_name = fg_json_get_str(pod, "spec", "nodeName", NULL);
    uint64_t now = fg_clock_mono_ns(), next = 0;
    struct fg_reconcile_result res = fg_reconcile_ok();

    pthread_mutex_lock(&k->mu);
    struct fg_sim_pod *p = pod_find(k, key);
    struct fg_sim_node *node = node_name ? fg_sim_node_find(k, node_name) : NULL;
    if (p && (!pod || strcmp(p->uid, fg_json_get_str(pod, "metadata", "uid", NULL)) || !p->node)) {
        pod_forget(k, p);   /* deleted, replaced by a pod of the same name, or its node went */
        p = NULL;
    }
    /* not ours, or finished before this kubelet met it */
    bool idle = !pod || !node || !node->registered || node->gone || (!p && fg_sim_pod_finished(pod));
    bool fresh = false;
    if (!idle && !p && !ran_before(pod) && earlier_waits(k, node, key)) {
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return fg_reconcile_requeue_after(ORDER_WAIT_NS);
    }
    if (!idle && !p)
        p = take_on(k, key, pod, node, now, &fresh);
    if (fresh) {
        node->admitting = true;
        if (!fg_sim_devices_allocate(k, p))
            unadmit(p);
        if (p->node)   /* its node may have gone while the plugins answered (below) */
            p->node->admitting = false;
    }
    if (!idle && !p->node) {   /* its node went while the plugins answered: it goes too */
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return res;
    }
    if (idle || (p->rejected && p->reject_written && !fg_sim_pod_terminating(pod))) {
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return res;
    }
    if (p->rejected && !p->reject_written) {   /* refused: said once, and again until it is written */
        char reason[sizeof p->reject_reason], message[sizeof p->reject_message];
        memcpy(reason, p->reject_reason, sizeof reason);
        memcpy(message, p->reject_message, sizeof message);
        pthread_mutex_unlock(&k->mu);
        enum fg_err err = reject(k, key, pod, node_name, reason, message);
        pthread_mutex_lock(&k->mu);
        p->reject_written = err == FG_OK;
        pthread_mutex_unlock(&k->mu);
        json_object_put(pod);
        return err ? fg_reconcile_error(err) : res;
    }
    if (fg_sim_pod_terminating(pod)) {
        bool alive = stopping(p, pod, now);
        pthread_mutex_unlock(&k->mu);
        res = alive ? fg_reconcile_requeue_after(POLL_NS) : fg_reconcile_error(fg_sim_delete_now(k->client, &fg_kube_pods, pod));
        json_object_put(pod);
        return res;
    }
    struct fg_sim_probe_job jobs[2 * FG_SIM_MAX_CONTAINERS];
    size_t njobs = 0;
    fg_sim_pod_resize(p, pod);
    fg_sim_containers_advance(k, p, pod, now, &next, jobs, &njobs);
    release_if_ended(p, pod);
    char problem[sizeof p->problem] = "";
    if (p->problem[0] && !p->problem_reported) {
        memcpy(problem, p->problem, sizeof problem);
        p->problem_reported = true;
    }
    pthread_mutex_unlock(&k->mu);
    if (problem[0]) {
        fg_log_obj(FG_LOG_WARN, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
                   fg_json_get_str(pod, "metadata", "name", NULL), "simulation: %s", problem);
        event(k, pod, node_name, "Warning", "SimAnnotationInvalid", problem);
    }
    run_probes(k, key, p, pod, jobs, njobs, &next);
    enum fg_err err = report(k, key, p, pod);
    fg_sim_fracgpu_play_holder(k, p, pod);
    json_object_put(pod);
    if (err)
        return fg_reconcile_error(err);
    now = fg_clock_mono_ns();
    return next ? fg_reconcile_requeue_after(next > now ? next - now : 1) : fg_reconcile_ok();
}
