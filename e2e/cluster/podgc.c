/*
 * podgc — the pod garbage collector's orphan rule: a pod bound to a node that no longer exists is
 * force-deleted (grace period 0), as kube-controller-manager's podgc does once a node object is
 * gone (a node removed by the autoscaler, or one that simply vanished). Its controller takes the
 * ReplicaSet or Job from there. A node's deletion re-checks the pods bound to it; every pod event
 * checks that pod. A node missing from the cache is confirmed with a live GET before anything is
 * deleted.
 */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/cm.h"

#define COMPONENT "pod-garbage-collector"
#define INDEX_NODE "spec.nodeName"

static bool node_exists(struct fg_sim_cm *cm, const char *node)
{
    struct fg_kobj *o = fg_store_get(fg_informer_store(cm->nodes.inf), node);
    if (o) {
        fg_kobj_unref(o);
        return true;
    }
    char *path = fg_kube_path(&fg_kube_nodes, NULL, node, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_get(cm->client, path, NULL, &st);
    fg_kube_status_cleanup(&st);
    free(path);
    return err != FG_E_KUBE_NOT_FOUND;
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_cm *cm = ud;
    struct fg_kobj *cached = fg_store_get(fg_informer_store(cm->pods.inf), key);
    bool orphan = cached && fg_sim_meta(cached)->node[0] && !node_exists(cm, fg_sim_meta(cached)->node);
    fg_kobj_unref(cached);
    if (!orphan)
        return fg_reconcile_ok();
    json_object *pod = fg_sim_cm_get(&cm->pods, key);
    const char *node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    enum fg_err err = FG_OK;
    if (node && *node) {
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
                   fg_json_get_str(pod, "metadata", "name", NULL), "force-deleting: its node %s is gone", node);
        err = fg_sim_delete_now(cm->client, &fg_kube_pods, pod);
    }
    json_object_put(pod);
    return fg_reconcile_error(err);
}

/* A pod matters when it is bound (its add, or the update that binds it). */
static bool node_changed(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)ud;
    return strcmp(fg_sim_meta(old)->node, fg_sim_meta(obj)->node) != 0;
}

static void map_node_pods(void *ud, struct fg_kobj *node, struct fg_keys *out)
{
    struct fg_sim_cm *cm = ud;
    struct fg_kobj_list l = { 0 };
    if (fg_store_by_index(fg_informer_store(cm->pods.inf), INDEX_NODE, fg_kobj_name(node), &l) == FG_OK)
        for (size_t i = 0; i < l.n; i++)
            fg_keys_add(out, fg_kobj_key(l.items[i]));
    fg_kobj_list_cleanup(&l);
}

enum fg_err fg_sim_podgc_setup(struct fg_sim_cm *cm, char *errmsg)
{
    enum fg_err err = fg_informer_factory_index(fg_manager_informers(cm->m), cm->pods.inf, INDEX_NODE,
                                                fg_index_by_node_name, NULL);
    if (err)
        return fg_errmsg(errmsg, err, "cannot index pods by node");
    struct fg_controller_spec spec = { .name = "podgc", .kind = "Pod", .workers = cm->workers, .reconcile = reconcile,
                                       .ud = cm, .primary = cm->pods.inf, .primary_pred = node_changed };
    struct fg_manager_controller *c;
    err = fg_manager_controller(cm->m, &spec, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, cm->nodes.inf, map_node_pods, cm, NULL, errmsg);
    return err;
}
