/* Opting workloads in and out (workload_reconciler.h). */
#include "reconcilers/workload_reconciler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "crds/gpuworkload.h"
#include "operator/cache/kobj.h"
#include "operator/cache/store.h"
#include "operator/kube/event.h"
#include "operator/manager/controllers.h"
#include "operator/manager/informers.h"
#include "reconcilers/eligibility.h"
#include "reconcilers/podcontract.h"
#include "reconcilers/policy.h"
#include "reconcilers/resources.h"
#include "reconcilers/workload_pods.h"
#include "reconcilers/workload_status.h"

#define COMPONENT "gpuworkload"
#define MAX_KINDS 32
#define NS_INDEX "namespace"
#define ROLL_INTERVAL_MS (15 * 1000ll)
#define LABELLED_WHY "its new pods pass the webhook and get a fraction of a GPU"
#define REMOVED_WHY "automation removed: its pods roll back to whole GPUs"

struct workload_reconciler;

/* A workload kind's informer, for its map function. */
struct kind_watch {
    struct workload_reconciler *r;
    size_t index;
};

struct workload_reconciler {
    struct fg_kube_client *client;
    const struct fg_workload_kinds *kinds;
    struct fg_store *owners[MAX_KINDS], *namespaces, *gpuworkloads, *policies, *pods, *replicasets;
    struct fg_store *intermediates[MAX_KINDS + 1];  /* the ReplicaSets, then every kind */
    struct fg_owner_caches owner_caches;            /* the ReplicaSets and owners[], for a pod's workload */
    struct kind_watch watches[MAX_KINDS];
    struct fg_counter *created, *labelled, *unlabelled, *rolled, *status_writes;
};

static json_object *cached_in(struct fg_store *s, const char *ns, const char *name)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return fg_store_get_json(s, key);
}

static void emit(struct workload_reconciler *r, json_object *workload, const char *type, const char *reason,
                 const char *message)
{
    struct fg_kube_event ev = { type, reason, message, "fracgpu-operator", NULL };
    if (fg_kube_event_emit(r->client, workload, &ev) != FG_OK)
        fg_log(FG_LOG_DEBUG, COMPONENT, "cannot record the %s event", reason);
}

static void log_failure(const char *what, enum fg_err err, const struct fg_kube_status *st)
{
    fg_log(err == FG_E_KUBE_CONFLICT || err == FG_E_KUBE_INVALID || err == FG_E_KUBE_ALREADY_EXISTS ? FG_LOG_INFO
                                                                                                    : FG_LOG_WARN,
           COMPONENT, "%s: %s (will retry)", what, st->message ? st->message : fg_err_str(err));
}

static enum fg_err create_gpuworkload(struct workload_reconciler *r, json_object *workload, const char *ns,
                                      const char *name)
{
    json_object *gw = json_object_new_object();
    fg_json_set_str(gw, "apiVersion", FG_API_VERSION);
    fg_json_set_str(gw, "kind", FG_GPUWORKLOAD_KIND);
    json_object *meta = fg_json_ensure_obj(gw, "metadata");
    fg_json_set_str(meta, "name", name);
    fg_json_set_str(meta, "namespace", ns);
    json_object *owner = json_object_new_object();
    static const char *const ref[] = { "apiVersion", "kind" };
    for (size_t i = 0; i < 2; i++)
        fg_json_set_str(owner, ref[i], fg_json_get_str(workload, ref[i], NULL));
    fg_json_set_str(owner, "name", fg_json_get_str(workload, "metadata", "name", NULL));
    fg_json_set_str(owner, "uid", fg_json_get_str(workload, "metadata", "uid", NULL));
    json_object_object_add(owner, "blockOwnerDeletion", json_object_new_boolean(0));
    json_object *owners = json_object_new_array();
    json_object_array_add(owners, owner);
    json_object_object_add(meta, "ownerReferences", owners);
    json_object *target = fg_json_ensure_obj(fg_json_ensure_obj(gw, "spec"), "targetRef");
    for (size_t i = 0; i < 2; i++)
        fg_json_set_str(target, ref[i], fg_json_get_str(workload, ref[i], NULL));
    fg_json_set_str(target, "name", fg_json_get_str(workload, "metadata", "name", NULL));
    char *path = fg_kube_path(&fg_crd_gpuworkloads, ns, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(r->client, path, gw, NULL, &st);
    if (err != FG_OK)
        log_failure("cannot create its GPUWorkload", err, &st);
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(gw);
    return err;
}

/* Adds (want true) or removes the template label in every pod template of workload that needs it;
 * *changed says whether a patch was sent. */
static enum fg_err label_templates(struct workload_reconciler *r, const struct fg_workload_kind *kind,
                                   json_object *workload, bool want, bool *changed)
{
    struct fg_pod_template t[8];
    size_t n = fg_workload_templates(workload, t, 8);
    json_object *ops = fg_json_patch_tested(workload);
    for (size_t i = 0; i < n && i < 8; i++) {
        if (fg_workload_label_on(t[i].obj) == want)
            continue;
        json_object *op = json_object_new_object();
        char path[FG_TEMPLATE_PATH_MAX + 64];
        json_object *labels = fg_json_get(t[i].obj, "metadata", "labels", NULL);
        if (!want) {
            snprintf(path, sizeof(path), "%s/metadata/labels/fracgpu.io~1automate", t[i].path);
            fg_json_set_str(op, "op", "remove");
        } else if (labels) {
            snprintf(path, sizeof(path), "%s/metadata/labels/fracgpu.io~1automate", t[i].path);
            fg_json_set_str(op, "op", "add");
            fg_json_set_str(op, "value", "true");
        } else if (fg_json_get(t[i].obj, "metadata", NULL)) {
            snprintf(path, sizeof(path), "%s/metadata/labels", t[i].path);
            fg_json_set_str(op, "op", "add");
            fg_json_set_str(fg_json_ensure_obj(op, "value"), FG_KEY_AUTOMATE, "true");
        } else {
            snprintf(path, sizeof(path), "%s/metadata", t[i].path);
            fg_json_set_str(op, "op", "add");
            fg_json_set_str(fg_json_ensure_obj(fg_json_ensure_obj(op, "value"), "labels"), FG_KEY_AUTOMATE, "true");
        }
        fg_json_set_str(op, "path", path);
        json_object_array_add(ops, op);
    }
    enum fg_err err = FG_OK;
    *changed = json_object_array_length(ops) > 1;
    if (*changed) {
        char *path = fg_kube_path(&kind->resource, fg_json_get_str(workload, "metadata", "namespace", NULL),
                                  fg_json_get_str(workload, "metadata", "name", NULL), NULL, NULL);
        struct fg_kube_status st = { 0 };
        err = fg_kube_patch(r->client, path, FG_KUBE_PATCH_JSON, fg_json_text(ops, NULL), NULL, &st);
        if (err != FG_OK)
            log_failure(want ? "cannot label its pod template" : "cannot unlabel its pod template", err, &st);
        fg_kube_status_cleanup(&st);
        free(path);
    }
    json_object_put(ops);
    return err;
}

/* Whether every pod template of workload carries the template label. */
static bool templates_labelled(json_object *workload)
{
    struct fg_pod_template t[8];
    size_t n = fg_workload_templates(workload, t, 8);
    for (size_t i = 0; i < n && i < 8; i++)
        if (!fg_workload_label_on(t[i].obj))
            return false;
    return n > 0;
}

static enum fg_err write_status(struct workload_reconciler *r, const struct fg_workload_kind *kind,
                                json_object *workload, json_object *gw, const struct fg_workload_pods *pods,
                                const char *action, const char *why)
{
    const char *policy = fg_terms_policy_name(kind, workload, gw);
    json_object *policy_obj = fg_store_get_json(r->policies, policy);
    struct fg_terms terms;
    fg_terms_resolve(policy, policy_obj, gw, &terms, NULL);
    struct fg_workload_view v = { .workload = workload, .kind = kind, .gpuworkload = gw, .terms = &terms,
                                  .last_action = action, .last_action_reason = why, .pods = pods->live,
                                  .unmutated_pods = pods->missed, .gpu_milli = pods->gpu_milli };
    char now[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    json_object *st = fg_workload_status_build(&v, now);
    enum fg_err err = FG_OK;
    if (!json_object_equal(st, fg_json_get(gw, "status", NULL))) {
        /* the cached resourceVersion as a precondition: a status computed from a cache behind our own
         * last write (its lastAction) must not overwrite it */
        json_object *patch = json_object_new_object();
        fg_json_set_str(fg_json_ensure_obj(patch, "metadata"), "resourceVersion",
                        fg_json_get_str(gw, "metadata", "resourceVersion", NULL));
        json_object_object_add(patch, "status", json_object_get(st));
        char *path = fg_kube_path(&fg_crd_gpuworkloads, fg_json_get_str(gw, "metadata", "namespace", NULL),
                                  fg_json_get_str(gw, "metadata", "name", NULL), "status", NULL);
        struct fg_kube_status ks = { 0 };
        err = fg_kube_patch(r->client, path, FG_KUBE_PATCH_MERGE, fg_json_text(patch, NULL), NULL, &ks);
        if (err != FG_OK)
            log_failure("cannot write GPUWorkload status", err, &ks);
        else
            fg_counter_add(r->status_writes, 1);
        fg_kube_status_cleanup(&ks);
        free(path);
        json_object_put(patch);
    }
    json_object_put(st);
    json_object_put(policy_obj);
    return err;
}

/* Rolls a Deployment or StatefulSet whose pods missed the webhook (see below when); *rolled says
 * whether it did, *retry_ms when to look again (0: no need). Other kinds cannot be rolled. */
static enum fg_err roll(struct workload_reconciler *r, const struct fg_workload_kind *kind, json_object *workload,
                        const struct fg_workload_pods *pods, bool *rolled, int64_t *retry_ms)
{
    *rolled = false;
    *retry_ms = 0;
    if (!pods->missed || strcmp(kind->resource.group, "apps"))
        return FG_OK;
    struct fg_pod_template t[8];
    size_t n = fg_workload_templates(workload, t, 8);
    int64_t last = 0;
    json_object *ops = fg_json_patch_tested(workload); /* a cache behind our last roll must not roll again */
    char now[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    for (size_t i = 0; i < n && i < 8; i++) {
        const char *at = fg_json_get_str(t[i].obj, "metadata", "annotations", FG_ANN_RESTARTED_AT, NULL);
        int64_t ms = 0;
        if (at && fg_time_parse(at, &ms) && ms > last)
            last = ms;
        json_object *op = json_object_new_object();
        char path[FG_TEMPLATE_PATH_MAX + 64];
        fg_json_set_str(op, "op", "add");
        if (fg_json_get(t[i].obj, "metadata", "annotations", NULL)) {
            snprintf(path, sizeof(path), "%s/metadata/annotations/fracgpu.io~1restarted-at", t[i].path);
            fg_json_set_str(op, "value", now);
        } else {
            snprintf(path, sizeof(path), "%s/metadata/annotations", t[i].path);
            fg_json_set_str(fg_json_ensure_obj(op, "value"), FG_ANN_RESTARTED_AT, now);
        }
        fg_json_set_str(op, "path", path);
        json_object_array_add(ops, op);
    }
    enum fg_err err = FG_OK;
    /* Roll when a missed pod is as new as the last roll (to the second: creation times have no more):
     * an older one is being replaced by that roll. Not more often than ROLL_INTERVAL_MS, since pods
     * created while no replica is ready yet miss the webhook again. */
    int64_t now_ms = fg_clock_wall_ms();
    bool due = last / 1000 <= pods->newest_missed_ms / 1000;
    if (due && last && now_ms - last < ROLL_INTERVAL_MS) {
        *retry_ms = last + ROLL_INTERVAL_MS - now_ms;
        due = false;
    }
    if (json_object_array_length(ops) > 1 && due) {
        char *path = fg_kube_path(&kind->resource, fg_json_get_str(workload, "metadata", "namespace", NULL),
                                  fg_json_get_str(workload, "metadata", "name", NULL), NULL, NULL);
        struct fg_kube_status st = { 0 };
        err = fg_kube_patch(r->client, path, FG_KUBE_PATCH_JSON, fg_json_text(ops, NULL), NULL, &st);
        if (err != FG_OK)
            log_failure("cannot roll its pods", err, &st);
        *rolled = err == FG_OK;
        fg_kube_status_cleanup(&st);
        free(path);
    }
    json_object_put(ops);
    return err;
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct workload_reconciler *r = ud;
    unsigned index;
    char ns[254], name[254];
    if (sscanf(key, "%253[^/]/%253[^:]:%u", ns, name, &index) != 3 || index >= r->kinds->n)
        return fg_reconcile_ok(); /* not a key of ours: nothing to do */
    const struct fg_workload_kind *kind = &r->kinds->v[index];
    json_object *workload = cached_in(r->owners[index], ns, name);
    if (!workload)
        return fg_reconcile_ok(); /* gone: its GPUWorkload goes with it (owner reference) */
    json_object *nsobj = fg_store_get_json(r->namespaces, ns);
    char gw_name[FG_WORKLOAD_NAME_MAX + 1];
    fg_workload_name(r->kinds, kind, name, gw_name);
    json_object *gw = cached_in(r->gpuworkloads, ns, gw_name);
    struct fg_eligibility judged;
    bool automated = fg_workload_automated(workload, nsobj) && fg_workload_gpu_template(workload, &judged);
    const char *action = NULL, *why = NULL;
    bool labelled = false;
    enum fg_err err = FG_OK;
    char msg[512];
    if (automated && !gw) {
        if ((err = create_gpuworkload(r, workload, ns, gw_name)) == FG_OK) {
            fg_counter_add(r->created, 1);
            snprintf(msg, sizeof(msg), "fracgpu automates it: GPUWorkload %s", gw_name);
            emit(r, workload, "Normal", "Automated", msg);
        }
    }
    /* a Job's pod template cannot change once it exists: its pods pass the webhook only if it was
     * created with the label (as a CronJob's Jobs are, once the CronJob is labelled) */
    bool immutable = !strcmp(kind->resource.group, "batch") && !strcmp(kind->resource.kind, "Job");
    if (!err && !immutable && (err = label_templates(r, kind, workload, automated, &labelled)) == FG_OK &&
        labelled) {
        action = automated ? "LabelledTemplate" : "RemovedTemplateLabel";
        why = automated ? LABELLED_WHY : REMOVED_WHY;
        fg_counter_add(automated ? r->labelled : r->unlabelled, 1);
        emit(r, workload, "Normal", automated ? "TemplateLabelled" : "AutomationRemoved", why);
    }
    struct fg_workload_pods pods;
    const char *uid = fg_json_get_str(workload, "metadata", "uid", NULL);
    fg_workload_pods_count(r->pods, r->intermediates, r->kinds->n + 1, uid ? uid : "", &pods);
    bool rolled = false;
    int64_t retry_ms = 0;
    if (!err && automated && !labelled && (err = roll(r, kind, workload, &pods, &rolled, &retry_ms)) == FG_OK &&
        rolled) {
        snprintf(msg, sizeof(msg), "%zu of its pods were created while fracgpu did not answer: rolled", pods.missed);
        action = "RolledUnmutatedPods";
        why = msg;
        fg_counter_add(r->rolled, 1);
        emit(r, workload, "Normal", "RolledUnmutatedPods", msg);
    }
    if (!err && immutable && automated && !templates_labelled(workload)) {
        action = "TemplateImmutable";
        why = "a Job's pod template cannot change: create the Job with the label fracgpu.io/automate: \"true\" in "
              "its template, or automate its CronJob";
    }
    if (!err && !action && gw) {
        /* what the last write was follows from the state too: a reconcile that wrote the template but
         * not the status (a GPUWorkload not cached yet, a conflict) must not lose it */
        const char *cur = fg_json_get_str(gw, "status", "lastAction", NULL);
        bool says_automated = cur && strcmp(cur, "RemovedTemplateLabel");
        if (automated && !says_automated) {
            action = "LabelledTemplate";
            why = LABELLED_WHY;
        } else if (!automated && says_automated) {
            action = "RemovedTemplateLabel";
            why = REMOVED_WHY;
        }
    }
    if (!err && gw)
        err = write_status(r, kind, workload, gw, &pods, action, why);
    json_object_put(gw);
    json_object_put(nsobj);
    json_object_put(workload);
    if (err == FG_E_KUBE_CONFLICT || err == FG_E_KUBE_ALREADY_EXISTS) /* the cache was behind: soon again */
        return (struct fg_reconcile_result){ FG_OK, 200 * FG_NS_PER_MS };
    if (err != FG_OK)
        return fg_reconcile_error(err);
    /* a GPUWorkload just created gets its status once the cache has it; a roll held back is looked at again */
    if (automated && !gw)
        return (struct fg_reconcile_result){ FG_OK, FG_NS_PER_S };
    return retry_ms > 0 ? (struct fg_reconcile_result){ FG_OK, (uint64_t)retry_ms * FG_NS_PER_MS } : fg_reconcile_ok();
}

static void key_of(size_t index, const char *ns, const char *name, struct fg_keys *out)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s:%zu", ns, name, index);
    fg_keys_add(out, key);
}

static void map_workload(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct kind_watch *w = ud;
    key_of(w->index, fg_kobj_namespace(obj), fg_kobj_name(obj), out);
}

static void map_namespace(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct workload_reconciler *r = ud;
    for (size_t i = 0; i < r->kinds->n; i++) {
        struct fg_kobj_list l;
        if (fg_store_by_index(r->owners[i], NS_INDEX, fg_kobj_name(obj), &l) != FG_OK)
            continue;
        for (size_t j = 0; j < l.n; j++)
            key_of(i, fg_kobj_namespace(l.items[j]), fg_kobj_name(l.items[j]), out);
        fg_kobj_list_cleanup(&l);
    }
}

/* A GPUWorkload's target, as a key. */
static void map_gpuworkload(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct workload_reconciler *r = ud;
    json_object *gw = NULL;
    if (fg_kobj_parse(obj, &gw, NULL) != FG_OK)
        return;
    json_object *target = json_object_new_object();
    fg_json_set_str(target, "apiVersion", fg_json_get_str(gw, "spec", "targetRef", "apiVersion", NULL));
    fg_json_set_str(target, "kind", fg_json_get_str(gw, "spec", "targetRef", "kind", NULL));
    const struct fg_workload_kind *k = fg_workload_kind_of(r->kinds, target);
    const char *name = fg_json_get_str(gw, "spec", "targetRef", "name", NULL);
    if (k && name)
        key_of((size_t)(k - r->kinds->v), fg_kobj_namespace(obj), name, out);
    json_object_put(target);
    json_object_put(gw);
}

/* A ReplicaSet, as the key of the workload that controls it: its pods' events may come before it is
 * cached (a Deployment's rollout), and are counted again once it is. */
static void map_replicaset(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct workload_reconciler *r = ud;
    json_object *rs = NULL;
    if (fg_kobj_parse(obj, &rs, NULL) != FG_OK)
        return;
    json_object *refs = fg_json_get(rs, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; i < fg_json_array_len(refs); i++) {
        json_object *ref = json_object_array_get_idx(refs, i), *ctl = NULL;
        if (!json_object_object_get_ex(ref, "controller", &ctl) || !json_object_get_boolean(ctl))
            continue;
        const struct fg_workload_kind *k = fg_workload_kind_of(r->kinds, ref);
        const char *name = fg_json_get_str(ref, "name", NULL);
        if (k && name)
            key_of((size_t)(k - r->kinds->v), fg_kobj_namespace(obj), name, out);
    }
    json_object_put(rs);
}

/* Pod updates that change nothing the count reads (a binding, a condition, a container's state) do
 * not reconcile its workload: at a thousand pods a second they would re-count it for each. */
static bool pod_counts_changed(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)ud;
    const struct fg_workload_pod *was = fg_kobj_value(old), *now = fg_kobj_value(obj);
    return !was || !now || memcmp(was, now, sizeof(*was)) != 0;
}

/* A pod, as the key of its workload. */
static void map_pod(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct workload_reconciler *r = ud;
    json_object *pod = NULL;
    if (fg_kobj_parse(obj, &pod, NULL) != FG_OK)
        return;
    struct fg_owner_lookup ctx = { &r->owner_caches, fg_kobj_namespace(obj), { NULL }, 0 };
    const struct fg_workload_kind *kind;
    json_object *w = fg_workload_of_pod(pod, r->kinds, fg_owner_lookup, &ctx, &kind);
    if (w)
        key_of((size_t)(kind - r->kinds->v), fg_kobj_namespace(obj), fg_json_get_str(w, "metadata", "name", NULL), out);
    fg_owner_lookup_release(&ctx);
    json_object_put(pod);
}

/* The targets of the GPUWorkloads that use a policy. */
static void map_policy(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct workload_reconciler *r = ud;
    struct fg_kobj_list l;
    if (fg_store_by_index(r->gpuworkloads, FG_POLICY_INDEX, fg_kobj_name(obj), &l) != FG_OK)
        return;
    for (size_t i = 0; i < l.n; i++)
        map_gpuworkload(r, l.items[i], out);
    fg_kobj_list_cleanup(&l);
}

static enum fg_err want(struct fg_manager *m, const struct fg_kube_resource *res, const char *const *fields,
                        struct fg_informer **inf, char *errmsg)
{
    return fg_informer_factory_get(fg_manager_informers(m),
                                   &(struct fg_informer_want){ .resource = res, .fields = fields }, inf, errmsg);
}

enum fg_err fg_workload_reconciler_setup(struct fg_manager *m, const struct fg_workload_kinds *kinds, unsigned workers,
                                         char *errmsg)
{
    if (kinds->n > MAX_KINDS)
        return fg_errmsg(errmsg, FG_E_INVAL, "%zu workload kinds, at most %d", kinds->n, MAX_KINDS);
    struct fg_informer_factory *f = fg_manager_informers(m);
    static const char *const workload_fields[] = { "metadata.labels", "metadata.annotations",
                                                   "metadata.ownerReferences", "spec", NULL };
    static const char *const pod_fields[] = { "metadata.labels", "metadata.ownerReferences", "metadata.deletionTimestamp",
                                              "metadata.creationTimestamp", "metadata.annotations", "spec", "status.phase",
                                              NULL };
    static const char *const owners_only[] = { "metadata.ownerReferences", NULL };
    struct fg_informer *owners[MAX_KINDS], *namespaces, *gpuworkloads, *policies, *pods, *replicasets;
    enum fg_err err = FG_OK;
    for (size_t i = 0; !err && i < kinds->n; i++) {
        err = want(m, &kinds->v[i].resource, workload_fields, &owners[i], errmsg);
        if (!err)
            err = fg_informer_factory_index(f, owners[i], NS_INDEX, fg_index_by_namespace, NULL);
        if (!err)
            err = fg_informer_factory_index(f, owners[i], FG_OWNER_INDEX, fg_index_by_controller_uid, NULL);
    }
    if (!err)
        err = want(m, &fg_kube_namespaces, NULL, &namespaces, errmsg);
    if (!err)
        err = want(m, &fg_crd_gpuworkloads, NULL, &gpuworkloads, errmsg);
    if (!err)
        err = fg_informer_factory_index(f, gpuworkloads, FG_POLICY_INDEX, fg_policy_index_workload, NULL);
    if (!err)
        err = want(m, &fg_crd_gpupolicies, NULL, &policies, errmsg);
    if (!err)
        err = want(m, &fg_kube_pods, pod_fields, &pods, errmsg);
    if (!err)
        err = fg_informer_factory_index(f, pods, FG_OWNER_INDEX, fg_index_by_controller_uid, NULL);
    if (!err && (err = fg_informer_factory_decode(f, pods, fg_workload_pods_decode, NULL,
                                                  sizeof(struct fg_workload_pod))) != FG_OK)
        fg_errmsg(errmsg, err, "cannot decode the pods");
    if (!err)
        err = want(m, &fg_kube_replicasets, owners_only, &replicasets, errmsg);
    if (!err)
        err = fg_informer_factory_index(f, replicasets, FG_OWNER_INDEX, fg_index_by_controller_uid, NULL);
    if (err)
        return err;
    struct workload_reconciler *r = fg_calloc(1, sizeof(*r));
    fg_manager_on_free(m, free, r);
    r->client = fg_manager_client(m);
    r->kinds = kinds;
    for (size_t i = 0; i < kinds->n; i++) {
        r->owners[i] = fg_informer_store(owners[i]);
        r->watches[i] = (struct kind_watch){ r, i };
    }
    r->pods = fg_informer_store(pods);
    r->replicasets = fg_informer_store(replicasets);
    r->intermediates[0] = r->replicasets;
    r->owner_caches = (struct fg_owner_caches){ kinds, r->replicasets, r->owners };
    for (size_t i = 0; i < kinds->n; i++)
        r->intermediates[i + 1] = r->owners[i];
    r->namespaces = fg_informer_store(namespaces);
    r->gpuworkloads = fg_informer_store(gpuworkloads);
    r->policies = fg_informer_store(policies);
    struct fg_metrics *reg = fg_manager_metrics(m);
    r->created = fg_metrics_counter(reg, "fracgpu_gpuworkloads_created_total", "GPUWorkloads created.", NULL);
    r->labelled = fg_metrics_counter(reg, "fracgpu_templates_labelled_total",
                                     "Workloads whose pod templates were labelled for the webhook.", NULL);
    r->unlabelled = fg_metrics_counter(reg, "fracgpu_templates_unlabelled_total",
                                       "Workloads whose template label was removed with their automation.", NULL);
    r->rolled = fg_metrics_counter(reg, "fracgpu_workloads_rolled_total",
                                   "Workloads rolled because pods were created while the webhook did not answer.", NULL);
    r->status_writes = fg_metrics_counter(reg, "fracgpu_gpuworkload_status_writes_total",
                                          "GPUWorkload status updates written.", NULL);
    struct fg_manager_controller *c;
    struct fg_controller_spec spec = { .name = "gpuworkload", .kind = "workload", .workers = workers,
                                       .reconcile = reconcile, .ud = r };
    err = fg_manager_controller(m, &spec, &c, errmsg);
    for (size_t i = 0; !err && i < kinds->n; i++)
        err = fg_manager_watches(c, owners[i], map_workload, &r->watches[i], NULL, errmsg);
    if (!err)
        err = fg_manager_watches(c, namespaces, map_namespace, r, NULL, errmsg);
    if (!err)
        err = fg_manager_watches(c, gpuworkloads, map_gpuworkload, r, NULL, errmsg);
    if (!err)
        err = fg_manager_watches(c, policies, map_policy, r, NULL, errmsg);
    if (!err)
        err = fg_manager_watches(c, pods, map_pod, r, pod_counts_changed, errmsg);
    if (!err)
        err = fg_manager_watches(c, replicasets, map_replicaset, r, NULL, errmsg);
    return err;
}
