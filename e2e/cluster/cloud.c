/* cloud — the simulated cloud's instances as ConfigMaps; see cloud.h. */
#include "e2e/cluster/cloud.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/resource.h"

#define PREFIX "sim-instance-"

static void random_suffix(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char raw[5];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        for (size_t i = 0; i < sizeof raw; i++)
            raw[i] = (unsigned char)rand();
    for (size_t i = 0; i < sizeof raw; i++)
        out[i] = alphabet[raw[i] % (sizeof alphabet - 1)];
    out[5] = '\0';
}

enum fg_err fg_sim_cloud_launch(struct fg_kube_client *c, const char *group, char *node, char *errmsg)
{
    char *path = fg_kube_path(&fg_kube_configmaps, FG_SIM_CLOUD_NAMESPACE, NULL, NULL, NULL);
    enum fg_err err = FG_E_KUBE_ALREADY_EXISTS;
    for (int attempt = 0; attempt < 5 && err == FG_E_KUBE_ALREADY_EXISTS; attempt++) {
        char suffix[6];
        random_suffix(suffix);
        snprintf(node, FG_SIM_NODE_NAME_MAX, "%.80s-%s", group, suffix);
        json_object *cm = json_object_new_object();
        fg_json_set_str(cm, "apiVersion", "v1");
        fg_json_set_str(cm, "kind", "ConfigMap");
        json_object *meta = fg_json_ensure_obj(cm, "metadata");
        char name[FG_SIM_NODE_NAME_MAX + sizeof PREFIX];
        snprintf(name, sizeof name, PREFIX "%s", node);
        fg_json_set_str(meta, "name", name);
        fg_json_set_str(meta, "namespace", FG_SIM_CLOUD_NAMESPACE);
        json_object *labels = fg_json_ensure_obj(meta, "labels");
        fg_json_set_str(labels, "sim.fracgpu.io/instance", "true");
        fg_json_set_str(labels, FG_SIM_LABEL_GROUP, group);
        json_object *data = fg_json_ensure_obj(cm, "data");
        fg_json_set_str(data, "group", group);
        fg_json_set_str(data, "node", node);
        struct fg_kube_status st = { 0 };
        err = fg_kube_create(c, path, cm, NULL, &st);
        if (err && err != FG_E_KUBE_ALREADY_EXISTS)
            fg_errmsg(errmsg, err, "cannot launch an instance of %s: %s", group, st.message ? st.message : fg_err_str(err));
        fg_kube_status_cleanup(&st);
        json_object_put(cm);
    }
    free(path);
    return err;
}

enum fg_err fg_sim_cloud_terminate(struct fg_kube_client *c, const char *node, char *errmsg)
{
    char name[FG_SIM_NODE_NAME_MAX + sizeof PREFIX];
    snprintf(name, sizeof name, PREFIX "%s", node);
    char *path = fg_kube_path(&fg_kube_configmaps, FG_SIM_CLOUD_NAMESPACE, name, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_delete(c, path, NULL, NULL, &st);
    if (err == FG_E_KUBE_NOT_FOUND)
        err = FG_OK;
    else if (err)
        fg_errmsg(errmsg, err, "cannot terminate the instance of %s: %s", node, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    return err;
}

const char *fg_sim_cloud_node(json_object *instance)
{
    return fg_str_eq(fg_json_get_str(instance, "metadata", "labels", "sim.fracgpu.io/instance", NULL), "true")
               ? fg_json_get_str(instance, "data", "node", NULL)
               : NULL;
}

const char *fg_sim_cloud_group(json_object *instance)
{
    return fg_sim_cloud_node(instance) ? fg_json_get_str(instance, "data", "group", NULL) : NULL;
}

long fg_sim_cloud_count(struct fg_kube_client *c, const char *group)
{
    char selector[256];
    snprintf(selector, sizeof selector, "%s,%s=%s", FG_SIM_CLOUD_SELECTOR, FG_SIM_LABEL_GROUP, group);
    struct fg_buf q;
    fg_buf_init(&q, 0);
    if (fg_kube_query_add(&q, "labelSelector", selector) != FG_OK) {
        fg_buf_cleanup(&q);
        return -1;
    }
    char *path = fg_kube_path(&fg_kube_configmaps, FG_SIM_CLOUD_NAMESPACE, NULL, NULL, fg_buf_str(&q));
    fg_buf_cleanup(&q);
    json_object *list = NULL;
    long n = fg_kube_get(c, path, &list, NULL) == FG_OK ? (long)fg_json_array_len(fg_json_get(list, "items", NULL)) : -1;
    json_object_put(list);
    free(path);
    return n;
}

json_object *fg_sim_cloud_node_labels(const struct fg_sim_group *g, const char *node)
{
    json_object *labels = NULL;
    json_object_deep_copy(g->labels, &labels, NULL);
    if (!labels)
        labels = json_object_new_object();
    fg_json_set_str(labels, "kubernetes.io/hostname", node);
    fg_json_set_str(labels, "kubernetes.io/os", "linux");
    fg_json_set_str(labels, "kubernetes.io/arch", "amd64");
    fg_json_set_str(labels, "beta.kubernetes.io/os", "linux");
    fg_json_set_str(labels, "beta.kubernetes.io/arch", "amd64");
    fg_json_set_str(labels, "node.kubernetes.io/instance-type", g->name);
    fg_json_set_str(labels, FG_SIM_LABEL_GROUP, g->name);
    return labels;
}

json_object *fg_sim_cloud_node_shape(const struct fg_sim_group *g, const char *name)
{
    json_object *n = json_object_new_object();
    json_object *meta = fg_json_ensure_obj(n, "metadata");
    fg_json_set_str(meta, "name", name);
    json_object_object_add(meta, "labels", fg_sim_cloud_node_labels(g, name));
    json_object_object_add(fg_json_ensure_obj(n, "spec"), "taints", json_object_get(g->taints));
    return n;
}
