/*
 * autoscaler_down — scale-down of empty nodes. A node of a group above minSize that holds no pod
 * but DaemonSet and mirror pods (finished pods aside) for scaleDownUnneeded, when no scale-up
 * happened within scaleDownDelayAfterAdd and no pod on it is annotated
 * cluster-autoscaler.kubernetes.io/safe-to-evict: "false", is tainted
 * ToBeDeletedByClusterAutoscaler:NoSchedule, gets an Event ScaleDownEmpty, and its instance is
 * terminated (the kubelet then removes the Node).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/autoscaler.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/objects.h"
#include "operator/kube/event.h"
#include "operator/kube/resource.h"
#include "operator/kube/resources.h"

static bool blocks_emptiness(json_object *pod)
{
    if (fg_sim_pod_finished(pod))
        return false;
    json_object *ref = fg_sim_controller_ref(pod);
    return !fg_str_eq(fg_json_get_str(ref, "kind", NULL), "DaemonSet") &&
           !fg_json_get_str(pod, "metadata", "annotations", "kubernetes.io/config.mirror", NULL);
}

static int64_t *unneeded_since(struct fg_sim_autoscaler *a, const char *node, int64_t now, bool add)
{
    for (size_t i = 0; i < a->nunneeded; i++)
        if (!strcmp(a->unneeded[i].node, node))
            return &a->unneeded[i].since_ms;
    if (!add || a->nunneeded == FG_SIM_AUTOSCALER_MAX_TRACKED)
        return NULL;
    struct fg_sim_unneeded *u = &a->unneeded[a->nunneeded++];
    snprintf(u->node, sizeof u->node, "%s", node);
    u->since_ms = now;
    return &u->since_ms;
}

static void forget_unneeded(struct fg_sim_autoscaler *a, const char *node)
{
    for (size_t i = 0; i < a->nunneeded; i++)
        if (!strcmp(a->unneeded[i].node, node))
            a->unneeded[i] = a->unneeded[--a->nunneeded];
}

/* Forgets the nodes that are gone, whoever removed them. */
static void forget_gone(struct fg_sim_autoscaler *a, json_object *nodes)
{
    for (size_t i = 0; i < a->nunneeded;) {
        bool there = false;
        for (size_t n = 0; n < fg_json_array_len(nodes) && !there; n++)
            there = fg_str_eq(fg_json_get_str(json_object_array_get_idx(nodes, n), "metadata", "name", NULL),
                              a->unneeded[i].node);
        if (there)
            i++;
        else
            a->unneeded[i] = a->unneeded[--a->nunneeded];
    }
}

/* Taints node ToBeDeletedByClusterAutoscaler:NoSchedule, unless an earlier try did. */
static enum fg_err taint_to_be_deleted(struct fg_sim_autoscaler *a, json_object *node)
{
    json_object *taints = json_object_new_array(), *old = fg_json_get(node, "spec", "taints", NULL);
    for (size_t i = 0; i < fg_json_array_len(old); i++) {
        json_object *t = json_object_array_get_idx(old, i);
        if (fg_str_eq(fg_json_get_str(t, "key", NULL), FG_SIM_TO_BE_DELETED)) {
            json_object_put(taints);
            return FG_OK;
        }
        json_object_array_add(taints, json_object_get(t));
    }
    json_object *t = json_object_new_object();
    char value[32];
    snprintf(value, sizeof value, "%lld", (long long)time(NULL));
    fg_json_set_str(t, "key", FG_SIM_TO_BE_DELETED);
    fg_json_set_str(t, "value", value);
    fg_json_set_str(t, "effect", "NoSchedule");
    json_object_array_add(taints, t);
    json_object *patch = json_object_new_object();
    json_object_object_add(fg_json_ensure_obj(patch, "spec"), "taints", taints);
    char *path = fg_kube_path(&fg_kube_nodes, NULL, fg_json_get_str(node, "metadata", "name", NULL), NULL, NULL);
    enum fg_err err = fg_kube_patch(a->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, NULL);
    free(path);
    json_object_put(patch);
    return err;
}

void fg_sim_autoscaler_scale_down(struct fg_sim_autoscaler *a, struct fg_sim_group_view *views, size_t nviews,
                                  json_object *nodes, json_object *pods)
{
    forget_gone(a, nodes);
    int64_t now = fg_clock_wall_ms();
    bool cooling = now - a->last_scale_up_ms < (int64_t)(a->cfg->autoscale.scale_down_delay_after_add_ns / FG_NS_PER_MS);
    for (size_t i = 0; i < fg_json_array_len(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        const char *name = fg_json_get_str(node, "metadata", "name", NULL);
        const char *group = fg_json_get_str(node, "metadata", "labels", FG_SIM_LABEL_GROUP, NULL);
        struct fg_sim_group_view *v = NULL;
        for (size_t g = 0; g < nviews && !v; g++)
            if (fg_str_eq(views[g].g->name, group))
                v = &views[g];
        bool empty = v != NULL, protected = false;
        for (size_t p = 0; p < fg_json_array_len(pods) && empty; p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            if (!fg_str_eq(fg_json_get_str(pod, "spec", "nodeName", NULL), name))
                continue;
            empty = !blocks_emptiness(pod);
            protected = protected || fg_str_eq(fg_json_get_str(pod, "metadata", "annotations", FG_SIM_SAFE_TO_EVICT, NULL), "false");
        }
        if (!empty || protected) {
            forget_unneeded(a, name);
            continue;
        }
        int64_t *since = unneeded_since(a, name, now, true);
        if (!since || cooling || v->size <= (long)v->g->min_size ||
            now - *since < (int64_t)(a->cfg->autoscale.scale_down_unneeded_ns / FG_NS_PER_MS))
            continue;
        char errmsg[FG_ERRMSG_MAX], msg[256];
        if (taint_to_be_deleted(a, node) != FG_OK)
            continue;
        snprintf(msg, sizeof msg, "Scale-down: removing empty node %s", name);
        fg_log(FG_LOG_INFO, FG_SIM_AUTOSCALER_NAME, "scale-down: group %s %ld->%ld, removing empty node %s", v->g->name, v->size,
               v->size - 1, name);
        fg_sim_autoscaler_event(a, node, "Node", "Normal", "ScaleDownEmpty", msg);
        if (fg_sim_cloud_terminate(a->client, name, errmsg) != FG_OK) {
            fg_log(FG_LOG_WARN, FG_SIM_AUTOSCALER_NAME, "%s", errmsg);
            continue;
        }
        v->size--;
        forget_unneeded(a, name);
    }
}
