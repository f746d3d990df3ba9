/*
 * statefulset — the StatefulSet controller: pods `<name>-0` … `<name>-(N-1)` with stable names,
 * created, replaced and removed in order.
 *
 * With podManagementPolicy OrderedReady (the default) pod i is created only when every pod below it
 * is Running and Ready, scale-down removes the highest ordinal first and one at a time, and nothing
 * moves while a pod is not ready; Parallel creates and deletes without waiting. A pod that
 * finished (Failed or Succeeded) is deleted and made again. Each pod carries the labels
 * statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and controller-revision-hash
 * (the template's hash, objects.h). RollingUpdate replaces pods of an old revision from the highest
 * ordinal down to spec.updateStrategy.rollingUpdate.partition, one at a time, each once the rest
 * are Ready; OnDelete leaves them. Status: replicas, readyReplicas, availableReplicas,
 * currentReplicas, updatedReplicas, currentRevision, updateRevision, observedGeneration. No
 * volumeClaimTemplates are made (the test API server serves no PersistentVolumeClaims).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/cm.h"

#define COMPONENT "statefulset-controller"
#define REVISION_LABEL "controller-revision-hash"

/* The ordinal of a pod named "<set>-<n>", or -1. */
static int64_t ordinal(const char *set, const char *pod)
{
    size_t n = strlen(set);
    if (!pod || strncmp(pod, set, n) || pod[n] != '-' || !pod[n + 1])
        return -1;
    char *end = NULL;
    long long o = strtoll(pod + n + 1, &end, 10);
    return *end || o < 0 ? -1 : o;
}

static enum fg_err create_pod(struct fg_sim_cm *cm, json_object *set, int64_t i, const char *revision)
{
    const char *ns = fg_json_get_str(set, "metadata", "namespace", NULL);
    const char *sname = fg_json_get_str(set, "metadata", "name", NULL);
    char name[320], index[24];
    snprintf(name, sizeof name, "%s-%lld", sname, (long long)i);
    snprintf(index, sizeof index, "%lld", (long long)i);
    json_object *extra = json_object_new_object();
    fg_json_set_str(extra, "statefulset.kubernetes.io/pod-name", name);
    fg_json_set_str(extra, "apps.kubernetes.io/pod-index", index);
    fg_json_set_str(extra, REVISION_LABEL, revision);
    json_object *pod = fg_sim_pod_from_template(fg_json_get(set, "spec", "template", NULL), ns, name, NULL, set, extra);
    json_object_put(extra);
    json_object *spec = fg_json_get(pod, "spec", NULL);
    fg_json_set_str(spec, "hostname", name);
    const char *service = fg_json_get_str(set, "spec", "serviceName", NULL);
    if (service && *service)
        fg_json_set_str(spec, "subdomain", service);
    char *path = fg_kube_path(&fg_kube_pods, ns, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(cm->client, path, pod, NULL, &st);
    if (err == FG_E_KUBE_ALREADY_EXISTS)
        err = FG_OK;   /* our cache is behind: the next event brings it */
    else if (!err)
        fg_sim_cm_event(cm, COMPONENT, set, "Normal", "SuccessfulCreate", "create Pod %s in StatefulSet %s successful",
                        name, sname);
    else
        fg_sim_cm_event(cm, COMPONENT, set, "Warning", "FailedCreate", "create Pod %s in StatefulSet %s failed error: %s",
                        name, sname, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(pod);
    return err;
}

static enum fg_err delete_pod(struct fg_sim_cm *cm, json_object *set, json_object *pod)
{
    enum fg_err err = fg_sim_delete(cm->client, &fg_kube_pods, pod, NULL);
    if (!err)
        fg_sim_cm_event(cm, COMPONENT, set, "Normal", "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful",
                        fg_json_get_str(pod, "metadata", "name", NULL), fg_json_get_str(set, "metadata", "name", NULL));
    return err;
}

static bool running_ready(json_object *pod)
{
    return pod && !fg_sim_pod_terminating(pod) &&
           fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running") && fg_sim_pod_ready(pod);
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_cm *cm = ud;
    json_object *set = fg_sim_cm_get(&cm->statefulsets, key);
    if (!set || fg_sim_pod_terminating(set)) {
        json_object_put(set);
        return fg_reconcile_ok();
    }
    const char *sname = fg_json_get_str(set, "metadata", "name", NULL);
    int64_t replicas = fg_sim_int_at(set, "spec", "replicas", 1), partition = 0;
    fg_json_get_int64(set, &partition, "spec", "updateStrategy", "rollingUpdate", "partition", NULL);
    bool parallel = fg_str_eq(fg_json_get_str(set, "spec", "podManagementPolicy", NULL), "Parallel");
    bool on_delete = fg_str_eq(fg_json_get_str(set, "spec", "updateStrategy", "type", NULL), "OnDelete");
    char hash[16], revision[320];
    fg_sim_template_hash(fg_json_get(set, "spec", "template", NULL), 0, hash);
    snprintf(revision, sizeof revision, "%s-%s", sname, hash);

    json_object *pods = fg_sim_cm_by_owner(&cm->pods, FG_SIM_INDEX_CONTROLLER, fg_json_get_str(set, "metadata", "uid", NULL));
    int64_t top = replicas;
    for (size_t i = 0; i < json_object_array_length(pods); i++) {
        int64_t o = ordinal(sname, fg_json_get_str(json_object_array_get_idx(pods, i), "metadata", "name", NULL));
        if (o >= top)
            top = o + 1;
    }
    json_object **by_ord = fg_calloc((size_t)top + 1, sizeof *by_ord);
    for (size_t i = 0; i < json_object_array_length(pods); i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        int64_t o = ordinal(sname, fg_json_get_str(p, "metadata", "name", NULL));
        if (o >= 0)
            by_ord[o] = p;
    }
    enum fg_err err = FG_OK;
    int64_t ready = 0, current = 0, updated = 0, count = 0;
    bool blocked = false;   /* OrderedReady: a lower ordinal is not yet running and ready */
    for (int64_t i = 0; i < replicas && !err; i++) {
        json_object *p = by_ord[i];
        if (p && fg_sim_pod_finished(p) && !fg_sim_pod_terminating(p)) {
            err = delete_pod(cm, set, p);   /* made again on the next pass */
            blocked = true;
            continue;
        }
        if (!p) {
            if (!blocked || parallel)
                err = create_pod(cm, set, i, revision);
            blocked = true;
            continue;
        }
        count++;
        bool is_updated = fg_str_eq(fg_json_get_str(p, "metadata", "labels", REVISION_LABEL, NULL), revision);
        updated += is_updated;
        current += !is_updated;
        if (running_ready(p))
            ready++;
        else
            blocked = true;
    }
    /* scale down: the highest ordinal first, one at a time unless Parallel */
    for (int64_t i = top - 1; i >= replicas && !err; i--) {
        json_object *p = by_ord[i];
        if (!p)
            continue;
        if (!fg_sim_pod_terminating(p) && (parallel || !blocked))
            err = delete_pod(cm, set, p);
        blocked = true;
        if (!parallel)
            break;
    }
    /* rolling update: the highest old-revision pod at or above the partition, once all are ready */
    if (!err && !on_delete && !blocked && ready == replicas) {
        for (int64_t i = replicas - 1; i >= partition; i--) {
            json_object *p = by_ord[i];
            if (p && !fg_str_eq(fg_json_get_str(p, "metadata", "labels", REVISION_LABEL, NULL), revision)) {
                err = delete_pod(cm, set, p);
                break;
            }
        }
    }
    if (!err) {
        json_object *status = json_object_new_object();
        json_object_object_add(status, "observedGeneration", json_object_new_int64(fg_sim_int_at(set, "metadata", "generation", 1)));
        json_object_object_add(status, "replicas", json_object_new_int64(count));
        json_object_object_add(status, "readyReplicas", json_object_new_int64(ready));
        json_object_object_add(status, "availableReplicas", json_object_new_int64(ready));
        json_object_object_add(status, "currentReplicas", json_object_new_int64(updated == count ? count : current));
        json_object_object_add(status, "updatedReplicas", json_object_new_int64(updated));
        const char *cur_rev = fg_json_get_str(set, "status", "currentRevision", NULL);
        fg_json_set_str(status, "currentRevision", updated == count || !cur_rev ? revision : cur_rev);
        fg_json_set_str(status, "updateRevision", revision);
        if (!fg_sim_status_holds(set, status))
            err = fg_sim_patch_status(cm->client, &fg_kube_statefulsets, set, status);
        json_object_put(status);
    }
    free(by_ord);
    json_object_put(pods);
    json_object_put(set);
    return fg_reconcile_error(err);
}

enum fg_err fg_sim_statefulset_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct fg_manager_controller *c;
    enum fg_err err = fg_sim_cm_controller(cm, "statefulset", reconcile, cm, &cm->statefulsets, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, cm->pods.inf, fg_sim_cm_map_controller, (void *)"StatefulSet", NULL, errmsg);
    return err;
}
