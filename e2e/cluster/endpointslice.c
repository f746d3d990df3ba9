/*
 * endpointslice — the EndpointSlice controller: a Service with a selector gets slices listing its
 * pods' addresses and ports, which is how clients (the test API server calling a webhook Service,
 * for one) find a Service's backends.
 *
 * A pod belongs when it is in the Service's namespace, its labels carry every selector label, it has
 * an IP, and it has not finished. Each endpoint carries the pod's IP, node and a targetRef, and the
 * conditions ready (Ready and not terminating), serving (Ready) and terminating. A named targetPort
 * is looked up among each pod's container ports, so pods may differ; endpoints are grouped by the
 * resolved ports, one slice per group, named `<service>-<hash of the ports>`, labelled
 * kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by, owned by the Service.
 * Slices that no longer describe anything are deleted. Services without a selector are left to
 * whoever writes their slices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/cm.h"

#define MANAGED_BY "endpointslice-controller.k8s.io"

static bool selects(json_object *selector, json_object *pod)
{
    if (fg_json_object_len(selector) == 0)
        return false;
    json_object *labels = fg_json_get(pod, "metadata", "labels", NULL);
    json_object_object_foreach(selector, k, v) {
        if (!fg_str_eq(fg_json_get_str(labels, k, NULL), json_object_get_string(v)))
            return false;
    }
    return true;
}

/* The container port of pod named `name`, or 0. */
static int64_t named_port(json_object *pod, const char *name)
{
    json_object *containers = fg_json_get(pod, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(containers); i++) {
        json_object *ports = fg_json_get(json_object_array_get_idx(containers, i), "ports", NULL);
        for (size_t j = 0; j < fg_json_array_len(ports); j++) {
            json_object *p = json_object_array_get_idx(ports, j);
            int64_t n = 0;
            if (fg_str_eq(fg_json_get_str(p, "name", NULL), name) && fg_json_get_int64(p, &n, "containerPort", NULL))
                return n;
        }
    }
    return 0;
}

/* The slice's ports for pod (a new array), or NULL when a named port is missing on it. */
static json_object *resolve_ports(json_object *svc, json_object *pod)
{
    json_object *ports = fg_json_get(svc, "spec", "ports", NULL), *out = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(ports); i++) {
        json_object *sp = json_object_array_get_idx(ports, i), *target = fg_json_get(sp, "targetPort", NULL);
        int64_t port = 0;
        if (json_object_is_type(target, json_type_string))
            port = named_port(pod, json_object_get_string(target));
        else if (!fg_json_get_int64(sp, &port, "targetPort", NULL))
            fg_json_get_int64(sp, &port, "port", NULL);
        if (port <= 0) {
            json_object_put(out);
            return NULL;
        }
        json_object *p = json_object_new_object();
        fg_json_set_str(p, "name", fg_json_get_str(sp, "name", NULL) ? fg_json_get_str(sp, "name", NULL) : "");
        fg_json_set_str(p, "protocol", fg_json_get_str(sp, "protocol", NULL) ? fg_json_get_str(sp, "protocol", NULL) : "TCP");
        json_object_object_add(p, "port", json_object_new_int64(port));
        json_object_array_add(out, p);
    }
    return out;
}

static json_object *endpoint(json_object *pod)
{
    json_object *e = json_object_new_object(), *addrs = json_object_new_array();
    json_object_array_add(addrs, json_object_new_string(fg_json_get_str(pod, "status", "podIP", NULL)));
    json_object_object_add(e, "addresses", addrs);
    bool ready = fg_sim_pod_ready(pod), terminating = fg_sim_pod_terminating(pod);
    json_object *cond = json_object_new_object();
    json_object_object_add(cond, "ready", json_object_new_boolean(ready && !terminating));
    json_object_object_add(cond, "serving", json_object_new_boolean(ready));
    json_object_object_add(cond, "terminating", json_object_new_boolean(terminating));
    json_object_object_add(e, "conditions", cond);
    const char *node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    if (node)
        fg_json_set_str(e, "nodeName", node);
    json_object *ref = json_object_new_object();
    fg_json_set_str(ref, "kind", "Pod");
    fg_json_set_str(ref, "namespace", fg_json_get_str(pod, "metadata", "namespace", NULL));
    fg_json_set_str(ref, "name", fg_json_get_str(pod, "metadata", "name", NULL));
    fg_json_set_str(ref, "uid", fg_json_get_str(pod, "metadata", "uid", NULL));
    json_object_object_add(e, "targetRef", ref);
    return e;
}

/* The desired slices of svc, keyed by name (a new object: name → slice). */
static json_object *desired_slices(struct fg_sim_cm *cm, json_object *svc)
{
    json_object *slices = json_object_new_object();
    json_object *selector = fg_json_get(svc, "spec", "selector", NULL);
    const char *ns = fg_json_get_str(svc, "metadata", "namespace", NULL);
    const char *sname = fg_json_get_str(svc, "metadata", "name", NULL);
    json_object *pods = fg_sim_cm_list(&cm->pods);
    for (size_t i = 0; i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        if (!fg_str_eq(fg_json_get_str(pod, "metadata", "namespace", NULL), ns) || !selects(selector, pod) ||
            !fg_json_get_str(pod, "status", "podIP", NULL) || fg_sim_pod_finished(pod))
            continue;
        json_object *ports = resolve_ports(svc, pod);
        if (!ports)
            continue;
        char hash[16], name[320];
        fg_sim_template_hash(ports, 0, hash);
        snprintf(name, sizeof name, "%.240s-%s", sname, hash);
        json_object *slice = fg_json_get(slices, name, NULL);
        if (!slice) {
            slice = json_object_new_object();
            fg_json_set_str(slice, "apiVersion", "discovery.k8s.io/v1");
            fg_json_set_str(slice, "kind", "EndpointSlice");
            json_object *meta = fg_json_ensure_obj(slice, "metadata");
            fg_json_set_str(meta, "name", name);
            fg_json_set_str(meta, "namespace", ns);
            json_object *labels = fg_json_ensure_obj(meta, "labels");
            fg_json_set_str(labels, "kubernetes.io/service-name", sname);
            fg_json_set_str(labels, "endpointslice.kubernetes.io/managed-by", MANAGED_BY);
            json_object *refs = json_object_new_array();
            json_object_array_add(refs, fg_sim_owner_ref(svc));
            json_object_object_add(meta, "ownerReferences", refs);
            fg_json_set_str(slice, "addressType", "IPv4");
            json_object_object_add(slice, "ports", json_object_get(ports));
            json_object_object_add(slice, "endpoints", json_object_new_array());
            json_object_object_add(slices, name, slice);
        }
        json_object_array_add(fg_json_get(slice, "endpoints", NULL), endpoint(pod));
        json_object_put(ports);
    }
    json_object_put(pods);
    return slices;
}

static bool same_content(json_object *want, json_object *have)
{
    return json_object_equal(fg_json_get(want, "endpoints", NULL), fg_json_get(have, "endpoints", NULL)) &&
           json_object_equal(fg_json_get(want, "ports", NULL), fg_json_get(have, "ports", NULL));
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_cm *cm = ud;
    json_object *svc = fg_sim_cm_get(&cm->services, key);
    if (!svc || !fg_json_object_len(fg_json_get(svc, "spec", "selector", NULL))) {
        json_object_put(svc);
        return fg_reconcile_ok();   /* gone (its slices go with it) or managed by someone else */
    }
    json_object *want = desired_slices(cm, svc);
    json_object *have = fg_sim_cm_by_owner(&cm->slices, FG_SIM_INDEX_CONTROLLER, fg_json_get_str(svc, "metadata", "uid", NULL));
    enum fg_err err = FG_OK;
    const char *ns = fg_json_get_str(svc, "metadata", "namespace", NULL);
    for (size_t i = 0; i < json_object_array_length(have) && !err; i++) {
        json_object *h = json_object_array_get_idx(have, i);
        const char *name = fg_json_get_str(h, "metadata", "name", NULL);
        json_object *w = fg_json_get(want, name, NULL);
        if (!w) {
            err = fg_sim_delete(cm->client, &fg_kube_endpointslices, h, NULL);
        } else if (!same_content(w, h)) {   /* unconditional: this controller is the slice's only writer */
            char *path = fg_kube_path(&fg_kube_endpointslices, ns, name, NULL, NULL);
            err = fg_kube_update(cm->client, path, w, NULL, NULL);
            free(path);
        }
        json_object_object_del(want, name);
    }
    json_object_object_foreach(want, name, slice) {
        (void)name;
        if (err)
            break;
        char *path = fg_kube_path(&fg_kube_endpointslices, ns, NULL, NULL, NULL);
        err = fg_kube_create(cm->client, path, slice, NULL, NULL);
        free(path);
        if (err == FG_E_KUBE_ALREADY_EXISTS)
            err = FG_E_BUSY;   /* our cache is behind: retried once it has caught up */
    }
    json_object_put(have);
    json_object_put(want);
    json_object_put(svc);
    return fg_reconcile_error(err);
}

/* A pod event re-checks the selector services of its namespace. */
static void map_pod(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct fg_sim_cm *cm = ud;
    json_object *pod = NULL;
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(cm->services.inf), &l);
    for (size_t i = 0; i < l.n; i++) {
        if (strcmp(fg_kobj_namespace(l.items[i]), fg_kobj_namespace(obj)))
            continue;
        if (!pod && fg_kobj_parse(obj, &pod, NULL) != FG_OK)
            break;
        json_object *svc = NULL;
        if (fg_kobj_parse(l.items[i], &svc, NULL) == FG_OK && selects(fg_json_get(svc, "spec", "selector", NULL), pod))
            fg_keys_add(out, fg_kobj_key(l.items[i]));
        json_object_put(svc);
    }
    fg_kobj_list_cleanup(&l);
    json_object_put(pod);
}

enum fg_err fg_sim_endpointslice_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct fg_manager_controller *c;
    enum fg_err err = fg_sim_cm_controller(cm, "endpointslice", reconcile, cm, &cm->services, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, cm->pods.inf, map_pod, cm, NULL, errmsg);
    if (!err)
        err = fg_manager_watches(c, cm->slices.inf, fg_sim_cm_map_controller, (void *)"Service", NULL, errmsg);
    return err;
}
