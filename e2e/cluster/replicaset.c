/*
 * replicaset — the ReplicaSet controller: keeps spec.replicas active pods from the template, and
 * the status that Deployments and `kubectl get rs` read.
 *
 * Pods are the ones whose controller reference is the ReplicaSet (no adoption of orphans). Active
 * means not terminating and not finished. Pods it created or deleted that the cache does not show
 * yet count as the assumed set says (objects.h). When there are too many, it deletes first those
 * not yet bound, then Pending before Running, not-Ready before Ready, and the youngest first, as
 * kube's controller ranks them. Status: replicas (active), fullyLabeledReplicas, readyReplicas,
 * availableReplicas (Ready for minReadySeconds; while a pod is still short of it the set is looked
 * at again every second), observedGeneration.
 */
#include <stdlib.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/cm.h"

#define COMPONENT "replicaset-controller"
#define BURST 500   /* creates or deletes per reconcile, as kube's burstReplicas */

/* Lower ranks are deleted first. */
static int delete_rank(json_object *pod)
{
    const char *node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    if (!node || !*node)
        return 0;
    if (!fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running"))
        return 1;
    return fg_sim_pod_ready(pod) ? 3 : 2;
}

static int cmp_victims(const void *a, const void *b)
{
    json_object *pa = *(json_object *const *)a, *pb = *(json_object *const *)b;
    int ra = delete_rank(pa), rb = delete_rank(pb);
    if (ra != rb)
        return ra - rb;
    int64_t ca = fg_sim_created_ms(pa), cb = fg_sim_created_ms(pb);
    return ca > cb ? -1 : ca < cb;   /* youngest first */
}

static enum fg_err delete_pods(struct fg_sim_pod_owner *rc, json_object *rs, const char *key, json_object **victims,
                               size_t n)
{
    enum fg_err err = FG_OK;
    for (size_t i = 0; i < n && !err; i++)
        err = fg_sim_cm_delete_pod(rc->cm, COMPONENT, rs, victims[i], NULL, rc->assumed, key);
    return err;
}

static bool labels_cover(json_object *pod, json_object *want)
{
    json_object *labels = fg_json_get(pod, "metadata", "labels", NULL);
    if (json_object_is_type(want, json_type_object)) {
        json_object_object_foreach(want, k, v) {
            if (!fg_str_eq(fg_json_get_str(labels, k, NULL), json_object_get_string(v)))
                return false;
        }
    }
    return true;
}

/* Writes status when it changed; *requeue_ms gets when a Ready pod becomes available (0: never). */
static enum fg_err write_status(struct fg_sim_pod_owner *rc, json_object *rs, json_object **active, size_t n,
                                int64_t *requeue_ms)
{
    int64_t min_ready = 0, now = fg_clock_wall_ms(), gen = 0;
    fg_json_get_int64(rs, &min_ready, "spec", "minReadySeconds", NULL);
    fg_json_get_int64(rs, &gen, "metadata", "generation", NULL);
    json_object *tmpl_labels = fg_json_get(rs, "spec", "template", "metadata", "labels", NULL);
    int64_t labeled = 0, ready = 0, available = 0;
    *requeue_ms = 0;
    for (size_t i = 0; i < n; i++) {
        labeled += labels_cover(active[i], tmpl_labels);
        if (fg_sim_pod_ready(active[i])) {
            ready++;
            if (fg_sim_pod_available(active[i], min_ready, now))
                available++;
            else
                *requeue_ms = 1000;   /* look again soon: it becomes available within minReadySeconds */
        }
    }
    json_object *status = json_object_new_object();
    json_object_object_add(status, "replicas", json_object_new_int64((int64_t)n));
    json_object_object_add(status, "fullyLabeledReplicas", json_object_new_int64(labeled));
    json_object_object_add(status, "readyReplicas", json_object_new_int64(ready));
    json_object_object_add(status, "availableReplicas", json_object_new_int64(available));
    json_object_object_add(status, "observedGeneration", json_object_new_int64(gen));
    enum fg_err err = FG_OK;
    if (!fg_sim_status_holds(rs, status))
        err = fg_sim_patch_status(rc->cm->client, &fg_kube_replicasets, rs, status);
    json_object_put(status);
    return err;
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_pod_owner *rc = ud;
    json_object *rs = fg_sim_cm_get(&rc->cm->replicasets, key);
    if (!rs)
        return fg_reconcile_ok();   /* gone: the garbage collector takes its pods */
    const char *uid = fg_json_get_str(rs, "metadata", "uid", NULL);
    json_object *pods = fg_sim_cm_by_owner(&rc->cm->pods, FG_SIM_INDEX_CONTROLLER, uid);
    fg_sim_assumed_settle(rc->assumed, key, pods);
    size_t npods = json_object_array_length(pods), nactive = 0;
    json_object **active = fg_calloc(npods ? npods : 1, sizeof *active);
    for (size_t i = 0; i < npods; i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        if (fg_sim_pod_active(p) && !fg_sim_assumed_deleted(rc->assumed, key, fg_json_get_str(p, "metadata", "uid", NULL)))
            active[nactive++] = p;
    }
    int64_t want = 1;
    fg_json_get_int64(rs, &want, "spec", "replicas", NULL);
    int64_t have = (int64_t)(nactive + fg_sim_assumed_pending_creates(rc->assumed, key));
    enum fg_err err = FG_OK;
    if (have < want && !fg_sim_pod_terminating(rs)) {
        err = fg_sim_cm_create_pods(rc, COMPONENT, rs, key, want - have < BURST ? want - have : BURST);
    } else if (have > want) {
        qsort(active, nactive, sizeof *active, cmp_victims);
        size_t excess = (size_t)(have - want);
        err = delete_pods(rc, rs, key, active, excess < nactive ? (excess < BURST ? excess : BURST) : nactive);
    }
    int64_t requeue_ms = 0;
    if (!err)
        err = write_status(rc, rs, active, nactive, &requeue_ms);
    free(active);
    json_object_put(pods);
    json_object_put(rs);
    if (err)
        return fg_reconcile_error(err);
    return requeue_ms ? fg_reconcile_requeue_after((uint64_t)requeue_ms * FG_NS_PER_MS) : fg_reconcile_ok();
}

enum fg_err fg_sim_replicaset_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct fg_manager_controller *c;
    enum fg_err err = fg_sim_cm_pod_owner_controller(cm, "replicaset", reconcile, &cm->replicasets, &c, errmsg);
    return err;
}
