/*
 * scheduler — the simulated cluster's default scheduler (`fracgpu-sim-cluster component
 * scheduler`): kube-scheduler v1.32's default profile for what the simulated cluster needs, built
 * on the manager from the pure core of sched.h and the writers of sched_writes.h.
 *
 * Shared informers (nodes; every pod; PodDisruptionBudgets), pruned to the fields the scheduler
 * reads, keep the snapshot and the queue up to date on the loop thread under one mutex:
 *   - a bound pod of any scheduler is placed on its node (confirming one this scheduler assumed),
 *     and leaves it when it finishes or goes; a pending pod for this scheduler (schedulerName empty
 *     or default-scheduler, not terminating, finished or gated) is queued, and leaves the queue once
 *     bound, deleted or no longer ours;
 *   - cluster events retry unschedulable pods as kube's queue does: a node added, or changed in what
 *     a filter reads (allocatable, labels, taints, unschedulable, readiness) — heartbeats alone do
 *     not count; a placed pod deleted or finished; a pod placed, for pods inter-pod affinity or
 *     topology spread rejected;
 *   - nominations follow status.nominatedNodeName, keeping one this scheduler made until the API
 *     shows a value of its own (kube's nominator).
 * The scheduling thread (leader only, once the caches have synced) pops the best pod and runs a
 * cycle under the mutex. A pod that fits is assumed at once — placed, so the next cycle counts it —
 * and handed to the writers to bind; the watch confirms it, a failed bind forgets it and puts the
 * pod back after its backoff. A pod that does not fit goes to the unschedulable set; its condition
 * PodScheduled=False (reason Unschedulable, kube's message) is written only when the message
 * changes, keeping the first lastTransitionTime while it stays unschedulable, since the autoscaler
 * acts on that condition; the FailedScheduling event goes out with each new message and, while it
 * stays the same, at most once a minute (kube's event correlator would fold the repeats).
 * Preemption's victims are marked, deleted and announced by the writers; the freed room stays
 * reserved for the nominated pod while they terminate.
 *
 * Left out of kube's default profile: volumes (VolumeBinding, VolumeRestrictions, VolumeZone,
 * NodeVolumeLimits), ImageLocality, PodTopologySpread's scoring (ScheduleAnyway and the default
 * constraints), namespaceSelector terms that need the namespaces' labels, DRA, extenders,
 * Permit/gang plugins, and queueing hints finer than the events above.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/sched.h"
#include "e2e/cluster/sched_writes.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/resource.h"

#define COMPONENT "default-scheduler"
#define WRITERS 32   /* binding threads: with every reply 1 ms late, 1 binds 113 pods/s, 8 918, 32 3280 (bench/cluster) */
#define EVENT_REPEAT_NS (60 * FG_NS_PER_S)

static const char *const node_fields[] = { "metadata.labels", "spec.taints", "spec.unschedulable",
                                           "status.allocatable", "status.conditions", NULL };
static const char *const pod_fields[] = {
    "metadata.labels", "metadata.creationTimestamp", "metadata.deletionTimestamp",
    "spec.schedulerName", "spec.nodeName", "spec.priority", "spec.preemptionPolicy", "spec.schedulingGates",
    "spec.containers[].resources", "spec.containers[].ports", "spec.initContainers[].resources",
    "spec.initContainers[].restartPolicy", "spec.overhead", "spec.nodeSelector", "spec.affinity",
    "spec.tolerations", "spec.topologySpreadConstraints", "status.phase", "status.conditions",
    "status.nominatedNodeName", "status.startTime", NULL,
};
static const char *const pdb_fields[] = { "spec.selector", "status.disruptionsAllowed", "status.disruptedPods", NULL };

struct scheduler;

/* What one informer's events do: an add or update decodes the new object outside the lock (decode
 * NULL: the parsed JSON as is) and applies it under mu; a delete removes it under mu. */
struct watch {
    struct scheduler *s;
    void *(*decode)(json_object *json);                 /* takes json; NULL: ignore the object */
    void (*apply)(struct scheduler *s, void *decoded);  /* takes decoded */
    void (*remove)(struct scheduler *s, struct fg_kobj *obj);
};

struct scheduler {
    struct fg_manager *m;
    struct fg_sim_sched_writer *writer;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct fg_sim_sched_snapshot snap;
    struct fg_sim_sched_queue queue;
    uint64_t rng;
    pthread_t thread;
    bool running, stop;
    struct watch nodes, pods, pdbs;
};

/* Retries unschedulable pods (those `filters` rejected; 0: all) and wakes the scheduling thread. mu held. */
static void move(struct scheduler *s, unsigned filters)
{
    fg_sim_sched_queue_move(&s->queue, filters, fg_clock_mono_ns());
    pthread_cond_signal(&s->wake);
}

/* ---- nodes ---- */

static void node_apply(struct scheduler *s, void *node)
{
    char errmsg[FG_ERRMSG_MAX];
    bool changed = false;
    if (fg_sim_sched_node_set(&s->snap, node, &changed, errmsg))
        fg_log(FG_LOG_WARN, COMPONENT, "node ignored: %s", errmsg);
    else if (changed)
        move(s, 0);
}

static void node_remove(struct scheduler *s, struct fg_kobj *obj)
{
    fg_sim_sched_node_remove(&s->snap, fg_kobj_name(obj));
}

/* ---- pods ---- */

/* A bound pod: placed (or, finished, taken off its node). mu held. */
static void pod_bound(struct scheduler *s, struct fg_sim_sched_pod *pod)
{
    fg_sim_sched_queue_remove(&s->queue, pod->key);
    fg_sim_sched_nominate(&s->snap, pod, NULL);
    struct fg_sim_sched_pod *was = fg_sim_sched_placed(&s->snap, pod->key);
    if (pod->finished) {
        if (fg_sim_sched_unplace(&s->snap, pod->key))
            move(s, 0);
        return;
    }
    bool news = !was || was->assumed || fg_sim_sched_pod_spec_hash(was) != fg_sim_sched_pod_spec_hash(pod);
    fg_sim_sched_place(&s->snap, pod, pod->node_name);
    if (news)
        move(s, FG_SIM_SCHED_POD_AFFINITY | FG_SIM_SCHED_SPREAD);
}

/* A pending pod: queued when it is ours, with its nomination (kube's nominator). mu held. */
static void pod_pending(struct scheduler *s, struct fg_sim_sched_pod *pod)
{
    struct fg_sim_sched_pod *placed = fg_sim_sched_placed(&s->snap, pod->key);
    if (placed && placed->assumed)
        return;   /* bound by us; the watch has not shown it yet */
    if (!fg_sim_sched_pod_wanted(pod)) {
        fg_sim_sched_queue_remove(&s->queue, pod->key);
        fg_sim_sched_nominate(&s->snap, pod, NULL);
        return;
    }
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_get(&s->queue, pod->key);
    const char *local = fg_sim_sched_nominated_node(&s->snap, pod->key);
    bool keep_local = e && local && !e->pod->nominated && !pod->nominated;
    char *node = keep_local ? fg_strdup(local) : NULL;
    fg_sim_sched_nominate(&s->snap, pod, keep_local ? node : pod->nominated);
    free(node);
    fg_sim_sched_queue_upsert(&s->queue, pod, fg_clock_mono_ns());
    pthread_cond_signal(&s->wake);
}

static void *pod_decode(json_object *json)
{
    struct fg_sim_sched_pod *pod = NULL;
    char errmsg[FG_ERRMSG_MAX];
    if (fg_sim_sched_pod_new(json, &pod, errmsg)) {
        fg_log(FG_LOG_WARN, COMPONENT, "pod ignored: %s", errmsg);
        return NULL;
    }
    return pod;
}

static void pod_apply(struct scheduler *s, void *decoded)
{
    struct fg_sim_sched_pod *pod = decoded;
    if (pod->node_name && *pod->node_name)
        pod_bound(s, pod);
    else
        pod_pending(s, pod);
    fg_sim_sched_pod_unref(pod);
}

static void pod_remove(struct scheduler *s, struct fg_kobj *obj)
{
    const char *key = fg_kobj_key(obj);
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_get(&s->queue, key);
    if (e)
        fg_sim_sched_nominate(&s->snap, e->pod, NULL);
    fg_sim_sched_queue_remove(&s->queue, key);
    if (fg_sim_sched_unplace(&s->snap, key))
        move(s, 0);
}

/* ---- budgets ---- */

static void pdb_apply(struct scheduler *s, void *pdb)
{
    fg_sim_sched_pdb_set(&s->snap, pdb);
}

static void pdb_remove(struct scheduler *s, struct fg_kobj *obj)
{
    fg_sim_sched_pdb_remove(&s->snap, fg_kobj_key(obj));
}

/* ---- the informers' events ---- */

static void on_add(void *ud, struct fg_kobj *obj)
{
    struct watch *w = ud;
    json_object *json = NULL;
    if (fg_kobj_parse(obj, &json, NULL) != FG_OK)
        return;
    void *decoded = w->decode ? w->decode(json) : json;
    if (!decoded)
        return;
    pthread_mutex_lock(&w->s->mu);
    w->apply(w->s, decoded);
    pthread_mutex_unlock(&w->s->mu);
}

static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    on_add(ud, obj);
}

static void on_delete(void *ud, struct fg_kobj *obj)
{
    struct watch *w = ud;
    pthread_mutex_lock(&w->s->mu);
    w->remove(w->s, obj);
    pthread_mutex_unlock(&w->s->mu);
}

/* ---- the cycle's outcome ---- */

static void bind_failed(void *ud, const char *key, const char *uid, const char *why)
{
    struct scheduler *s = ud;
    pthread_mutex_lock(&s->mu);
    struct fg_sim_sched_pod *pod = fg_sim_sched_placed(&s->snap, key);
    if (pod && pod->assumed && fg_str_eq(pod->uid, uid)) {
        fg_sim_sched_pod_ref(pod);
        fg_sim_sched_unplace(&s->snap, key);
        pod->assumed = false;
        uint64_t now = fg_clock_mono_ns();
        fg_sim_sched_queue_upsert(&s->queue, pod, now);
        struct fg_sim_sched_qpod *e = fg_sim_sched_queue_get(&s->queue, key);
        e->attempts++;
        fg_sim_sched_queue_backoff(&s->queue, e, now);
        char *msg = fg_asprintf("Binding rejected: %s", why);
        fg_sim_sched_write_failed_event(s->writer, pod, msg);
        free(msg);
        fg_sim_sched_pod_unref(pod);
        move(s, 0);   /* the room it took is free again */
    }
    pthread_mutex_unlock(&s->mu);
}

/* The PodScheduled condition the pod shows (borrowed), or NULL. */
static json_object *scheduled_condition(const struct fg_sim_sched_pod *pod)
{
    json_object *conds = fg_json_get(pod->obj, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(conds, i), "type", NULL), "PodScheduled"))
            return json_object_array_get_idx(conds, i);
    return NULL;
}

/* What to write for a pod that did not fit: the condition only when its message changes (from what
 * the pod shows and what this scheduler last wrote), keeping the first transition time. mu held. */
static void report_unschedulable(struct scheduler *s, struct fg_sim_sched_qpod *e, const struct fg_sim_sched_result *r,
                                 uint64_t now)
{
    const struct fg_sim_sched_pod *pod = e->pod;
    json_object *cond = scheduled_condition(pod);
    bool shown_false = fg_str_eq(fg_json_get_str(cond, "status", NULL), "False");
    bool shown = shown_false && fg_str_eq(fg_json_get_str(cond, "reason", NULL), "Unschedulable") &&
                 fg_str_eq(fg_json_get_str(cond, "message", NULL), r->message);
    bool written = e->written_message && !strcmp(e->written_message, r->message);
    struct fg_sim_sched_unschedulable u = { .message = r->message, .condition = !shown && !written };
    if (u.condition) {
        int64_t since = 0;
        if (e->written_message)
            u.transition_ms = e->written_ms;
        else if (shown_false && fg_time_parse(fg_json_get_str(cond, "lastTransitionTime", NULL), &since))
            u.transition_ms = since;
        else
            u.transition_ms = fg_clock_wall_ms();
        free(e->written_message);
        e->written_message = fg_strdup(r->message);
        e->written_ms = u.transition_ms;
    }
    u.event = u.condition || !e->event_ns || now - e->event_ns >= EVENT_REPEAT_NS;
    if (u.event)
        e->event_ns = now;
    const char *shown_nomination = pod->nominated ? pod->nominated : "";
    const char *want = r->nominated ? r->nominated : "";
    if (r->set_nomination && strcmp(shown_nomination, want))
        u.nomination = want;
    fg_sim_sched_write_unschedulable(s->writer, pod, &u);
}

static void unschedulable(struct scheduler *s, struct fg_sim_sched_qpod *e, const struct fg_sim_sched_result *r,
                          uint64_t now)
{
    e->rejected_by = r->rejected_by;
    if (r->set_nomination)
        fg_sim_sched_nominate(&s->snap, e->pod, r->nominated);
    report_unschedulable(s, e, r, now);
    for (size_t i = 0; i < r->nvictims; i++)
        fg_sim_sched_write_preempt(s->writer, r->victims[i], e->pod, r->nominated);
    for (size_t i = 0; i < r->ndemoted; i++) {
        fg_sim_sched_nominate(&s->snap, r->demoted[i], NULL);
        fg_sim_sched_write_clear_nomination(s->writer, r->demoted[i]);
    }
    if (r->nvictims)
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Pod", e->pod->ns, e->pod->name, "preempting %zu pod(s) on %s",
                   r->nvictims, r->nominated);
    fg_sim_sched_queue_unschedulable(&s->queue, e, now);
}

/* One cycle for the pod e; mu held. */
static void schedule_one(struct scheduler *s, struct fg_sim_sched_qpod *e, uint64_t now)
{
    struct fg_sim_sched_result r;
    struct fg_sim_sched_pod *pod = fg_sim_sched_pod_ref(e->pod);
    fg_sim_sched_schedule(&s->snap, pod, &s->rng, &r);
    if (r.node) {
        fg_sim_sched_nominate(&s->snap, pod, NULL);
        fg_sim_sched_queue_remove(&s->queue, pod->key);
        fg_sim_sched_place(&s->snap, pod, r.node->name);
        pod->assumed = true;
        fg_sim_sched_write_bind(s->writer, pod, r.node->name);
    } else {
        unschedulable(s, e, &r, now);
    }
    fg_sim_sched_result_cleanup(&r);
    fg_sim_sched_pod_unref(pod);
}

static void *scheduling_loop(void *ud)
{
    struct scheduler *s = ud;
    pthread_setname_np(pthread_self(), "fg-sched");
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        uint64_t now = fg_clock_mono_ns();
        struct fg_sim_sched_qpod *e = fg_sim_sched_queue_pop(&s->queue, now);
        if (e) {
            schedule_one(s, e, now);
            continue;
        }
        uint64_t next = fg_sim_sched_queue_next_ns(&s->queue);
        fg_cond_wait_ns(&s->wake, &s->mu, next == UINT64_MAX ? FG_NS_PER_S : fg_clock_sleep_until_hint(next));
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- the runnable ---- */

static enum fg_err start(void *ud, char *errmsg)
{
    struct scheduler *s = ud;
    enum fg_err err = fg_sim_sched_writer_start(s->writer, errmsg);
    if (err)
        return err;
    s->stop = false;
    if (pthread_create(&s->thread, NULL, scheduling_loop, s)) {
        fg_sim_sched_writer_stop(s->writer);
        return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the scheduling thread");
    }
    s->running = true;
    return FG_OK;
}

static void stop(void *ud)
{
    struct scheduler *s = ud;
    if (!s->running)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    fg_sim_sched_writer_stop(s->writer);   /* binds not made forget their pods */
    s->running = false;
}

static void scheduler_free(void *ud)
{
    struct scheduler *s = ud;
    fg_sim_sched_writer_free(s->writer);
    fg_sim_sched_queue_cleanup(&s->queue);
    fg_sim_sched_snapshot_cleanup(&s->snap);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    free(s);
}

static enum fg_err informer(struct fg_manager *m, const struct fg_kube_resource *res, const char *const *fields,
                            struct watch *w, char *errmsg)
{
    static const struct fg_resource_handler handler = { on_add, on_update, on_delete };
    struct fg_informer_want want = { .resource = res, .fields = fields };
    struct fg_informer *inf = NULL;
    enum fg_err err = fg_informer_factory_get(fg_manager_informers(m), &want, &inf, errmsg);
    if (!err && (err = fg_informer_add_handler(inf, &handler, w)))
        fg_errmsg(errmsg, err, "cannot watch %s", res->plural);
    return err;
}

enum fg_err fg_sim_scheduler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg)
{
    (void)cfg;
    struct scheduler *s = fg_calloc(1, sizeof *s);
    s->m = m;
    pthread_mutex_init(&s->mu, NULL);
    fg_cond_init_monotonic(&s->wake);
    fg_sim_sched_snapshot_init(&s->snap);
    fg_sim_sched_queue_init(&s->queue);
    s->rng = fg_clock_real_ns() | 1;
    s->writer = fg_sim_sched_writer_new(fg_manager_client(m), WRITERS, bind_failed, s);
    fg_manager_on_free(m, scheduler_free, s);
    s->nodes = (struct watch){ s, NULL, node_apply, node_remove };
    s->pods = (struct watch){ s, pod_decode, pod_apply, pod_remove };
    s->pdbs = (struct watch){ s, NULL, pdb_apply, pdb_remove };
    enum fg_err err;
    if ((err = informer(m, &fg_kube_nodes, node_fields, &s->nodes, errmsg)) ||
        (err = informer(m, &fg_kube_pods, pod_fields, &s->pods, errmsg)) ||
        (err = informer(m, &fg_kube_poddisruptionbudgets, pdb_fields, &s->pdbs, errmsg)))
        return err;
    return fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "default-scheduler", .leader_only = true,
                                                              .start = start, .stop = stop, .ud = s });
}
