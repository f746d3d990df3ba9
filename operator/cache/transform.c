/* transform — trimming objects before they are cached; see transform.h. */
#include "transform.h"

#include <stdbool.h>
#include <string.h>

#include "base/json.h"

#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"
#define MAX_SEGMENT 128

const char *const fg_transform_pod_paths[] = {
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "metadata.labels",
    "metadata.annotations",
    "metadata.ownerReferences",
    "metadata.deletionTimestamp",
    "spec.nodeName",
    "spec.schedulerName",
    "spec.priority",
    "spec.nodeSelector",
    "spec.affinity",
    "spec.tolerations",
    "spec.containers[].name",
    "spec.containers[].resources",
    "spec.initContainers[].name",
    "spec.initContainers[].resources",
    "spec.schedulingGates",
    "status.phase",
    "status.conditions",
    NULL,
};

json_object *fg_transform_strip(void *ud, json_object *obj)
{
    (void)ud;
    json_object *meta = fg_json_get(obj, "metadata", NULL);
    if (json_object_is_type(meta, json_type_object)) {
        json_object_object_del(meta, "managedFields");
        json_object *ann = fg_json_get(meta, "annotations", NULL);
        if (json_object_is_type(ann, json_type_object))
            json_object_object_del(ann, LAST_APPLIED);
    }
    return json_object_get(obj);
}

static void keep_path(json_object *src, json_object *dst, const char *path);

/* Copies the rest of the path from each element of the array src into the matching element of dst,
 * creating dst's elements as objects on first use. */
static void keep_array(json_object *src, json_object *dst, const char *rest)
{
    size_t n = json_object_array_length(src);
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(src, i);
        if (!rest) {
            json_object_array_put_idx(dst, i, json_object_get(s));
            continue;
        }
        if (!json_object_is_type(s, json_type_object)) {
            if (json_object_array_length(dst) <= i)
                json_object_array_put_idx(dst, i, NULL); /* keep the indexes aligned */
            continue;
        }
        json_object *d = json_object_array_get_idx(dst, i);
        if (!d) {
            d = json_object_new_object();
            json_object_array_put_idx(dst, i, d);
        }
        keep_path(s, d, rest);
    }
}

/* src and dst are objects; path is the remaining dotted path. */
static void keep_path(json_object *src, json_object *dst, const char *path)
{
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    const char *rest = dot ? dot + 1 : NULL;
    bool each = len >= 2 && path[len - 2] == '[' && path[len - 1] == ']';
    size_t key_len = each ? len - 2 : len;
    char key[MAX_SEGMENT];
    if (key_len == 0 || key_len >= sizeof(key))
        return;
    memcpy(key, path, key_len);
    key[key_len] = '\0';

    json_object *s = NULL;
    if (!json_object_object_get_ex(src, key, &s))
        return;
    json_object *d = NULL;
    json_object_object_get_ex(dst, key, &d);
    if (d == s)
        return; /* an earlier path already kept this whole sub-tree */
    if (each) {
        if (!json_object_is_type(s, json_type_array))
            return;
        if (!json_object_is_type(d, json_type_array)) {
            d = json_object_new_array_ext((int)json_object_array_length(s));
            json_object_object_add(dst, key, d);
        }
        keep_array(s, d, rest);
        return;
    }
    if (!rest) {
        json_object_object_add(dst, key, json_object_get(s));
        return;
    }
    if (!json_object_is_type(s, json_type_object))
        return;
    if (!json_object_is_type(d, json_type_object)) {
        d = json_object_new_object();
        json_object_object_add(dst, key, d);
    }
    keep_path(s, d, rest);
}

json_object *fg_transform_keep(json_object *obj, const char *const *paths)
{
    if (!json_object_is_type(obj, json_type_object))
        return NULL;
    json_object *out = json_object_new_object();
    for (size_t i = 0; paths[i]; i++)
        keep_path(obj, out, paths[i]);
    return out;
}

json_object *fg_transform_pod(void *ud, json_object *obj)
{
    json_object *stripped = fg_transform_strip(ud, obj);
    json_object *kept = fg_transform_keep(stripped, fg_transform_pod_paths);
    json_object_put(stripped);
    return kept;
}
