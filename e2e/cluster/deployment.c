/*
 * deployment — the Deployment controller: one ReplicaSet per template revision, scaled as the
 * strategy says, and the status `kubectl rollout status` waits on.
 *
 * The new ReplicaSet is the one labelled with the template's hash (pod-template-hash, objects.h's
 * fg_sim_template_hash, so a template changed back finds its old set again, as a rollback does);
 * it is created named `<deployment>-<hash>` with the hash added to its selector and template. A
 * name taken by a set of another template bumps status.collisionCount, which changes the hash.
 *
 * RollingUpdate (kube's rolling.go): scale the new set up while all sets' replicas stay within
 * replicas + maxSurge; scale old sets down, oldest first, while available pods stay at least
 * replicas − maxUnavailable, removing unavailable old pods first. maxSurge rounds up, maxUnavailable
 * down, both default to 25%, and both 0 means maxUnavailable 1. Recreate: old sets to 0, and the new
 * one up only once no old pod is left, terminating ones included. Each set carries the revision annotations kube writes
 * (deployment.kubernetes.io/revision, desired-replicas, max-replicas); sets scaled to 0 beyond
 * revisionHistoryLimit are deleted, oldest first. Every scaling is an Event (ScalingReplicaSet).
 *
 * Status: replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas from the
 * sets' status; observedGeneration; conditions Available (MinimumReplicasAvailable /
 * MinimumReplicasUnavailable) and Progressing (NewReplicaSetCreated, ReplicaSetUpdated,
 * NewReplicaSetAvailable). progressDeadlineSeconds is not enforced, and paused deployments are
 * only reported on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/cm.h"

#define COMPONENT "deployment-controller"
#define ANN_REVISION "deployment.kubernetes.io/revision"
#define ANN_DESIRED "deployment.kubernetes.io/desired-replicas"
#define ANN_MAX "deployment.kubernetes.io/max-replicas"
#define RECREATE_POLL_NS (250 * FG_NS_PER_MS)
#define HASH_LABEL "pod-template-hash"

struct plan {
    json_object *d;             /* the deployment */
    json_object *new_rs;        /* borrowed from sets, or NULL */
    json_object **old;          /* borrowed, oldest first */
    size_t nold;
    int64_t desired, max_surge, max_unavailable;
    char hash[16];
    uint64_t requeue_ns;        /* look again then (Recreate waiting for old pods to be gone) */
};

static int64_t revision(json_object *rs)
{
    const char *s = fg_json_get_str(rs, "metadata", "annotations", ANN_REVISION, NULL);
    return s ? strtoll(s, NULL, 10) : 0;
}

static int cmp_oldest(const void *a, const void *b)
{
    int64_t ca = fg_sim_created_ms(*(json_object *const *)a), cb = fg_sim_created_ms(*(json_object *const *)b);
    return ca < cb ? -1 : ca > cb;
}

/* Sets spec.replicas (and the revision annotations) of rs, with an event when the count changes. */
static enum fg_err scale(struct fg_sim_cm *cm, struct plan *p, json_object *rs, int64_t replicas, int64_t rev)
{
    int64_t before = fg_sim_int_at(rs, "spec", "replicas", 1);
    char buf[32];
    json_object *patch = json_object_new_object(), *meta = fg_json_ensure_obj(patch, "metadata");
    json_object *ann = fg_json_ensure_obj(meta, "annotations");
    snprintf(buf, sizeof buf, "%lld", (long long)p->desired);
    fg_json_set_str(ann, ANN_DESIRED, buf);
    snprintf(buf, sizeof buf, "%lld", (long long)(p->desired + p->max_surge));
    fg_json_set_str(ann, ANN_MAX, buf);
    if (rev > 0) {
        snprintf(buf, sizeof buf, "%lld", (long long)rev);
        fg_json_set_str(ann, ANN_REVISION, buf);
    }
    json_object_object_add(fg_json_ensure_obj(patch, "spec"), "replicas", json_object_new_int64(replicas));
    char *path = fg_kube_path(&fg_kube_replicasets, fg_json_get_str(rs, "metadata", "namespace", NULL),
                              fg_json_get_str(rs, "metadata", "name", NULL), NULL, NULL);
    enum fg_err err = fg_kube_patch(cm->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, NULL);
    free(path);
    json_object_put(patch);
    if (!err && replicas != before) {
        fg_sim_cm_event(cm, COMPONENT, p->d, "Normal", "ScalingReplicaSet", "Scaled %s replica set %s from %lld to %lld",
                        replicas > before ? "up" : "down", fg_json_get_str(rs, "metadata", "name", NULL),
                        (long long)before, (long long)replicas);
        json_object_object_add(fg_json_ensure_obj(rs, "spec"), "replicas", json_object_new_int64(replicas));
    }
    return err;
}

static int64_t max_old_revision(struct plan *p)
{
    int64_t max = 0;
    for (size_t i = 0; i < p->nold; i++)
        if (revision(p->old[i]) > max)
            max = revision(p->old[i]);
    return max;
}

/* Creates the new ReplicaSet with `replicas`; FG_E_KUBE_ALREADY_EXISTS when the name is taken. */
static enum fg_err create_new_rs(struct fg_sim_cm *cm, struct plan *p, int64_t replicas)
{
    const char *ns = fg_json_get_str(p->d, "metadata", "namespace", NULL);
    const char *dname = fg_json_get_str(p->d, "metadata", "name", NULL);
    json_object *rs = json_object_new_object();
    json_object_object_add(rs, "apiVersion", json_object_new_string("apps/v1"));
    json_object_object_add(rs, "kind", json_object_new_string("ReplicaSet"));
    json_object *meta = fg_json_ensure_obj(rs, "metadata");
    char *name = fg_asprintf("%s-%s", dname, p->hash);
    fg_json_set_str(meta, "name", name);
    fg_json_set_str(meta, "namespace", ns);
    json_object *tmpl = NULL;
    json_object_deep_copy(fg_json_get(p->d, "spec", "template", NULL), &tmpl, NULL);
    if (!tmpl)
        tmpl = json_object_new_object();
    fg_json_set_str(fg_json_ensure_obj(fg_json_ensure_obj(tmpl, "metadata"), "labels"), HASH_LABEL, p->hash);
    json_object *labels = NULL;
    json_object_deep_copy(fg_json_get(tmpl, "metadata", "labels", NULL), &labels, NULL);
    json_object_object_add(meta, "labels", labels);
    json_object *refs = json_object_new_array();
    json_object_array_add(refs, fg_sim_owner_ref(p->d));
    json_object_object_add(meta, "ownerReferences", refs);
    json_object *ann = fg_json_ensure_obj(meta, "annotations");
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)(max_old_revision(p) + 1));
    fg_json_set_str(ann, ANN_REVISION, buf);
    snprintf(buf, sizeof buf, "%lld", (long long)p->desired);
    fg_json_set_str(ann, ANN_DESIRED, buf);
    snprintf(buf, sizeof buf, "%lld", (long long)(p->desired + p->max_surge));
    fg_json_set_str(ann, ANN_MAX, buf);
    json_object *spec = fg_json_ensure_obj(rs, "spec");
    json_object_object_add(spec, "replicas", json_object_new_int64(replicas));
    int64_t min_ready = fg_sim_int_at(p->d, "spec", "minReadySeconds", 0);
    if (min_ready)
        json_object_object_add(spec, "minReadySeconds", json_object_new_int64(min_ready));
    json_object *selector = NULL;
    json_object_deep_copy(fg_json_get(p->d, "spec", "selector", NULL), &selector, NULL);
    if (!selector)
        selector = json_object_new_object();
    fg_json_set_str(fg_json_ensure_obj(selector, "matchLabels"), HASH_LABEL, p->hash);
    json_object_object_add(spec, "selector", selector);
    json_object_object_add(spec, "template", tmpl);
    char *path = fg_kube_path(&fg_kube_replicasets, ns, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(cm->client, path, rs, NULL, &st);
    if (!err) {
        fg_sim_cm_event(cm, COMPONENT, p->d, "Normal", "ScalingReplicaSet", "Scaled up replica set %s from 0 to %lld",
                        name, (long long)replicas);
    }
    fg_kube_status_cleanup(&st);
    free(path);
    free(name);
    json_object_put(rs);
    return err;
}

/* The sum of a field over every set (spec.replicas defaults to 1, status counts to 0). */
static int64_t sum(struct plan *p, const char *a, const char *b)
{
    int64_t dflt = !strcmp(a, "spec") ? 1 : 0;
    int64_t n = p->new_rs ? fg_sim_int_at(p->new_rs, a, b, dflt) : 0;
    for (size_t i = 0; i < p->nold; i++)
        n += fg_sim_int_at(p->old[i], a, b, dflt);
    return n;
}

static enum fg_err rolling_update(struct fg_sim_cm *cm, struct plan *p)
{
    enum fg_err err = FG_OK;
    /* the new set up, within maxSurge */
    if (p->new_rs) {
        int64_t cur = fg_sim_int_at(p->new_rs, "spec", "replicas", 1), want = cur;
        if (cur > p->desired) {
            want = p->desired;
        } else if (cur < p->desired) {
            int64_t room = p->desired + p->max_surge - sum(p, "spec", "replicas");
            if (room > 0)
                want = cur + (room < p->desired - cur ? room : p->desired - cur);
        }
        if (want != cur)
            err = scale(cm, p, p->new_rs, want, 0);
    }
    if (err || p->nold == 0)
        return err;
    /* old sets down, keeping replicas - maxUnavailable available */
    int64_t min_available = p->desired - p->max_unavailable;
    int64_t new_unavailable = p->new_rs ? fg_sim_int_at(p->new_rs, "spec", "replicas", 1) -
                                              fg_sim_int_at(p->new_rs, "status", "availableReplicas", 0)
                                        : 0;
    int64_t max_down = sum(p, "spec", "replicas") - min_available - (new_unavailable > 0 ? new_unavailable : 0);
    if (max_down <= 0)
        return FG_OK;
    for (size_t i = 0; i < p->nold && max_down > 0 && !err; i++) {   /* unhealthy old pods first */
        int64_t cur = fg_sim_int_at(p->old[i], "spec", "replicas", 1);
        int64_t unhealthy = cur - fg_sim_int_at(p->old[i], "status", "availableReplicas", 0);
        int64_t down = unhealthy < max_down ? unhealthy : max_down;
        if (down > 0 && cur > 0) {
            err = scale(cm, p, p->old[i], cur - down, 0);
            max_down -= down;
        }
    }
    int64_t available = sum(p, "status", "availableReplicas");
    int64_t total_down = available - min_available;
    for (size_t i = 0; i < p->nold && total_down > 0 && max_down > 0 && !err; i++) {
        int64_t cur = fg_sim_int_at(p->old[i], "spec", "replicas", 1);
        int64_t down = cur < total_down ? cur : total_down;
        down = down < max_down ? down : max_down;
        if (down > 0) {
            err = scale(cm, p, p->old[i], cur - down, 0);
            total_down -= down;
            max_down -= down;
        }
    }
    return err;
}

/* Does an old set still have a pod that is not finished, terminating ones included (kube's
 * oldPodsRunning: the new pods wait until the old ones are gone)? */
static bool old_pods_running(struct fg_sim_cm *cm, struct plan *p)
{
    bool running = false;
    for (size_t i = 0; i < p->nold && !running; i++) {
        json_object *pods = fg_sim_cm_by_owner(&cm->pods, FG_SIM_INDEX_CONTROLLER,
                                               fg_json_get_str(p->old[i], "metadata", "uid", NULL));
        for (size_t j = 0; j < json_object_array_length(pods) && !running; j++)
            running = !fg_sim_pod_finished(json_object_array_get_idx(pods, j));
        json_object_put(pods);
    }
    return running;
}

static enum fg_err recreate(struct fg_sim_cm *cm, struct plan *p)
{
    enum fg_err err = FG_OK;
    for (size_t i = 0; i < p->nold && !err; i++)
        if (fg_sim_int_at(p->old[i], "spec", "replicas", 1) > 0)
            err = scale(cm, p, p->old[i], 0, 0);
    if (err || !p->new_rs || fg_sim_int_at(p->new_rs, "spec", "replicas", 1) == p->desired)
        return err;
    if (old_pods_running(cm, p)) {
        p->requeue_ns = RECREATE_POLL_NS;   /* a pod's deletion reaches its set, not its deployment */
        return FG_OK;
    }
    return scale(cm, p, p->new_rs, p->desired, 0);
}

/* Deletes old sets scaled to 0 beyond revisionHistoryLimit, oldest first. */
static void cleanup_history(struct fg_sim_cm *cm, struct plan *p)
{
    int64_t limit = fg_sim_int_at(p->d, "spec", "revisionHistoryLimit", 10);
    size_t idle = 0;
    for (size_t i = 0; i < p->nold; i++)
        idle += fg_sim_int_at(p->old[i], "spec", "replicas", 1) == 0 && fg_sim_int_at(p->old[i], "status", "replicas", 0) == 0;
    for (size_t i = 0; i < p->nold && (int64_t)idle > limit; i++) {
        if (fg_sim_int_at(p->old[i], "spec", "replicas", 1) == 0 && fg_sim_int_at(p->old[i], "status", "replicas", 0) == 0 &&
            fg_sim_delete(cm->client, &fg_kube_replicasets, p->old[i], "Background") == FG_OK)
            idle--;
    }
}

/* A Deployment condition: lastUpdateTime kept while status and reason stay the same. */
static json_object *condition(json_object *d, const char *type, bool ok, const char *reason, const char *message,
                              const char *now)
{
    json_object *old = fg_sim_condition(d, type);
    bool same_reason = old && fg_str_eq(fg_json_get_str(old, "status", NULL), ok ? "True" : "False") &&
                       fg_str_eq(fg_json_get_str(old, "reason", NULL), reason);
    json_object *c = fg_sim_condition_new(d, type, ok ? "True" : "False", reason, message, now);
    fg_json_set_str(c, "lastUpdateTime", same_reason ? fg_json_get_str(old, "lastUpdateTime", NULL) : now);
    return c;
}

static enum fg_err write_status(struct fg_sim_cm *cm, struct plan *p, bool created_new, uint32_t collisions)
{
    int64_t replicas = sum(p, "status", "replicas"), available = sum(p, "status", "availableReplicas");
    int64_t updated = p->new_rs ? fg_sim_int_at(p->new_rs, "status", "replicas", 0) : 0;
    int64_t new_available = p->new_rs ? fg_sim_int_at(p->new_rs, "status", "availableReplicas", 0) : 0;
    json_object *status = json_object_new_object();
    json_object_object_add(status, "observedGeneration", json_object_new_int64(fg_sim_int_at(p->d, "metadata", "generation", 1)));
    json_object_object_add(status, "replicas", json_object_new_int64(replicas));
    json_object_object_add(status, "updatedReplicas", json_object_new_int64(updated));
    json_object_object_add(status, "readyReplicas", json_object_new_int64(sum(p, "status", "readyReplicas")));
    json_object_object_add(status, "availableReplicas", json_object_new_int64(available));
    json_object_object_add(status, "unavailableReplicas",
                           json_object_new_int64(p->desired - available > 0 ? p->desired - available : 0));
    if (collisions)
        json_object_object_add(status, "collisionCount", json_object_new_int64(collisions));

    char now[FG_TIME_MAX], msg[320];
    fg_time_format(fg_clock_wall_ms(), now);
    json_object *conds = json_object_new_array();
    bool min_ok = available >= p->desired - p->max_unavailable;
    json_object_array_add(conds, condition(p->d, "Available", min_ok,
                                           min_ok ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                                           min_ok ? "Deployment has minimum availability."
                                                  : "Deployment does not have minimum availability.",
                                           now));
    const char *rs_name = p->new_rs ? fg_json_get_str(p->new_rs, "metadata", "name", NULL) : "";
    const char *reason;
    if (p->new_rs && updated == p->desired && replicas == p->desired && new_available == p->desired) {
        reason = "NewReplicaSetAvailable";
        snprintf(msg, sizeof msg, "ReplicaSet \"%s\" has successfully progressed.", rs_name);
    } else if (created_new) {
        reason = "NewReplicaSetCreated";
        snprintf(msg, sizeof msg, "Created new replica set \"%s-%s\"", fg_json_get_str(p->d, "metadata", "name", NULL),
                 p->hash);
    } else {
        reason = "ReplicaSetUpdated";
        snprintf(msg, sizeof msg, "ReplicaSet \"%s\" is progressing.", rs_name);
    }
    json_object_array_add(conds, condition(p->d, "Progressing", true, reason, msg, now));
    json_object_object_add(status, "conditions", conds);

    /* write only when something other than the timestamps changed */
    enum fg_err err = fg_sim_status_holds(p->d, status) ? FG_OK : fg_sim_patch_status(cm->client, &fg_kube_deployments, p->d, status);
    json_object_put(status);
    return err;
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_cm *cm = ud;
    struct plan p = { .d = fg_sim_cm_get(&cm->deployments, key) };
    if (!p.d || fg_sim_pod_terminating(p.d)) {
        json_object_put(p.d);
        return fg_reconcile_ok();
    }
    p.desired = fg_sim_int_at(p.d, "spec", "replicas", 1);
    uint32_t collisions = (uint32_t)fg_sim_int_at(p.d, "status", "collisionCount", 0);
    fg_sim_template_hash(fg_json_get(p.d, "spec", "template", NULL), collisions, p.hash);
    bool recreate_strategy = fg_str_eq(fg_json_get_str(p.d, "spec", "strategy", "type", NULL), "Recreate");
    json_object *ru = fg_json_get(p.d, "spec", "strategy", "rollingUpdate", NULL);
    json_object *surge = fg_json_get(ru, "maxSurge", NULL), *unavail = fg_json_get(ru, "maxUnavailable", NULL);
    json_object *quarter = json_object_new_string("25%");
    enum fg_err err = FG_OK;
    if (fg_sim_int_or_percent(surge ? surge : quarter, p.desired, true, 0, &p.max_surge) ||
        fg_sim_int_or_percent(unavail ? unavail : quarter, p.desired, false, 0, &p.max_unavailable))
        err = FG_E_PARSE;
    json_object_put(quarter);
    if (recreate_strategy)
        p.max_surge = 0, p.max_unavailable = p.desired;
    if (!recreate_strategy && p.max_surge == 0 && p.max_unavailable == 0)
        p.max_unavailable = 1;
    if (p.max_unavailable > p.desired)
        p.max_unavailable = p.desired;

    json_object *sets = fg_sim_cm_by_owner(&cm->replicasets, FG_SIM_INDEX_CONTROLLER,
                                           fg_json_get_str(p.d, "metadata", "uid", NULL));
    size_t n = json_object_array_length(sets);
    p.old = fg_calloc(n ? n : 1, sizeof *p.old);
    for (size_t i = 0; i < n; i++) {
        json_object *rs = json_object_array_get_idx(sets, i);
        if (!p.new_rs && fg_str_eq(fg_json_get_str(rs, "metadata", "labels", HASH_LABEL, NULL), p.hash))
            p.new_rs = rs;
        else
            p.old[p.nold++] = rs;
    }
    qsort(p.old, p.nold, sizeof *p.old, cmp_oldest);

    bool created_new = false, paused = json_object_get_boolean(fg_json_get(p.d, "spec", "paused", NULL));
    if (!err && !paused && !p.new_rs) {
        int64_t start = recreate_strategy ? 0 : p.desired;
        if (!recreate_strategy) {   /* as much as maxSurge allows now */
            int64_t room = p.desired + p.max_surge - sum(&p, "spec", "replicas");
            start = room < 0 ? 0 : room < p.desired ? room : p.desired;
        }
        err = create_new_rs(cm, &p, start);
        if (err == FG_E_KUBE_ALREADY_EXISTS) {
            /* our cache may be behind, or another template owns the name: look again, and on a true
             * collision change the hash */
            char *rs_key = fg_asprintf("%s/%s-%s", fg_json_get_str(p.d, "metadata", "namespace", NULL),
                                       fg_json_get_str(p.d, "metadata", "name", NULL), p.hash);
            json_object *taken = fg_sim_cm_get(&cm->replicasets, rs_key);
            free(rs_key);
            if (taken && !fg_str_eq(fg_json_get_str(fg_sim_controller_ref(taken), "uid", NULL),
                                    fg_json_get_str(p.d, "metadata", "uid", NULL))) {
                json_object *st = json_object_new_object();
                json_object_object_add(st, "collisionCount", json_object_new_int64(collisions + 1));
                err = fg_sim_patch_status(cm->client, &fg_kube_deployments, p.d, st);
                json_object_put(st);
            }
            json_object_put(taken);
            if (!err)
                err = FG_E_BUSY;   /* retried with backoff once the cache has caught up */
        }
        created_new = !err;
    } else if (!err && !paused) {
        int64_t rev = max_old_revision(&p);
        if (revision(p.new_rs) <= rev)   /* a rollback to an older template: it becomes the newest revision */
            err = scale(cm, &p, p.new_rs, fg_sim_int_at(p.new_rs, "spec", "replicas", 1), rev + 1);
        if (!err)
            err = recreate_strategy ? recreate(cm, &p) : rolling_update(cm, &p);
        if (!err)
            cleanup_history(cm, &p);
    }
    if (!err || err == FG_E_BUSY) {
        enum fg_err serr = write_status(cm, &p, created_new, collisions);
        err = err ? err : serr;
    }
    free(p.old);
    json_object_put(sets);
    json_object_put(p.d);
    return !err && p.requeue_ns ? fg_reconcile_requeue_after(p.requeue_ns) : fg_reconcile_error(err);
}

enum fg_err fg_sim_deployment_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct fg_manager_controller *c;
    enum fg_err err = fg_sim_cm_controller(cm, "deployment", reconcile, cm, &cm->deployments, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, cm->replicasets.inf, fg_sim_cm_map_controller, (void *)"Deployment", NULL, errmsg);
    return err;
}
