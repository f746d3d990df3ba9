/*
 * daemonset — the DaemonSet controller: one pod on every node the template may run on.
 *
 * A node is eligible when the template's node selector and required node affinity match it and its
 * NoSchedule and NoExecute taints are tolerated by the template's tolerations plus those kube adds
 * to every daemon pod (not-ready and unreachable NoExecute; disk-, memory- and pid-pressure and
 * unschedulable NoSchedule). Each pod is pinned to its node by a required node affinity on
 * metadata.name and placed by the default scheduler, as kube ≥ 1.12 does; it carries the
 * controller-revision-hash of its template. Pods on nodes no longer eligible, extra pods on a node
 * and finished pods are deleted. RollingUpdate replaces old-revision pods while at most
 * maxUnavailable (default 1) daemon pods are unavailable, the unavailable old ones first; OnDelete
 * leaves them. Status: desiredNumberScheduled, currentNumberScheduled, numberMisscheduled,
 * numberReady, numberAvailable, numberUnavailable, updatedNumberScheduled, observedGeneration.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/cm.h"
#include "operator/kube/nodematch.h"

#define COMPONENT "daemonset-controller"
#define REVISION_LABEL "controller-revision-hash"

static const char *const default_tolerations[][2] = {
    { "node.kubernetes.io/not-ready", "NoExecute" },      { "node.kubernetes.io/unreachable", "NoExecute" },
    { "node.kubernetes.io/disk-pressure", "NoSchedule" }, { "node.kubernetes.io/memory-pressure", "NoSchedule" },
    { "node.kubernetes.io/pid-pressure", "NoSchedule" },  { "node.kubernetes.io/unschedulable", "NoSchedule" },
};

/* The template's tolerations plus kube's daemon defaults (a new array). */
static json_object *daemon_tolerations(json_object *tmpl)
{
    json_object *tols = json_object_new_array();
    json_object *own = fg_json_get(tmpl, "spec", "tolerations", NULL);
    for (size_t i = 0; i < fg_json_array_len(own); i++)
        json_object_array_add(tols, json_object_get(json_object_array_get_idx(own, i)));
    for (size_t i = 0; i < sizeof default_tolerations / sizeof default_tolerations[0]; i++) {
        bool have = false;
        for (size_t j = 0; j < fg_json_array_len(own) && !have; j++)
            have = fg_str_eq(fg_json_get_str(json_object_array_get_idx(own, j), "key", NULL), default_tolerations[i][0]);
        if (have)
            continue;
        json_object *t = json_object_new_object();
        fg_json_set_str(t, "key", default_tolerations[i][0]);
        fg_json_set_str(t, "operator", "Exists");
        fg_json_set_str(t, "effect", default_tolerations[i][1]);
        json_object_array_add(tols, t);
    }
    return tols;
}

static bool eligible(json_object *tmpl, json_object *tolerations, json_object *node)
{
    return fg_node_matches_pod(tmpl, node) &&
           !fg_untolerated_taint(fg_json_get(node, "spec", "taints", NULL), tolerations, false);
}

/* Pins pod to node: every required node-affinity term gets matchFields metadata.name In [node]. */
static void pin(json_object *pod, const char *node)
{
    json_object *field = json_object_new_object();
    fg_json_set_str(field, "key", "metadata.name");
    fg_json_set_str(field, "operator", "In");
    json_object *values = json_object_new_array();
    json_object_array_add(values, json_object_new_string(node));
    json_object_object_add(field, "values", values);
    json_object *req = fg_json_ensure_obj(fg_json_ensure_obj(fg_json_ensure_obj(fg_json_get(pod, "spec", NULL), "affinity"),
                                                             "nodeAffinity"),
                                          "requiredDuringSchedulingIgnoredDuringExecution");
    json_object *terms = fg_json_get(req, "nodeSelectorTerms", NULL);
    if (!fg_json_array_len(terms)) {
        terms = json_object_new_array();
        json_object_array_add(terms, json_object_new_object());
        json_object_object_add(req, "nodeSelectorTerms", terms);
    }
    for (size_t i = 0; i < json_object_array_length(terms); i++) {
        json_object *fields = json_object_new_array();
        json_object_array_add(fields, json_object_get(field));
        json_object_object_add(json_object_array_get_idx(terms, i), "matchFields", fields);
    }
    json_object_put(field);
}

static enum fg_err create_pod(struct fg_sim_pod_owner *dc, json_object *ds, const char *node, const char *hash,
                              json_object *tolerations, const char *assume_key)
{
    const char *ns = fg_json_get_str(ds, "metadata", "namespace", NULL);
    json_object *extra = json_object_new_object();
    fg_json_set_str(extra, REVISION_LABEL, hash);
    char gen[24], *generate = fg_asprintf("%s-", fg_json_get_str(ds, "metadata", "name", NULL));
    int64_t g = 1;
    fg_json_get_int64(ds, &g, "metadata", "generation", NULL);
    snprintf(gen, sizeof gen, "%lld", (long long)g);
    fg_json_set_str(extra, "pod-template-generation", gen);
    json_object *pod = fg_sim_pod_from_template(fg_json_get(ds, "spec", "template", NULL), ns, NULL, generate, ds, extra);
    json_object_object_add(fg_json_get(pod, "spec", NULL), "tolerations", json_object_get(tolerations));
    pin(pod, node);
    enum fg_err err = fg_sim_cm_create_pod(dc->cm, COMPONENT, ds, pod, dc->assumed, assume_key);
    free(generate);
    json_object_put(pod);
    json_object_put(extra);
    return err;
}

/* Deletes pod, once: the deletion is assumed under the daemon set's key until the cache shows it. */
static enum fg_err delete_pod(struct fg_sim_pod_owner *dc, json_object *ds, const char *key, json_object *pod)
{
    if (fg_sim_assumed_deleted(dc->assumed, key, fg_json_get_str(pod, "metadata", "uid", NULL)))
        return FG_OK;
    return fg_sim_cm_delete_pod(dc->cm, COMPONENT, ds, pod, NULL, dc->assumed, key);
}

/* The node a daemon pod belongs to: where it is bound, else the node its affinity pins. */
static const char *pod_node(json_object *pod)
{
    const char *bound = fg_json_get_str(pod, "spec", "nodeName", NULL);
    if (bound && *bound)
        return bound;
    json_object *terms = fg_json_get(pod, "spec", "affinity", "nodeAffinity",
                                     "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", NULL);
    json_object *fields = fg_json_get(json_object_array_get_idx(terms, 0), "matchFields", NULL);
    json_object *values = fg_json_get(json_object_array_get_idx(fields, 0), "values", NULL);
    return fg_json_array_len(values) ? json_object_get_string(json_object_array_get_idx(values, 0)) : NULL;
}

struct tally {
    int64_t desired, current, misscheduled, ready, available, updated;
};

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_pod_owner *dc = ud;
    struct fg_sim_cm *cm = dc->cm;
    json_object *ds = fg_sim_cm_get(&cm->daemonsets, key);
    if (!ds || fg_sim_pod_terminating(ds)) {
        json_object_put(ds);
        return fg_reconcile_ok();
    }
    json_object *tmpl = fg_json_get(ds, "spec", "template", NULL);
    json_object *tolerations = daemon_tolerations(tmpl);
    char hash[16];
    fg_sim_template_hash(tmpl, 0, hash);
    json_object *nodes = fg_sim_cm_list(&cm->nodes);
    json_object *pods = fg_sim_cm_by_owner(&cm->pods, FG_SIM_INDEX_CONTROLLER, fg_json_get_str(ds, "metadata", "uid", NULL));
    fg_sim_assumed_settle(dc->assumed, key, pods);
    int64_t min_ready = 0, now = fg_clock_wall_ms();
    fg_json_get_int64(ds, &min_ready, "spec", "minReadySeconds", NULL);
    struct tally t = { 0 };
    enum fg_err err = FG_OK;
    size_t npods = json_object_array_length(pods);
    bool *claimed = fg_calloc(npods ? npods : 1, sizeof *claimed);
    json_object **old_unavailable = fg_calloc(npods ? npods : 1, sizeof *old_unavailable);
    json_object **old_available = fg_calloc(npods ? npods : 1, sizeof *old_available);
    size_t n_old_unavailable = 0, n_old_available = 0;
    for (size_t i = 0; i < json_object_array_length(nodes) && !err; i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        const char *name = fg_json_get_str(node, "metadata", "name", NULL);
        bool should = eligible(tmpl, tolerations, node);
        json_object *mine = NULL;
        for (size_t j = 0; j < npods && !err; j++) {
            json_object *p = json_object_array_get_idx(pods, j);
            if (claimed[j] || !fg_str_eq(pod_node(p), name))
                continue;
            claimed[j] = true;
            if (fg_sim_pod_terminating(p))
                continue;
            t.misscheduled += !should && !fg_sim_pod_finished(p);
            if (!should || mine || fg_sim_pod_finished(p))
                err = delete_pod(dc, ds, key, p);   /* not wanted here, a duplicate, or finished */
            else
                mine = p;
        }
        if (!should)
            continue;
        t.desired++;
        if (!mine) {
            char *assume_key = fg_asprintf("%s@%s", key, name);
            fg_sim_assumed_settle(dc->assumed, assume_key, pods);
            if (!err && !fg_sim_assumed_pending_creates(dc->assumed, assume_key))
                err = create_pod(dc, ds, name, hash, tolerations, assume_key);
            free(assume_key);
            continue;
        }
        t.current++;
        bool is_new = fg_str_eq(fg_json_get_str(mine, "metadata", "labels", REVISION_LABEL, NULL), hash);
        bool avail = fg_sim_pod_available(mine, min_ready, now);
        t.updated += is_new;
        t.ready += fg_sim_pod_ready(mine);
        t.available += avail;
        if (!is_new && avail)
            old_available[n_old_available++] = mine;
        else if (!is_new)
            old_unavailable[n_old_unavailable++] = mine;
    }
    for (size_t j = 0; j < npods && !err; j++)   /* pods of nodes that are gone */
        if (!claimed[j] && !fg_sim_pod_terminating(json_object_array_get_idx(pods, j)))
            err = delete_pod(dc, ds, key, json_object_array_get_idx(pods, j));
    if (!err && !fg_str_eq(fg_json_get_str(ds, "spec", "updateStrategy", "type", NULL), "OnDelete")) {
        int64_t max_unavailable = 1;
        if (fg_sim_int_or_percent(fg_json_get(ds, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable", NULL),
                                  t.desired, true, 1, &max_unavailable) || max_unavailable < 1)
            max_unavailable = 1;
        int64_t unavailable = t.desired - t.available;   /* the old unavailable ones among them */
        for (size_t i = 0; i < n_old_unavailable && !err; i++)
            err = delete_pod(dc, ds, key, old_unavailable[i]);
        for (size_t i = 0; i < n_old_available && unavailable < max_unavailable && !err; i++, unavailable++)
            err = delete_pod(dc, ds, key, old_available[i]);
    }
    if (!err) {
        json_object *status = json_object_new_object();
        int64_t gen = 1;
        fg_json_get_int64(ds, &gen, "metadata", "generation", NULL);
        json_object_object_add(status, "observedGeneration", json_object_new_int64(gen));
        json_object_object_add(status, "desiredNumberScheduled", json_object_new_int64(t.desired));
        json_object_object_add(status, "currentNumberScheduled", json_object_new_int64(t.current));
        json_object_object_add(status, "numberMisscheduled", json_object_new_int64(t.misscheduled));
        json_object_object_add(status, "numberReady", json_object_new_int64(t.ready));
        json_object_object_add(status, "numberAvailable", json_object_new_int64(t.available));
        json_object_object_add(status, "numberUnavailable", json_object_new_int64(t.desired - t.available));
        json_object_object_add(status, "updatedNumberScheduled", json_object_new_int64(t.updated));
        if (!fg_sim_status_holds(ds, status))
            err = fg_sim_patch_status(cm->client, &fg_kube_daemonsets, ds, status);
        json_object_put(status);
    }
    free(claimed);
    free(old_unavailable);
    free(old_available);
    json_object_put(pods);
    json_object_put(nodes);
    json_object_put(tolerations);
    json_object_put(ds);
    if (err)
        return fg_reconcile_error(err);
    return min_ready > 0 && t.ready > t.available ? fg_reconcile_requeue_after(FG_NS_PER_S) : fg_reconcile_ok();
}

/* Any node change may change where every daemon set runs. */
static void map_all(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    (void)obj;
    struct fg_sim_cm *cm = ud;
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(cm->daemonsets.inf), &l);
    for (size_t i = 0; i < l.n; i++)
        fg_keys_add(out, fg_kobj_key(l.items[i]));
    fg_kobj_list_cleanup(&l);
}

enum fg_err fg_sim_daemonset_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct fg_manager_controller *c;
    enum fg_err err = fg_sim_cm_pod_owner_controller(cm, "daemonset", reconcile, &cm->daemonsets, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, cm->nodes.inf, map_all, cm, NULL, errmsg);
    return err;
}
