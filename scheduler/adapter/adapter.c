/* The scheduler adapter's wiring: informers, handlers, the leader-only runnable (adapter.h). */
#include "scheduler/adapter/adapter.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/resource.h"
#include "operator/manager/informers.h"
#include "scheduler/adapter/adapter_int.h"

#define TICK_MS 500
#define IMAGE_DEFAULT "ghcr.io/fracgpu/fracgpu:" FG_VERSION

/* ---- informer events ---- */

static json_object *parsed(struct fg_kobj *obj)
{
    json_object *j = NULL;
    char why[FG_ERRMSG_MAX];
    if (fg_kobj_parse(obj, &j, why) != FG_OK) {
        fg_log(FG_LOG_WARN, SA_COMPONENT, "%s: %s", fg_kobj_key(obj), why);
        return NULL;
    }
    return j;
}

/* What the scheduler reads of a pod, and so keeps of it for as long as it lives: the informer's copy
 * also carries what other parts of the operator read (containers' env, volumes, commands), which
 * would make the scheduler's tree of each of tens of thousands of pods several times larger. */
static const char *const kept_paths[] = {
    "apiVersion", "kind", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels",
    "metadata.annotations", "metadata.ownerReferences[].controller", "metadata.creationTimestamp",
    "metadata.deletionTimestamp", "spec.nodeName",
    "spec.schedulerName", "spec.priority", "spec.preemptionPolicy", "spec.schedulingGates", "spec.nodeSelector",
    "spec.affinity.nodeAffinity", "spec.tolerations", "spec.overhead", "spec.containers[].name",
    "spec.containers[].image", "spec.containers[].resources", "spec.initContainers[].resources",
    "spec.initContainers[].restartPolicy", "status.phase", "status.startTime", "status.conditions",
    "status.containerStatuses[].resources", NULL,
};

static void pod_upsert(void *ud, struct fg_kobj *obj)
{
    struct fg__sched_adapter *a = ud;
    if (!a->running)
        return;
    json_object *j = parsed(obj);
    json_object *kept = j ? fg_transform_keep(a->kept, j) : NULL;   /* pruned in place */
    if (kept) {
        fg_json_shrink(kept, NULL);   /* kept unchanged for as long as the pod lives */
        sa_pod_seen(a, kept);
    }
    json_object_put(kept);
    json_object_put(j);
}

static void pod_added(void *ud, struct fg_kobj *obj)
{
    pod_upsert(ud, obj);
}

static void pod_updated(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    pod_upsert(ud, obj);
}

static void pod_deleted(void *ud, struct fg_kobj *obj)
{
    struct fg__sched_adapter *a = ud;
    if (a->running)
        sa_pod_gone(a, fg_kobj_key(obj));
}

static void node_upsert(void *ud, struct fg_kobj *obj)
{
    struct fg__sched_adapter *a = ud;
    if (!a->running)
        return;
    json_object *j = parsed(obj);
    if (j) {
        fg_json_shrink(j, NULL);   /* kept until the node changes */
        sa_node_seen(a, j);
    }
    json_object_put(j);
    sa_pass_soon(a);
}

static void node_added(void *ud, struct fg_kobj *obj)
{
    node_upsert(ud, obj);
}

static void node_updated(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    node_upsert(ud, obj);
}

static void node_deleted(void *ud, struct fg_kobj *obj)
{
    struct fg__sched_adapter *a = ud;
    if (!a->running)
        return;
    sa_node_gone(a, fg_kobj_key(obj));
    sa_pass_soon(a);
}

static const struct fg_resource_handler pod_handler = { pod_added, pod_updated, pod_deleted };
static const struct fg_resource_handler node_handler = { node_added, node_updated, node_deleted };

/* ---- the capacity pods' image and owner ---- */

static void find_image(struct fg__sched_adapter *a)
{
    if (a->o.image) {
        snprintf(a->image, sizeof(a->image), "%s", a->o.image);
        return;
    }
    struct sa_pod *self = a->self_key[0] ? sa_pod_get(a, a->self_key) : NULL;
    const char *image = self ? fg_json_get_str(fg_json_at(fg_json_get(self->json, "spec", "containers", NULL), 0),
                                               "image", NULL)
                             : NULL;
    if (!image) {
        image = IMAGE_DEFAULT;
        fg_log(FG_LOG_WARN, SA_COMPONENT, "not running in a pod of its own (POD_NAME, POD_NAMESPACE): capacity pods run %s",
               image);
    }
    snprintf(a->image, sizeof(a->image), "%s", image);
}

static void owner_found(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    struct fg__sched_adapter *a = ud;
    if (!a->running)
        return;
    json_object *d = NULL;
    char why[FG_ERRMSG_MAX];
    if (!err && fg_json_parse(body->data, body->len, 0, &d, why) == FG_OK) {
        const char *uid = fg_json_get_str(d, "metadata", "uid", NULL);
        snprintf(a->owner_uid, sizeof(a->owner_uid), "%s", uid ? uid : "");
        snprintf(a->owner_name, sizeof(a->owner_name), "%s", a->o.owner);
        json_object_put(d);
    } else {
        fg_log(FG_LOG_WARN, SA_COMPONENT, "Deployment %s/%s not found (%s%s%s): capacity pods are made without an owner",
               a->o.ns, a->o.owner, fg_err_str(err), st && st->message ? ": " : "", st && st->message ? st->message : "");
    }
    a->owner_checked = true;
    sa_pass_soon(a);
}

/* ---- life ---- */

/* The waiting gauges, from the pods as they are now. */
static void count_waiting(struct fg__sched_adapter *a)
{
    uint64_t now = fg_clock_mono_ns(), longest = 0;
    size_t pending = 0;
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        const struct sa_pod *p = (const struct sa_pod *)lh_entry_v(e);
        if (!p->waiting || !p->info.has_gpu)
            continue;
        pending++;
        if (p->capacity_since_ns && now - p->capacity_since_ns > longest)
            longest = now - p->capacity_since_ns;
    }
    fg_gauge_set(a->pending, (double)pending);
    fg_gauge_set(a->capacity_wait, (double)longest / 1e9);
}

static void tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct fg__sched_adapter *a = ud;
    if (!a->running)
        return;
    sa_giveback_tick(a);
    sa_bind_resume(a, NULL);
    sa_preempt_tick(a);
    sa_consolidate_tick(a);
    sa_pass(a);
    count_waiting(a);
}

/* Takes in every object inf holds, as its events would (the same handler). */
static void load(struct fg__sched_adapter *a, struct fg_informer *inf, void (*upsert)(void *, struct fg_kobj *))
{
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(inf), &l);
    for (size_t i = 0; i < l.n; i++)
        upsert(a, l.items[i]);
    fg_kobj_list_cleanup(&l);
}

struct start_step {
    struct fg__sched_adapter *a;
    enum fg_err err;
    char *errmsg;
};

static void start_on_loop(void *ud)
{
    struct start_step *s = ud;
    struct fg__sched_adapter *a = s->a;
    a->pods = lh_kchar_table_new(1024, NULL);
    a->nodes = lh_kchar_table_new(256, NULL);
    a->creating = lh_kchar_table_new(16, NULL);
    if ((s->err = sa_cycle_init(a, s->errmsg)))
        return;
    a->epoch = 1;
    a->running = true;
    load(a, a->nodes_inf, node_upsert);
    load(a, a->pods_inf, pod_upsert);
    find_image(a);
    a->owner_checked = false;
    a->owner_uid[0] = '\0';
    char *path = fg_kube_path(&fg_kube_deployments, a->o.ns, a->o.owner, NULL, NULL);
    fg_kube_loop_request(a->loop, "GET", path, NULL, NULL, 0, owner_found, a);
    free(path);
    a->tick_ev = event_new(a->base, -1, EV_PERSIST, tick, a);
    struct timeval tv = { 0, TICK_MS * 1000 };
    event_add(a->tick_ev, &tv);
    fg_log(FG_LOG_INFO, SA_COMPONENT, "scheduling pods of %s with the %s placement policy: %zu nodes, %zu pods known",
           "fracgpu-scheduler", a->o.policy, (size_t)a->nodes->count, (size_t)a->pods->count);
    sa_pass_soon(a);
}

static void stop_on_loop(void *ud)
{
    struct fg__sched_adapter *a = ud;
    a->running = false;
    fg_gauge_set(a->pending, 0);   /* counted by the leader only */
    fg_gauge_set(a->capacity_wait, 0);
    if (a->tick_ev)
        event_free(a->tick_ev);
    a->tick_ev = NULL;
    sa_bind_drop_awaiting(a);
    if (a->pods)
        sa_pods_free(a);
    if (a->nodes)
        sa_nodes_free(a);
    if (a->creating) {
        struct lh_entry *e;
        lh_foreach(a->creating, e) {
            free((char *)lh_entry_k(e));
            free(lh_entry_v(e));
        }
        lh_table_free(a->creating);
        a->creating = NULL;
    }
    sa_cycle_cleanup(a);
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct fg__sched_adapter *a = ud;
    struct start_step s = { a, FG_OK, errmsg };
    enum fg_err err = fg_kube_loop_call_wait(a->loop, start_on_loop, &s, 30000);
    if (err)
        return fg_errmsg(errmsg, err, "the loop did not start the scheduler");
    if (s.err && fg_kube_loop_call_wait(a->loop, stop_on_loop, a, 30000) != FG_OK)
        fg_log(FG_LOG_ERROR, SA_COMPONENT, "the loop did not clean up after a failed start");
    return s.err;
}

static void stop(void *ud)
{
    struct fg__sched_adapter *a = ud;
    if (fg_kube_loop_call_wait(a->loop, stop_on_loop, a, 30000) != FG_OK)
        fg_log(FG_LOG_ERROR, SA_COMPONENT, "the loop did not stop the scheduler in time");
}

static void register_metrics(struct fg__sched_adapter *a, struct fg_metrics *m)
{
    a->scheduled = fg_metrics_counter(m, "fracgpu_scheduler_placements_total", "Pods placed (bound or being bound).",
                                      NULL);
    a->unschedulable_ctr = fg_metrics_counter(m, "fracgpu_scheduler_unschedulable_total",
                                              "Cycles that found no node for the pod.", NULL);
    a->bind_errors = fg_metrics_counter(m, "fracgpu_scheduler_bind_errors_total",
                                        "Placements forgotten because a write failed.", NULL);
    a->capacity_created = fg_metrics_counter(m, "fracgpu_capacity_pods_created_total", "Capacity pods created.", NULL);
    a->capacity_deleted = fg_metrics_counter(m, "fracgpu_capacity_pods_deleted_total",
                                             "Capacity pods deleted after their idle grace period.", NULL);
    a->tenants_evicted = fg_metrics_counter(m, "fracgpu_tenants_evicted_total",
                                            "Tenants evicted because their capacity pod stopped holding the GPU.", NULL);
    a->resizes = fg_metrics_counter(m, "fracgpu_capacity_resizes_total",
                                    "Capacity pods shrunk to give their reservation to a tenant.", NULL);
    a->preemptions = fg_metrics_counter(m, "fracgpu_scheduler_preemption_victims_total",
                                        "Pods evicted to make room for a pod of higher priority.", NULL);
    a->consolidations = fg_metrics_counter(m, "fracgpu_scheduler_consolidations_total",
                                           "GPUs consolidation chose to empty onto the other GPUs.", NULL);
    a->consolidation_moves = fg_metrics_counter(m, "fracgpu_scheduler_consolidation_evictions_total",
                                                "Tenants evicted by consolidation, to be placed again on other GPUs.", NULL);
    a->pending = fg_metrics_gauge(m, "fracgpu_scheduler_pending_pods",
                                  "GPU pods of fracgpu-scheduler not placed yet (the leader's count).", NULL);
    a->capacity_wait = fg_metrics_gauge(m, "fracgpu_scheduler_capacity_wait_seconds",
                                        "How long the pod waiting longest for a new GPU has waited (0: none waits).",
                                        NULL);
    static const double bounds[] = { 0.0001, 0.001, 0.01, 0.1, 1 };
    a->cycle_seconds = fg_metrics_histogram(m, "fracgpu_scheduler_pass_seconds", "Time of one scheduling pass.", NULL,
                                            bounds, sizeof(bounds) / sizeof(*bounds));
    static const double wait_bounds[] = { 0.01, 0.1, 0.5, 1, 2, 5, 15, 30 };
    a->binding_wait = fg_metrics_histogram(m, "fracgpu_scheduler_binding_wait_seconds",
                                           "From a pod's placement to its Binding sent: capacity pods' shrinks applied "
                                           "and the node's tenants of other GPUs or allocations admitted.",
                                           NULL, wait_bounds, sizeof(wait_bounds) / sizeof(*wait_bounds));
}

static void free_adapter(void *ud)
{
    struct fg__sched_adapter *a = ud;
    fg_fieldset_free(a->kept);
    free(a);
}

enum fg_err fg_sa_setup(struct fg_manager *m, const struct fg_sa_opts *opts, char *errmsg)
{
    /* containers' statuses: only what the kubelet applied of their resources (a capacity pod's resize) */
    static const char *const pod_fields[] = { "metadata.labels", "metadata.annotations", "metadata.creationTimestamp",
                                              "metadata.deletionTimestamp", "spec", "status.phase", "status.startTime",
                                              "status.containerStatuses[].resources", "status.conditions", NULL };
    static const char *const node_fields[] = { "metadata.labels", "spec.taints", "spec.unschedulable",
                                               "status.allocatable", NULL };
    struct fg__sched_adapter *a = fg_calloc(1, sizeof(*a));
    fg_manager_on_free(m, free_adapter, a);
    a->kept = fg_fieldset_new(kept_paths);
    const char *name = getenv("POD_NAME"), *ns = getenv("POD_NAMESPACE");
    if (name && ns)
        snprintf(a->self_key, sizeof(a->self_key), "%s/%s", ns, name);
    a->o = *opts;
    a->loop = fg_manager_loop(m);
    a->base = fg_kube_loop_base(a->loop);
    register_metrics(a, fg_manager_metrics(m));
    struct fg_informer_factory *f = fg_manager_informers(m);
    enum fg_err err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods, .fields = pod_fields },
                                              &a->pods_inf, errmsg);
    if (!err)
        err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_nodes, .fields = node_fields },
                                      &a->nodes_inf, errmsg);
    if (!err && ((err = fg_informer_add_handler(a->pods_inf, &pod_handler, a)) ||
                 (err = fg_informer_add_handler(a->nodes_inf, &node_handler, a))))
        fg_errmsg(errmsg, err, "cannot watch pods and nodes");
    if (!err)
        err = fg_grant_watch_setup(m, a->o.ns, SA_COMPONENT, &a->keys, errmsg);
    if (!err)
        err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "scheduler", .leader_only = true, .start = start,
                                                               .stop = stop, .ud = a });
    return err;
}
