/* The rightsizer: samples in, the interval's walk over GPUWorkloads (rightsizer.h). */
#include "reconcilers/rightsizer.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "crds/gpuworkload.h"
#include "operator/kube/resource.h"
#include "operator/manager/informers.h"
#include "reconcilers/resources.h"
#include "reconcilers/rightsizer_int.h"
#include "reconcilers/terms.h"

#define NS_INDEX "namespace"

struct rs_pod *rs_pod_get(struct fg_rightsizer *r, const char *uid)
{
    struct rs_pod *p = NULL;
    if (lh_table_lookup_ex(r->pods, uid, (void **)&p))
        return p;
    p = fg_calloc(1, sizeof *p);
    *p = (struct rs_pod){ .memory_mib = -1, .restarts = -1 };
    lh_table_insert(r->pods, fg_strdup(uid), p);
    return p;
}

/* The workload's terms under its policy: false when the policy is not found (nothing is decided). */
static bool terms_of(struct fg_rightsizer *r, json_object *gw, struct fg_terms *t)
{
    const char *policy = fg_gpuworkload_policy_get(gw);
    if (!policy)
        return false;
    json_object *policy_obj = fg_store_get_json(fg_informer_store(r->policies_inf), policy);
    fg_terms_resolve(policy, policy_obj, gw, t, NULL);
    json_object_put(policy_obj);
    return t->policy_found;
}

struct rs_workload *rs_workload_get(struct fg_rightsizer *r, const char *ns, const char *name)
{
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    struct rs_workload *w = NULL;
    if (lh_table_lookup_ex(r->workloads, key, (void **)&w))
        return w;
    json_object *gw = fg_store_get_json(fg_informer_store(r->gpuworkloads_inf), key);
    struct fg_terms t;
    if (!gw || !terms_of(r, gw, &t)) {
        json_object_put(gw);
        return NULL;
    }
    w = fg_calloc(1, sizeof *w);
    snprintf(w->key, sizeof w->key, "%s", key);
    snprintf(w->ns, sizeof w->ns, "%s", ns);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->o = (struct fg_rec_opts){ .policy = t.spec };
    w->mode = t.update_mode;
    w->state_ok = fg_rec_init(&w->st, &w->o);
    if (!w->state_ok)
        fg_log(FG_LOG_WARN, RS_COMPONENT, "GPUWorkload %s: policy %s's window is too short to keep a history", key,
               t.policy);
    else
        rs_checkpoint_restore(r, w);
    lh_table_insert(r->workloads, fg_strdup(key), w);
    json_object_put(gw);
    return w;
}

void fg_rightsizer_sample(struct fg_rightsizer *r, const struct fg_rightsizer_sample *s)
{
    struct rs_workload *w = r->running ? rs_workload_get(r, s->ns, s->workload) : NULL;
    if (!w || !w->state_ok) {
        fg_counter_add(r->dropped, 1);
        return;
    }
    struct fg_rec_sample x = { s->t_ms, s->has_compute, s->has_memory, s->compute_milli, s->memory_mib };
    enum fg_rec_refusal why = fg_rec_add(&w->st, &w->o, &x);
    if (why != FG_REC_OK) {
        fg_counter_add(r->refused[why], 1);
        return;
    }
    fg_counter_add(r->samples, 1);
    w->dirty = true;
    if (s->has_memory && s->pod_uid && *s->pod_uid)
        rs_pod_get(r, s->pod_uid)->memory_mib = s->memory_mib;
}

/* One GPUWorkload's interval: its terms, its pods, the decision, status and checkpoint. */
static void visit(struct fg_rightsizer *r, json_object *gw, int64_t now_ms)
{
    const char *ns = fg_json_get_str(gw, "metadata", "namespace", NULL), *name = fg_json_get_str(gw, "metadata", "name", NULL);
    struct rs_workload *w = ns && name ? rs_workload_get(r, ns, name) : NULL;
    struct fg_terms t;
    if (!w || !terms_of(r, gw, &t))
        return;
    w->seen = true;
    if (!w->state_ok)
        return;
    w->o.policy = t.spec;   /* edits of the policy apply from now on */
    w->mode = t.update_mode;
    rs_pods_walk(r, w, gw, now_ms);
    w->o.gpu_memory_mib = w->gpu_memory_mib;
    struct fg_rec_decision d;
    fg_rec_decide(&w->st, &w->o, now_ms, &d);
    if (d.action != FG_REC_KEEP) {
        w->dirty = true;
        w->reason = d.reason;
        fg_counter_add(r->changes, 1);
        char msg[256], before[64];
        if (d.before.set)
            snprintf(before, sizeof before, "%lldm and %lldMi", (long long)d.before.compute_milli,
                     (long long)d.before.memory_mib);
        else
            snprintf(before, sizeof before, "a whole GPU");
        snprintf(msg, sizeof msg, "%s: from %s to %lldm and %lldMi (%s mode)", d.reason, before,
                 (long long)d.after.compute_milli, (long long)d.after.memory_mib, fg_update_mode_name(w->mode));
        rs_emit(r, gw, d.action == FG_REC_BUMP ? "Warning" : "Normal", d.reason, msg);
    } else if (!w->st.applied.set) {
        w->reason = d.reason;
    }
    rs_write_status(r, w, gw, now_ms);
    if (w->dirty && (now_ms - w->saved_ms >= r->o.checkpoint_interval_ms || d.action != FG_REC_KEEP))
        rs_checkpoint_save(r, w, gw, now_ms);
}

static void forget_unseen(struct fg_rightsizer *r)
{
    struct lh_entry *e, *next;
    for (e = r->workloads->head; e; e = next) {
        next = e->next;
        struct rs_workload *w = (struct rs_workload *)lh_entry_v(e);
        if (!w->seen) { /* its GPUWorkload is gone; its checkpoint stays for a recreated workload */
            lh_table_delete_entry(r->workloads, e);
            continue;
        }
        w->seen = false;
    }
    for (e = r->pods->head; e; e = next) {
        next = e->next;
        struct rs_pod *p = (struct rs_pod *)lh_entry_v(e);
        if (!p->seen && p->restarts >= 0)
            lh_table_delete_entry(r->pods, e);
        else
            p->seen = false;
    }
}

static void tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct fg_rightsizer *r = ud;
    int64_t now_ms = fg_clock_wall_ms();
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(r->gpuworkloads_inf), &l);
    for (size_t i = 0; i < l.n; i++) {
        json_object *gw = NULL;
        if (fg_kobj_parse(l.items[i], &gw, NULL) == FG_OK)
            visit(r, gw, now_ms);
        json_object_put(gw);
    }
    fg_kobj_list_cleanup(&l);
    forget_unseen(r);
    rs_checkpoints_collect(r, now_ms);
    fg_gauge_set(r->last_round, (double)now_ms / 1000.0);
}

static void free_entry(struct lh_entry *e)
{
    free((char *)lh_entry_k(e));
    free(lh_entry_v(e));
}

static void start_on_loop(void *ud)
{
    struct fg_rightsizer *r = ud;
    r->workloads = lh_kchar_table_new(64, free_entry);
    r->pods = lh_kchar_table_new(256, free_entry);
    r->running = true;
    r->tick_ev = event_new(r->base, -1, EV_PERSIST, tick, r);
    struct timeval tv = { (time_t)(r->o.interval_ms / 1000), (suseconds_t)(r->o.interval_ms % 1000) * 1000 };
    event_add(r->tick_ev, &tv);
}

static void stop_on_loop(void *ud)
{
    struct fg_rightsizer *r = ud;
    r->running = false;
    if (r->tick_ev)
        event_free(r->tick_ev);
    r->tick_ev = NULL;
    if (r->workloads)
        lh_table_free(r->workloads);
    if (r->pods)
        lh_table_free(r->pods);
    r->workloads = r->pods = NULL;
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct fg_rightsizer *r = ud;
    enum fg_err err = fg_kube_loop_call_wait(r->loop, start_on_loop, r, 30000);
    return err ? fg_errmsg(errmsg, err, "the loop did not start the rightsizer") : FG_OK;
}

static void stop(void *ud)
{
    struct fg_rightsizer *r = ud;
    if (fg_kube_loop_call_wait(r->loop, stop_on_loop, r, 30000) != FG_OK)
        fg_log(FG_LOG_ERROR, RS_COMPONENT, "the loop did not stop the rightsizer in time");
}

static void register_metrics(struct fg_rightsizer *r, struct fg_metrics *m)
{
    r->samples = fg_metrics_counter(m, "fracgpu_rightsizing_samples_total", "Pod usage samples taken into a history.",
                                    NULL);
    r->dropped = fg_metrics_counter(m, "fracgpu_rightsizing_samples_dropped_total",
                                    "Samples of no known GPUWorkload (or while not leading).", NULL);
    for (int i = 1; i < FG_REC_REFUSALS; i++) {
        const char *labels[] = { "reason", fg_rec_refusal_name((enum fg_rec_refusal)i), NULL };
        r->refused[i] = fg_metrics_counter(m, "fracgpu_rightsizing_samples_refused_total",
                                           "Samples refused as impossible, by reason.", labels);
    }
    r->changes = fg_metrics_counter(m, "fracgpu_rightsizing_changes_total", "Allocation changes decided.", NULL);
    r->last_round = fg_metrics_gauge(m, "fracgpu_rightsizing_last_round_timestamp_seconds",
                                     "Unix time of the leader's last walk over the GPUWorkloads, which decides their "
                                     "recommendations (0: never, or not the leader since it started).", NULL);
    r->ooms = fg_metrics_counter(m, "fracgpu_rightsizing_oom_kills_total",
                                 "Container restarts taken for GPU out-of-memory kills.", NULL);
    r->evictions = fg_metrics_counter(m, "fracgpu_rightsizing_evictions_total",
                                      "Pods evicted in Auto mode to take a new allocation.", NULL);
    r->evictions_refused = fg_metrics_counter(m, "fracgpu_rightsizing_evictions_refused_total",
                                              "Evictions a PodDisruptionBudget (or an error) refused.", NULL);
    r->status_writes = fg_metrics_counter(m, "fracgpu_rightsizing_status_writes_total",
                                          "GPUWorkload status writes of usage and recommendation.", NULL);
    r->checkpoint_writes = fg_metrics_counter(m, "fracgpu_rightsizing_checkpoint_writes_total",
                                              "GPUCheckpoints created or replaced.", NULL);
    r->checkpoint_errors = fg_metrics_counter(m, "fracgpu_rightsizing_checkpoint_errors_total",
                                              "GPUCheckpoints that could not be written or read back.", NULL);
    r->checkpoints_restored = fg_metrics_counter(m, "fracgpu_rightsizing_checkpoints_restored_total",
                                                 "Histories restored from a GPUCheckpoint.", NULL);
    r->checkpoints_collected = fg_metrics_counter(m, "fracgpu_rightsizing_checkpoints_collected_total",
                                                  "GPUCheckpoints deleted after their TTL.", NULL);
}

enum fg_err fg_rightsizer_setup(struct fg_manager *m, const struct fg_rightsizer_opts *o, struct fg_rightsizer **out,
                                char *errmsg)
{
    static const char *const pod_fields[] = { "metadata.labels", "metadata.annotations", "metadata.deletionTimestamp",
                                              "status.phase", "status.conditions", "status.containerStatuses[].name",
                                              "status.containerStatuses[].restartCount",
                                              "status.containerStatuses[].lastState", NULL };
    struct fg_rightsizer *r = fg_calloc(1, sizeof *r);
    fg_manager_on_free(m, free, r);
    r->o = *o;
    r->loop = fg_manager_loop(m);
    r->client = fg_manager_client(m);
    r->base = fg_kube_loop_base(r->loop);
    register_metrics(r, fg_manager_metrics(m));
    struct fg_informer_factory *f = fg_manager_informers(m);
    enum fg_err err =
        fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods, .fields = pod_fields },
                                &r->pods_inf, errmsg);
    if (!err)
        err = fg_informer_factory_index(f, r->pods_inf, NS_INDEX, fg_index_by_namespace, NULL);
    if (!err)
        err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_crd_gpuworkloads },
                                      &r->gpuworkloads_inf, errmsg);
    if (!err)
        err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_crd_gpupolicies },
                                      &r->policies_inf, errmsg);
    if (!err)
        err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_crd_gpucheckpoints },
                                      &r->checkpoints_inf, errmsg);
    if (!err)
        err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "rightsizer", .leader_only = true,
                                                               .start = start, .stop = stop, .ud = r });
    if (!err)
        *out = r;
    return err;
}
