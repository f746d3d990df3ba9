/* attribute — a scraped pod to its GPUWorkload through the caches; see attribute.h. */
#include "collector/attribute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

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

/* Owners looked up for one pod: held until the walk's result has been copied out. */
#define MAX_HELD 8

struct lookup {
    const struct fg_attrib_source *src;
    const char *ns;
    json_object *held[MAX_HELD];
    size_t nheld;
};

static json_object *lookup_owner(void *ctx, const char *group, const char *kind, const char *name)
{
    struct lookup *l = ctx;
    struct fg_store *s = NULL;
    if (!strcmp(group, "apps") && !strcmp(kind, "ReplicaSet"))
        s = l->src->replicasets;
    for (size_t i = 0; !s && i < l->src->kinds->n; i++)
        if (!strcmp(l->src->kinds->v[i].resource.group, group) && !strcmp(l->src->kinds->v[i].resource.kind, kind))
            s = l->src->owners[i];
    if (!s || l->nheld == MAX_HELD)
        return NULL;
    json_object *o = cached(s, l->ns, name);
    if (o)
        l->held[l->nheld++] = o;
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
    struct lookup l = { .src = src, .ns = ns };
    const struct fg_workload_kind *kind = NULL;
    json_object *w = fg_workload_of_pod(pod, src->kinds, lookup_owner, &l, &kind);
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
    for (size_t i = 0; i < l.nheld; i++)
        json_object_put(l.held[i]);
    json_object_put(pod);
    return ok;
}
