/* pods — this node's pods by UID, from an informer; see pods.h. */
#include "exporter/pods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/resource.h"

struct fg_pods {
    struct fg_informer *inf;
};

static const char *const fields[] = {
    "spec.nodeName", "status.containerStatuses[].name", "status.containerStatuses[].containerID",
    "status.initContainerStatuses[].name", "status.initContainerStatuses[].containerID",
    "status.ephemeralContainerStatuses[].name", "status.ephemeralContainerStatuses[].containerID",
    NULL,
};

static size_t index_uid(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    const char *uid = fg_json_get_str(obj, "metadata", "uid", NULL);
    if (!uid || !max)
        return 0;
    values[0] = uid;
    return 1;
}

enum fg_err fg_pods_setup(struct fg_manager *m, const char *node, struct fg_pods **out, char *errmsg)
{
    struct fg_informer_factory *f = fg_manager_informers(m);
    char *selector = fg_asprintf("spec.nodeName=%s", node);
    struct fg_informer *inf;
    enum fg_err err = fg_informer_factory_get(
        f, &(struct fg_informer_want){ .resource = &fg_kube_pods, .field_selector = selector, .fields = fields }, &inf,
        errmsg);
    free(selector);
    if (!err && (err = fg_informer_factory_index(f, inf, "uid", index_uid, NULL)))
        fg_errmsg(errmsg, err, "cannot index this node's pods by UID");
    if (err)
        return err;
    struct fg_pods *p = fg_calloc(1, sizeof *p);
    p->inf = inf;
    fg_manager_on_free(m, free, p);
    *out = p;
    return FG_OK;
}

bool fg_pods_synced(const struct fg_pods *p)
{
    return p && fg_informer_has_synced(p->inf);
}

/* The name of the container whose status carries this ID, in any of the three status lists. */
static void container_name(json_object *pod, const char *cid, char *out, size_t outsz)
{
    static const char *const lists[] = { "containerStatuses", "initContainerStatuses",
                                         "ephemeralContainerStatuses" };
    size_t cl = strlen(cid);
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        json_object *arr = fg_json_get(pod, "status", lists[l], NULL);
        if (!arr || !json_object_is_type(arr, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *st = json_object_array_get_idx(arr, i);
            const char *id = fg_json_get_str(st, "containerID", NULL);
            const char *name = fg_json_get_str(st, "name", NULL);
            const char *sep = id ? strstr(id, "://") : NULL;
            const char *bare = sep ? sep + 3 : id;
            if (bare && name && strlen(bare) == cl && memcmp(bare, cid, cl) == 0) {
                snprintf(out, outsz, "%s", name);
                return;
            }
        }
    }
}

bool fg_pods_lookup(struct fg_pods *p, const char *uid, const char *container_id, struct fg_pod_ref *out)
{
    memset(out, 0, sizeof *out);
    if (!p || !uid || !uid[0])
        return false;
    struct fg_kobj_list l = { NULL, 0 };
    if (fg_store_by_index(fg_informer_store(p->inf), "uid", uid, &l) != FG_OK || l.n == 0) {
        fg_kobj_list_cleanup(&l);
        return false;
    }
    snprintf(out->ns, sizeof out->ns, "%s", fg_kobj_namespace(l.items[0]));
    snprintf(out->name, sizeof out->name, "%s", fg_kobj_name(l.items[0]));
    json_object *pod = NULL;
    if (container_id && container_id[0] && fg_kobj_parse(l.items[0], &pod, NULL) == FG_OK) {
        container_name(pod, container_id, out->container, sizeof out->container);
        json_object_put(pod);
    }
    fg_kobj_list_cleanup(&l);
    return true;
}
