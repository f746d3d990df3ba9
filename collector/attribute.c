/* attribute — a scraped pod to its GPUWorkload through the caches; see attribute.h. */
#include "collector/attribute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "reconcilers/workload_pods.h"

const char *fg_unattributed_name(enum fg_unattributed r)
{
    static const char *const names[] = { "pod_unknown", "other_node", "no_workload", "time_backwards" };
    return (unsigned)r < FG_UNATTR__COUNT ? names[r] : "unknown";
}

static json_object *cached(struct fg_store *s, const char *ns, const char *name)
{
    char *key = fg_kobj_make_key(ns, name);
    json_object *o = fg_store_get_json(s, key);
    free(key);
    return o;
}

bool fg_attribute(const struct fg_attrib_source *src, const char *ns, const char *name, const char *node,
                  struct fg_attribution *out, enum fg_unattributed *why)
{
    memset(out, 0, sizeof(*out));
    json_object *pod = cached(src->pods, ns, name);
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    if (!pod || !uid || !*uid || strlen(uid) >= sizeof(out->uid)) {
        json_object_put(pod);
        *why = FG_UNATTR_POD_UNKNOWN;
        return false;
    }
    const char *on = fg_json_get_str(pod, "spec", "nodeName", NULL);
    if (!on || !node || strcmp(on, node)) {
        json_object_put(pod);
        *why = FG_UNATTR_OTHER_NODE;
        return false;
    }
    struct fg_owner_caches caches = { src->kinds, src->replicasets, src->owners };
    struct fg_owner_lookup l = { &caches, ns, { NULL }, 0 };
    const struct fg_workload_kind *kind = NULL;
    json_object *w = fg_workload_of_pod(pod, src->kinds, fg_owner_lookup, &l, &kind);
    const char *wname = fg_json_get_str(w, "metadata", "name", NULL);
    bool ok = w && kind && wname && strlen(wname) <= FG_WORKLOAD_NAME_MAX;
    if (ok) {
        snprintf(out->uid, sizeof(out->uid), "%s", uid);
        out->kind = kind;
        out->kind_index = (size_t)(kind - src->kinds->v);
        snprintf(out->workload, sizeof(out->workload), "%s", wname);
        fg_workload_name(src->kinds, kind, wname, out->gpuworkload);
    } else {
        *why = FG_UNATTR_NO_WORKLOAD;
    }
    fg_owner_lookup_release(&l);
    json_object_put(pod);
    return ok;
}
