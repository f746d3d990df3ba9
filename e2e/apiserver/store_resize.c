/*
 * store_resize — the pods/resize subresource (in-place pod resize, Kubernetes 1.33).
 *
 * A PUT or PATCH on .../pods/NAME/resize is computed against the whole pod like any write, and then,
 * as kube-apiserver's resize strategy does, only the containers' resources and resizePolicy are
 * taken from the result, matched by container name; every other change (metadata, other container
 * fields, status, containers added) is dropped without an error. Validation follows kube's
 * ValidatePodResize: only cpu and memory may change (another resource, or resources.claims, is a
 * 422 `spec: Forbidden: only cpu and memory resources are mutable`), and a cpu or memory request or
 * limit may not be removed (422 on spec.containers[i].resources.requests/limits, checked first; kube
 * lists every error where this reports the first). Not checked here:
 * the pod's QoS class (quantities are not parsed, so equal values written differently would look
 * changed), pod-level resources, static and Windows pods. Init containers are not resized.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/store_int.h"

static bool cpu_or_memory(const char *key)
{
    return !strcmp(key, "cpu") || !strcmp(key, "memory");
}

static json_object *container_named(json_object *containers, const char *name)
{
    for (size_t i = 0; i < fg_json_array_len(containers); i++) {
        json_object *c = json_object_array_get_idx(containers, i);
        if (fg_str_eq(fg_json_get_str(c, "name", NULL), name))
            return c;
    }
    return NULL;
}

/* Do two resource lists agree on everything but cpu and memory? */
static bool same_other_resources(json_object *a, json_object *b)
{
    json_object *lists[2] = { a, b };
    for (size_t k = 0; k < 2; k++) {
        if (!lists[k])
            continue;
        if (!json_object_is_type(lists[k], json_type_object))
            return false;
        json_object *other = lists[1 - k];
        json_object_object_foreach(lists[k], key, value) {
            if (!cpu_or_memory(key) && !json_object_equal(value, fg_json_get(other, key, NULL)))
                return false;
        }
    }
    return true;
}

/* The name of a cpu/memory entry of `old` that `new` lacks, or NULL. */
static const char *removed(json_object *old, json_object *new)
{
    if (!json_object_is_type(old, json_type_object))
        return NULL;
    json_object_object_foreach(old, key, value) {
        (void)value;
        if (cpu_or_memory(key) && !fg_json_get(new, key, NULL))
            return key;
    }
    return NULL;
}

/* Checks one container's new resources against its old ones; FG_OK or a 422 in *out. */
static enum fg_err check_container(const struct fg__type *pods, const char *name, size_t index, json_object *old,
                                   json_object *new, json_object **out)
{
    static const char *const lists[] = { "requests", "limits" };
    for (size_t k = 0; k < 2; k++) {
        json_object *o = fg_json_get(old, lists[k], NULL), *n = fg_json_get(new, lists[k], NULL);
        if (removed(o, n)) {
            char field[96], detail[64];
            snprintf(field, sizeof(field), "spec.containers[%zu].resources.%s", index, lists[k]);
            snprintf(detail, sizeof(detail), "Forbidden: resource %s cannot be removed", lists[k]);
            return fg__write_invalid(out, pods, name, field, "FieldValueForbidden", detail);
        }
    }
    for (size_t k = 0; k < 2; k++) {
        if (!same_other_resources(fg_json_get(old, lists[k], NULL), fg_json_get(new, lists[k], NULL)))
            return fg__write_invalid(out, pods, name, "spec", "FieldValueForbidden",
                                     "Forbidden: only cpu and memory resources are mutable");
    }
    if (!json_object_equal(fg_json_get(old, "claims", NULL), fg_json_get(new, "claims", NULL)))
        return fg__write_invalid(out, pods, name, "spec", "FieldValueForbidden",
                                 "Forbidden: only cpu and memory resources are mutable");
    return FG_OK;
}

enum fg_err fg__write_resize(const struct fg__type *pods, json_object *cur, json_object **obj, json_object **out)
{
    const char *name = fg_json_get_str(cur, "metadata", "name", NULL);
    json_object *wanted = fg_json_get(*obj, "spec", "containers", NULL);
    json_object *old = fg_json_get(cur, "spec", "containers", NULL);
    json_object *pod = fg__json_shallow_dup(cur);
    json_object *meta = fg__json_shallow_dup(fg_json_get(cur, "metadata", NULL));
    json_object_object_add(pod, "metadata", meta);
    json_object_object_del(meta, "resourceVersion"); /* checked already by the caller */
    json_object *spec = fg__json_shallow_dup(fg_json_get(cur, "spec", NULL));
    json_object_object_add(pod, "spec", spec);
    json_object *containers = json_object_new_array();
    if (json_object_is_type(old, json_type_array))
        json_object_object_add(spec, "containers", json_object_get(containers));
    enum fg_err err = FG_OK;
    for (size_t i = 0; i < fg_json_array_len(old); i++) {
        json_object *c = json_object_array_get_idx(old, i);
        json_object *w = container_named(wanted, fg_json_get_str(c, "name", NULL));
        if (!w) {
            json_object_array_add(containers, json_object_get(c));
            continue;
        }
        if ((err = check_container(pods, name, i, fg_json_get(c, "resources", NULL), fg_json_get(w, "resources", NULL),
                                   out)) != FG_OK)
            break;
        json_object *nc = fg__json_shallow_dup(c);
        static const char *const taken[] = { "resources", "resizePolicy" };
        for (size_t k = 0; k < 2; k++) {
            json_object *v = fg_json_get(w, taken[k], NULL);
            if (v)
                json_object_object_add(nc, taken[k], json_object_get(v));
            else
                json_object_object_del(nc, taken[k]);
        }
        json_object_array_add(containers, nc);
    }
    json_object_put(containers);
    json_object_put(*obj);
    *obj = NULL;
    if (err) {
        json_object_put(pod);
        return err;
    }
    *obj = pod;
    return FG_OK;
}
