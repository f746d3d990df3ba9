/* transform — trimming objects before they are cached; see transform.h. */
#include "transform.h"

#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

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

/* ---- pruning in place: the same result as fg_transform_keep, without building a new tree ---- */

/* A path list compiled into a tree of segments. */
struct prune_node {
    char key[MAX_SEGMENT];
    bool each;                  /* "key[]": apply the children to every element of an array */
    bool whole;                 /* a path ends here: keep the whole value */
    struct prune_node *kids;
    size_t nkids;
};

static struct prune_node *prune_child(struct prune_node *n, const char *seg, size_t len)
{
    bool each = len >= 2 && seg[len - 2] == '[' && seg[len - 1] == ']';
    size_t key_len = each ? len - 2 : len;
    if (key_len == 0 || key_len >= MAX_SEGMENT)
        return NULL;
    for (size_t i = 0; i < n->nkids; i++)
        if (n->kids[i].each == each && strlen(n->kids[i].key) == key_len && !memcmp(n->kids[i].key, seg, key_len))
            return &n->kids[i];
    n->kids = fg_realloc(n->kids, (n->nkids + 1) * sizeof *n->kids);
    struct prune_node *c = &n->kids[n->nkids++];
    memset(c, 0, sizeof *c);
    memcpy(c->key, seg, key_len);
    c->each = each;
    return c;
}

static void prune_compile(struct prune_node *root, const char *const *paths)
{
    memset(root, 0, sizeof *root);
    for (size_t i = 0; paths[i]; i++) {
        struct prune_node *n = root;
        for (const char *seg = paths[i]; n && *seg;) {
            const char *dot = strchr(seg, '.');
            size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
            n = prune_child(n, seg, len);
            if (n && !dot)
                n->whole = true;
            seg = dot ? dot + 1 : seg + len;
        }
    }
}

static void prune(const struct prune_node *n, json_object *obj);

/* Prunes each element of an array as an object below c; other elements become null, as keep does. */
static void prune_each(const struct prune_node *c, json_object *arr)
{
    size_t len = json_object_array_length(arr);
    for (size_t i = 0; i < len; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (c->whole)
            continue;
        if (json_object_is_type(e, json_type_object))
            prune(c, e);
        else
            json_object_array_put_idx(arr, i, NULL);
    }
}

/* Deletes from obj every member no path of n reaches. */
static void prune(const struct prune_node *n, json_object *obj)
{
    const char *stack[32], **doomed = stack;   /* keys stay valid until their member is deleted */
    size_t ndoomed = 0, cap = sizeof stack / sizeof stack[0];
    json_object_object_foreach(obj, key, val) {
        const struct prune_node *c = NULL;
        for (size_t i = 0; i < n->nkids && !c; i++)
            if (!strcmp(n->kids[i].key, key))
                c = &n->kids[i];
        bool keep = c && (c->each ? json_object_is_type(val, json_type_array)
                                  : c->whole || json_object_is_type(val, json_type_object));
        if (keep && c->each)
            prune_each(c, val);
        else if (keep && !c->whole)
            prune(c, val);
        if (!keep) {
            if (ndoomed == cap) {
                cap *= 2;
                doomed = doomed == stack ? memcpy(fg_malloc(cap * sizeof *doomed), stack, sizeof stack)
                                         : fg_realloc(doomed, cap * sizeof *doomed);
            }
            doomed[ndoomed++] = key;
        }
    }
    for (size_t i = 0; i < ndoomed; i++)   /* never while iterating: json-c frees the entry */
        json_object_object_del(obj, doomed[i]);
    if (doomed != stack)
        free(doomed);
}

static struct prune_node pod_tree;
static pthread_once_t pod_tree_once = PTHREAD_ONCE_INIT;

static void compile_pod_tree(void)
{
    prune_compile(&pod_tree, fg_transform_pod_paths);
}

json_object *fg_transform_pod(void *ud, json_object *obj)
{
    if (!json_object_is_type(obj, json_type_object))
        return NULL;
    pthread_once(&pod_tree_once, compile_pod_tree);
    json_object *stripped = fg_transform_strip(ud, obj);
    prune(&pod_tree, stripped);
    return stripped;
}
