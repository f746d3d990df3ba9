/*
 * store_bind — the pods/binding subresource, as the scheduler uses it.
 *
 * POST .../pods/NAME/binding with a Binding {target: {name: NODE}, metadata: {annotations}} sets
 * spec.nodeName, sets the PodScheduled condition to True and copies the binding's annotations onto
 * the pod, in one new revision; a pod that already has a node gets 409 Conflict. The reply is a
 * Success Status with code 201, as kube-apiserver sends.
 */
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/status.h"
#include "e2e/apiserver/store.h"
#include "e2e/apiserver/store_int.h"

/* A private shallow copy of obj[key] (a new {} when absent), attached to obj. */
static json_object *own_child(json_object *obj, const char *key)
{
    json_object *child = fg_json_get(obj, key, NULL);
    child = json_object_is_type(child, json_type_object) ? fg__json_shallow_dup(child) : json_object_new_object();
    json_object_object_add(obj, key, child);
    return child;
}

static void set_scheduled(json_object *status)
{
    json_object *old = fg_json_get(status, "conditions", NULL);
    json_object *conditions = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(old); i++) {
        json_object *c = json_object_array_get_idx(old, i);
        if (!fg_str_eq(fg_json_get_str(c, "type", NULL), "PodScheduled"))
            json_object_array_add(conditions, json_object_get(c));
    }
    json_object *c = json_object_new_object();
    fg_json_set_str(c, "type", "PodScheduled");
    fg_json_set_str(c, "status", "True");
    fg__write_set_now(c, "lastTransitionTime");
    json_object_array_add(conditions, c);
    json_object_object_add(status, "conditions", conditions);
}

enum fg_err fg__store_bind(struct fg__store *st, const struct fg__type *pods, const char *ns, const char *name,
                           json_object *binding, json_object **out)
{
    const char *node = fg_json_get_str(binding, "target", "name", NULL);
    if (!node || !*node)
        return fg__write_invalid(out, pods, name, "target.name", "FieldValueRequired",
                                 "Required value: a binding needs target.name");
    const struct fg__entry *cur = fg__store_get(st, pods, ns, name);
    if (!cur)
        return fg__write_not_found(out, pods, name);
    const char *bound = fg_json_get_str(cur->obj, "spec", "nodeName", NULL);
    if (bound && *bound)
        return fg__write_fail(out, FG_E_KUBE_CONFLICT, pods, name, NULL,
                              "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is already assigned to "
                              "node \"%s\"", name, name, bound);
    json_object *obj = fg__json_shallow_dup(cur->obj);
    json_object *meta = own_child(obj, "metadata");
    fg_json_set_str(own_child(obj, "spec"), "nodeName", node);
    set_scheduled(own_child(obj, "status"));
    json_object *annotations = fg_json_get(binding, "metadata", "annotations", NULL);
    if (json_object_is_type(annotations, json_type_object)) {
        json_object *pod_annotations = own_child(meta, "annotations");
        json_object_object_foreach(annotations, key, value)
            json_object_object_add(pod_annotations, key, json_object_get(value));
    }
    json_object_object_del(meta, "resourceVersion"); /* no precondition: the node check above is the guard */
    json_object *stored = NULL;
    enum fg_err err = fg__write_commit(st, pods, cur->obj, obj, FG__SCOPE_ALL, &stored);
    if (err) {
        *out = stored;
        return err;
    }
    json_object_put(stored);
    *out = fg__status_success(201);
    return FG_OK;
}
