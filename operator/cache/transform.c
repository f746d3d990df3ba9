/* transform — trimming objects before they are cached; see transform.h. */
#include "transform.h"

#include <stdbool.h>
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

/* ---- pruning in place: the same result as fg_transform_keep, without building a new tree ---- */

/* A path list compiled into a tree of segments; the root is the field set. */
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
        /* A key may have two nodes, "key" and "key[]" (from different paths): a path that keeps the
         * whole value wins, else the one that fits the value's type. */
        const struct prune_node *plain = NULL, *each = NULL;
        for (size_t i = 0; i < n->nkids; i++)
            if (!strcmp(n->kids[i].key, key)) {
                if (n->kids[i].each)
                    each = &n->kids[i];
                else
                    plain = &n->kids[i];
            }
        bool keep = true;
        if (plain && plain->whole)
            ;   /* kept whole */
        else if (each && json_object_is_type(val, json_type_array))
            prune_each(each, val);
        else if (plain && json_object_is_type(val, json_type_object))
            prune(plain, val);
        else
            keep = false;
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

struct fg_fieldset {
    struct prune_node root;
};

static void prune_free(struct prune_node *n)
{
    for (size_t i = 0; i < n->nkids; i++)
        prune_free(&n->kids[i]);
    free(n->kids);
}

struct fg_fieldset *fg_fieldset_new(const char *const *paths)
{
    struct fg_fieldset *fs = fg_calloc(1, sizeof *fs);
    prune_compile(&fs->root, paths);
    return fs;
}

void fg_fieldset_free(struct fg_fieldset *fs)
{
    if (!fs)
        return;
    prune_free(&fs->root);
    free(fs);
}

json_object *fg_transform_keep(void *ud, json_object *obj)
{
    const struct fg_fieldset *fs = ud;
    if (!json_object_is_type(obj, json_type_object))
        return NULL;
    json_object *stripped = fg_transform_strip(NULL, obj);
    prune(&fs->root, stripped);
    return stripped;
}
