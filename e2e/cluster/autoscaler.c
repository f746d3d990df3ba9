/*
 * autoscaler — cluster-autoscaler's node-group behaviour for the simulated cloud (cloud.h).
 *
 * Every scanInterval it looks at the cluster as cluster-autoscaler does:
 *   - Scale-up. Pods the scheduler marked PodScheduled=False with reason Unschedulable for at
 *     least scaleUpDelay, and that would fit neither on a node already there (Ready, schedulable,
 *     with room left by its pods: the scheduler places them when it tries again; pods with
 *     inter-pod affinity or spread constraints excepted) nor on one on its way (an instance whose
 *     node has not registered yet), are packed first-fit onto fresh nodes of each group whose
 *     template (the group's capacity, labels and taints, less what its DaemonSets would run there)
 *     can take them — fit of every resource, node selector and required node affinity, taints. The
 *     group that takes the most pods with the least idle CPU and memory wins (the least-waste
 *     expander); it grows by as many nodes as those pods need, up to maxSize. Each pod gets an
 *     Event TriggeredScaleUp (`pod triggered scale-up: [{gpu 1->2 (max: 10)}]`), or once
 *     NotTriggerScaleUp saying why no group can take it.
 *   - Scale-down. A node of a group above minSize that holds no pod but DaemonSet and mirror pods
 *     (finished pods aside) for scaleDownUnneeded, when no scale-up happened within
 *     scaleDownDelayAfterAdd and no pod on it is annotated
 *     cluster-autoscaler.kubernetes.io/safe-to-evict: "false", is tainted
 *     ToBeDeletedByClusterAutoscaler:NoSchedule, gets an Event ScaleDownEmpty, and its instance is
 *     terminated (the kubelet then removes the Node).
 * Only empty nodes are removed: moving pods off under-used nodes is not simulated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/autoscaler.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/objects.h"
#include "operator/manager/periodic.h"
#include "operator/kube/event.h"
#include "operator/kube/nodematch.h"
#include "operator/kube/resource.h"
#include "operator/kube/resources.h"

static json_object *template_node(const struct fg_sim_group *g)
{
    char name[128];
    snprintf(name, sizeof name, "template-node-for-%s", g->name);
    return fg_sim_cloud_node_shape(g, name);
}

bool fg_sim_autoscaler_fits(json_object *pod, json_object *node, const struct fg_resources *room, const char **why)
{
    struct fg_resources req;
    if (fg_pod_requests(pod, &req, NULL) != FG_OK || fg_resources_add(&req, "pods", 1000) != FG_OK) {
        *why = "malformed requests";
        return false;
    }
    if (!fg_node_matches_pod(pod, node)) {
        *why = "node(s) didn't match Pod's node affinity/selector";
        return false;
    }
    if (fg_untolerated_taint(fg_json_get(node, "spec", "taints", NULL), fg_json_get(pod, "spec", "tolerations", NULL),
                             false)) {
        *why = "node(s) had untolerated taint";
        return false;
    }
    const char *short_of = fg_resources_exceeds(&req, room);
    if (short_of) {
        *why = "Insufficient resources";
        return false;
    }
    return true;
}

void fg_sim_autoscaler_take(struct fg_resources *room, json_object *pod)
{
    struct fg_resources req;
    if (fg_pod_requests(pod, &req, NULL) == FG_OK && fg_resources_add(&req, "pods", 1000) == FG_OK)
        fg_resources_sub(room, &req);
}

/* What a fresh node of the group has left once the DaemonSets that would run there took theirs. */
static void daemon_overhead(json_object *daemonsets, struct fg_sim_group_view *v)
{
    v->capacity = v->g->capacity;
    for (size_t i = 0; i < fg_json_array_len(daemonsets); i++) {
        json_object *tmpl = fg_json_get(json_object_array_get_idx(daemonsets, i), "spec", "template", NULL);
        const char *why;
        if (fg_sim_autoscaler_fits(tmpl, v->tmpl, &v->capacity, &why))
            fg_sim_autoscaler_take(&v->capacity, tmpl);
    }
}

void fg_sim_autoscaler_event(struct fg_sim_autoscaler *a, json_object *obj, const char *kind, const char *type,
                             const char *reason, const char *message)
{
    fg_json_set_str(obj, "kind", kind);
    fg_json_set_str(obj, "apiVersion", "v1");
    struct fg_kube_event ev = { type, reason, message, FG_SIM_AUTOSCALER_NAME, NULL };
    enum fg_err err = fg_kube_event_emit(a->client, obj, &ev);
    (void)err;   /* best effort */
}

/* The nodes that are Ready and schedulable, with what their active pods leave of their
 * allocatable resources. */
static struct fg_sim_node_room *node_rooms(json_object *nodes, json_object *pods, size_t *n)
{
    size_t count = fg_json_array_len(nodes);
    struct fg_sim_node_room *rooms = fg_calloc(count ? count : 1, sizeof *rooms);
    *n = 0;
    for (size_t i = 0; i < count; i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        struct fg_sim_node_room *r = &rooms[*n];
        if (json_object_get_boolean(fg_json_get(node, "spec", "unschedulable", NULL)) ||
            !fg_str_eq(fg_json_get_str(fg_sim_condition(node, "Ready"), "status", NULL), "True") ||
            fg_resources_from_json(fg_json_get(node, "status", "allocatable", NULL), &r->free, NULL) != FG_OK)
            continue;
        r->node = node;
        (*n)++;
    }
    for (size_t i = 0; i < fg_json_array_len(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *on = fg_json_get_str(pod, "spec", "nodeName", NULL);
        for (size_t r = 0; on && r < *n; r++) {
            if (fg_sim_pod_finished(pod) || !fg_str_eq(fg_json_get_str(rooms[r].node, "metadata", "name", NULL), on))
                continue;
            fg_sim_autoscaler_take(&rooms[r].free, pod);
            break;
        }
    }
    return rooms;
}

/* ---- the loop ---- */

static void scan(void *ud)
{
    struct fg_sim_autoscaler *a = ud;
    json_object *pods = fg_sim_cm_list(&a->pods), *nodes = fg_sim_cm_list(&a->nodes);
    json_object *instances = fg_sim_cm_list(&a->instances), *daemonsets = fg_sim_cm_list(&a->daemonsets);
    struct fg_sim_group_view views[FG_SIM_MAX_GROUPS];
    size_t nviews = a->cfg->ngroups;
    for (size_t g = 0; g < nviews; g++) {
        struct fg_sim_group_view *v = &views[g];
        memset(v, 0, sizeof *v);
        v->g = &a->cfg->groups[g];
        v->tmpl = template_node(v->g);
        daemon_overhead(daemonsets, v);
        for (size_t i = 0; i < fg_json_array_len(instances); i++) {
            json_object *inst = json_object_array_get_idx(instances, i);
            if (!fg_str_eq(fg_sim_cloud_group(inst), v->g->name))
                continue;
            v->size++;
            bool registered = false;
            for (size_t n = 0; n < fg_json_array_len(nodes) && !registered; n++)
                registered = fg_str_eq(fg_json_get_str(json_object_array_get_idx(nodes, n), "metadata", "name", NULL),
                                       fg_sim_cloud_node(inst));
            if (!registered) {
                v->upcoming = fg_realloc(v->upcoming, (v->nupcoming + 1) * sizeof *v->upcoming);
                v->upcoming[v->nupcoming++].free = v->capacity;
            }
        }
    }
    size_t nrooms = 0;
    struct fg_sim_node_room *rooms = node_rooms(nodes, pods, &nrooms);
    fg_sim_autoscaler_scale_up(a, views, nviews, rooms, nrooms, pods);
    free(rooms);
    fg_sim_autoscaler_scale_down(a, views, nviews, nodes, pods);
    for (size_t g = 0; g < nviews; g++) {
        json_object_put(views[g].tmpl);
        free(views[g].upcoming);
    }
    json_object_put(daemonsets);
    json_object_put(instances);
    json_object_put(nodes);
    json_object_put(pods);
}

static void autoscaler_free(void *ud)
{
    struct fg_sim_autoscaler *a = ud;
    if (a->told)
        lh_table_free(a->told);
    free(a);
}

enum fg_err fg_sim_autoscaler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg)
{
    struct fg_sim_autoscaler *a = fg_calloc(1, sizeof *a);
    a->cfg = cfg;
    a->client = fg_manager_client(m);
    fg_manager_on_free(m, autoscaler_free, a);
    struct fg_informer_factory *f = fg_manager_informers(m);
    enum fg_err err;
    a->pods.res = &fg_kube_pods;
    a->nodes.res = &fg_kube_nodes;
    a->daemonsets.res = &fg_kube_daemonsets;
    a->instances.res = &fg_kube_configmaps;
    if ((err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods }, &a->pods.inf,
                                       errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_nodes }, &a->nodes.inf,
                                       errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_daemonsets },
                                       &a->daemonsets.inf, errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_configmaps,
                                                                      .ns = FG_SIM_CLOUD_NAMESPACE,
                                                                      .label_selector = FG_SIM_CLOUD_SELECTOR },
                                       &a->instances.inf, errmsg)))
        return err;
    return fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "autoscaler", .leader_only = true,
                                                              .period_ns = cfg->autoscale.scan_ns, .run = scan, .ud = a },
                                   errmsg);
}
