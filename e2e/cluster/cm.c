/* cm — the simulated controller manager's shared informers and helpers; see cm.h. */
#include "e2e/cluster/cm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/event.h"
#include "operator/kube/resource.h"

#define WORKERS 4

static enum fg_err informer(struct fg_sim_cm *cm, const struct fg_kube_resource *res, struct fg_sim_cache *out,
                            char *errmsg)
{
    struct fg_informer_factory *f = fg_manager_informers(cm->m);
    out->res = res;
    enum fg_err err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = res }, &out->inf, errmsg);
    if (!err)
        err = fg_informer_factory_index(f, out->inf, FG_SIM_INDEX_CONTROLLER, fg_sim_index_controller, NULL);
    if (!err)
        err = fg_informer_factory_index(f, out->inf, FG_SIM_INDEX_OWNERS, fg_sim_index_owners, NULL);
    if (!err)
        err = fg_informer_factory_decode(f, out->inf, fg_sim_meta_decode, NULL, sizeof(struct fg_sim_meta));
    if (err && !errmsg[0])
        fg_errmsg(errmsg, err, "cannot index %s", res->plural);
    return err;
}

enum fg_err fg_sim_cm_setup(struct fg_manager *m, char *errmsg)
{
    struct fg_sim_cm *cm = fg_calloc(1, sizeof *cm);
    fg_manager_on_free(m, free, cm);
    cm->m = m;
    cm->client = fg_manager_client(m);
    cm->workers = WORKERS;
    enum fg_err err;
    if ((err = informer(cm, &fg_kube_pods, &cm->pods, errmsg)) ||
        (err = informer(cm, &fg_kube_replicasets, &cm->replicasets, errmsg)) ||
        (err = informer(cm, &fg_kube_deployments, &cm->deployments, errmsg)) ||
        (err = informer(cm, &fg_kube_statefulsets, &cm->statefulsets, errmsg)) ||
        (err = informer(cm, &fg_kube_daemonsets, &cm->daemonsets, errmsg)) ||
        (err = informer(cm, &fg_kube_jobs, &cm->jobs, errmsg)) ||
        (err = informer(cm, &fg_kube_nodes, &cm->nodes, errmsg)) ||
        (err = informer(cm, &fg_kube_services, &cm->services, errmsg)) ||
        (err = informer(cm, &fg_kube_endpointslices, &cm->slices, errmsg)))
        return err;
    if ((err = fg_sim_replicaset_setup(cm, errmsg)) || (err = fg_sim_deployment_setup(cm, errmsg)) ||
        (err = fg_sim_statefulset_setup(cm, errmsg)) || (err = fg_sim_daemonset_setup(cm, errmsg)) ||
        (err = fg_sim_job_setup(cm, errmsg)) || (err = fg_sim_gc_setup(cm, errmsg)) ||
        (err = fg_sim_podgc_setup(cm, errmsg)) || (err = fg_sim_endpointslice_setup(cm, errmsg)))
        return err;
    return FG_OK;
}

static json_object *parse(struct fg_kobj *o)
{
    json_object *obj = NULL;
    return fg_kobj_parse(o, &obj, NULL) == FG_OK ? obj : NULL;
}

/* A private tree of o with apiVersion and kind set from res. */
static json_object *typed(const struct fg_kube_resource *res, struct fg_kobj *o)
{
    json_object *obj = parse(o);
    if (!obj)
        return NULL;
    char api_version[128];
    snprintf(api_version, sizeof api_version, "%s%s%s", res->group, res->group[0] ? "/" : "", res->version);
    fg_json_set_str(obj, "apiVersion", api_version);
    fg_json_set_str(obj, "kind", res->kind);
    return obj;
}

json_object *fg_sim_cm_get(const struct fg_sim_cache *c, const char *key)
{
    struct fg_kobj *o = fg_store_get(fg_informer_store(c->inf), key);
    if (!o)
        return NULL;
    json_object *obj = typed(c->res, o);
    fg_kobj_unref(o);
    return obj;
}

static json_object *to_array(const struct fg_sim_cache *c, struct fg_kobj_list *l)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < l->n; i++) {
        json_object *obj = typed(c->res, l->items[i]);
        if (obj)
            json_object_array_add(arr, obj);
    }
    fg_kobj_list_cleanup(l);
    return arr;
}

json_object *fg_sim_cm_by_owner(const struct fg_sim_cache *c, const char *index, const char *uid)
{
    struct fg_kobj_list l = { 0 };
    if (uid && fg_store_by_index(fg_informer_store(c->inf), index, uid, &l) != FG_OK)
        fg_kobj_list_cleanup(&l);
    return to_array(c, &l);
}

json_object *fg_sim_cm_list(const struct fg_sim_cache *c)
{
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(c->inf), &l);
    return to_array(c, &l);
}

void fg_sim_cm_map_controller(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    const struct fg_sim_meta *m = fg_sim_meta(obj);
    if (m->controller_name[0] && !strcmp(m->controller_kind, ud)) {
        char *key = fg_kobj_make_key(fg_kobj_namespace(obj), m->controller_name);
        fg_keys_add(out, key);
        free(key);
    }
}

enum fg_err fg_sim_cm_controller(struct fg_sim_cm *cm, const char *name, fg_reconcile_fn *fn, void *ud,
                                 const struct fg_sim_cache *primary, struct fg_manager_controller **out,
                                 char *errmsg)
{
    struct fg_controller_spec spec = { .name = name, .kind = primary->res->kind, .workers = cm->workers,
                                       .reconcile = fn, .ud = ud, .primary = primary->inf };
    return fg_manager_controller(cm->m, &spec, out, errmsg);
}

/* How long a controller's own creation or deletion waits for the pods' cache to show it before
 * it is forgotten (kube's controller expectations wait five minutes). */
#define ASSUMED_TTL_NS (60 * FG_NS_PER_S)

static void pod_owner_free(void *ud)
{
    struct fg_sim_pod_owner *po = ud;
    fg_sim_assumed_free(po->assumed);
    free(po);
}

enum fg_err fg_sim_cm_pod_owner_controller(struct fg_sim_cm *cm, const char *name, fg_reconcile_fn *fn,
                                           const struct fg_sim_cache *primary, struct fg_manager_controller **out,
                                           char *errmsg)
{
    struct fg_sim_pod_owner *po = fg_calloc(1, sizeof *po);
    po->cm = cm;
    po->assumed = fg_sim_assumed_new(ASSUMED_TTL_NS);
    fg_manager_on_free(cm->m, pod_owner_free, po);
    enum fg_err err = fg_sim_cm_controller(cm, name, fn, po, primary, out, errmsg);
    if (!err)
        err = fg_manager_watches(*out, cm->pods.inf, fg_sim_cm_map_controller, (void *)primary->res->kind, NULL, errmsg);
    return err;
}

enum fg_err fg_sim_cm_create_pods(struct fg_sim_pod_owner *po, const char *component, json_object *obj, const char *key,
                                  int64_t n)
{
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    char *generate = fg_asprintf("%s-", fg_json_get_str(obj, "metadata", "name", NULL));
    enum fg_err err = FG_OK;
    for (int64_t i = 0; i < n && !err; i++) {
        json_object *pod = fg_sim_pod_from_template(fg_json_get(obj, "spec", "template", NULL), ns, NULL, generate, obj,
                                                    NULL);
        err = fg_sim_cm_create_pod(po->cm, component, obj, pod, po->assumed, key);
        json_object_put(pod);
    }
    free(generate);
    return err;
}

void fg_sim_cm_event(struct fg_sim_cm *cm, const char *component, json_object *obj, const char *type,
                     const char *reason, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    struct fg_kube_event ev = { type, reason, message, component, NULL };
    enum fg_err err = fg_kube_event_emit(cm->client, obj, &ev);
    if (err)
        fg_log(FG_LOG_DEBUG, component, "event %s not written: %s", reason, fg_err_str(err));
}

enum fg_err fg_sim_cm_create_pod(struct fg_sim_cm *cm, const char *component, json_object *owner, json_object *pod,
                                 struct fg_sim_assumed *assumed, const char *assume_key)
{
    char *path = fg_kube_path(&fg_kube_pods, fg_json_get_str(pod, "metadata", "namespace", NULL), NULL, NULL, NULL);
    json_object *created = NULL;
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(cm->client, path, pod, &created, &st);
    if (!err) {
        fg_sim_assumed_add(assumed, assume_key, fg_json_get_str(created, "metadata", "uid", NULL), false);
        fg_sim_cm_event(cm, component, owner, "Normal", "SuccessfulCreate", "Created pod: %s",
                        fg_json_get_str(created, "metadata", "name", NULL));
    } else {
        fg_sim_cm_event(cm, component, owner, "Warning", "FailedCreate", "Error creating: %s",
                        st.message ? st.message : fg_err_str(err));
    }
    fg_kube_status_cleanup(&st);
    json_object_put(created);
    free(path);
    return err;
}

enum fg_err fg_sim_cm_delete_pod(struct fg_sim_cm *cm, const char *component, json_object *owner, json_object *pod,
                                 const char *propagation, struct fg_sim_assumed *assumed, const char *assume_key)
{
    enum fg_err err = fg_sim_delete(cm->client, &fg_kube_pods, pod, propagation);
    if (err)
        return err;
    if (assumed)
        fg_sim_assumed_add(assumed, assume_key, fg_json_get_str(pod, "metadata", "uid", NULL), true);
    fg_sim_cm_event(cm, component, owner, "Normal", "SuccessfulDelete", "Deleted pod: %s",
                    fg_json_get_str(pod, "metadata", "name", NULL));
    return FG_OK;
}

