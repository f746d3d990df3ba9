/* The pods of a workload (workload_pods.h). */
#include "reconcilers/workload_pods.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "operator/cache/kobj.h"
#include "reconcilers/allocation.h"
#include "reconcilers/eligibility.h"
#include "reconcilers/podcontract.h"
#include "reconcilers/workload.h"

#define MAX_DEPTH 3 /* Notebook → StatefulSet → pod; CronJob → Job → pod */

/* The GPUs a live pod holds, in milli: its fraction when fracgpu took it, else its whole GPUs. */
static int64_t gpu_milli_held(json_object *pod)
{
    struct fg_allocation a;
    if (fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_MANAGED, NULL), "true") &&
        fg_allocation_from_pod(pod, &a, NULL) == FG_OK)
        return a.compute_milli;
    int64_t total = 0, milli = 0;
    json_object *cs = fg_json_get(pod, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++)
        if (fg_container_ask(json_object_array_get_idx(cs, i), "nvidia.com/gpu", &milli, NULL) == FG_OK)
            total += milli;
    return total;
}

void fg_workload_pods_decode(void *ud, json_object *pod, void *value)
{
    (void)ud;
    struct fg_workload_pod *v = value;
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    bool finished = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
    v->live = !finished && !fg_json_get(pod, "metadata", "deletionTimestamp", NULL);
    if (!v->live)
        return;
    v->gpu_milli = gpu_milli_held(pod);
    struct fg_eligibility e;
    fg_eligibility_check(pod, NULL, &e);
    /* a pod that exists may be bound already: fracgpu would have taken it before it was */
    bool takeable = e.ask == FG_GPU_ELIGIBLE || (e.ask == FG_GPU_WHOLE && !strcmp(e.reason, "nodeName"));
    const char *managed = fg_json_get_str(pod, "metadata", "labels", FG_LABEL_MANAGED, NULL);
    v->missed = fg_workload_label_on(pod) && !(managed && !strcmp(managed, "true")) && takeable;
    if (v->missed && !fg_time_parse(fg_json_get_str(pod, "metadata", "creationTimestamp", NULL), &v->created_ms))
        v->created_ms = 0;
}

static void count_pod(struct fg_kobj *k, struct fg_workload_pods *out)
{
    const struct fg_workload_pod *v = fg_kobj_value(k);
    if (!v || !v->live)
        return;
    out->live++;
    out->gpu_milli += v->gpu_milli;
    if (v->missed) {
        out->missed++;
        if (v->created_ms > out->newest_missed_ms)
            out->newest_missed_ms = v->created_ms;
    }
}

void fg_workload_pods_count(struct fg_store *pods, struct fg_store *const *intermediates, size_t n, const char *uid,
                            struct fg_workload_pods *out)
{
    memset(out, 0, sizeof(*out));
    size_t len = 1, cap = 8;
    char **uids = fg_malloc(cap * sizeof(*uids));
    uids[0] = fg_strdup(uid);
    for (int depth = 0, from = 0; depth < MAX_DEPTH && from < (int)len; depth++) {
        int to = (int)len;
        for (int u = from; u < to; u++) {
            struct fg_kobj_list l;
            if (fg_store_by_index(pods, FG_OWNER_INDEX, uids[u], &l) == FG_OK) {
                for (size_t i = 0; i < l.n; i++)
                    count_pod(l.items[i], out);
                fg_kobj_list_cleanup(&l);
            }
            for (size_t s = 0; s < n; s++) {
                if (fg_store_by_index(intermediates[s], FG_OWNER_INDEX, uids[u], &l) != FG_OK)
                    continue;
                for (size_t i = 0; i < l.n; i++) {
                    if (len == cap)
                        uids = fg_realloc(uids, (cap *= 2) * sizeof(*uids));
                    uids[len++] = fg_strdup(fg_kobj_uid(l.items[i]));
                }
                fg_kobj_list_cleanup(&l);
            }
        }
        from = to;
    }
    for (size_t i = 0; i < len; i++)
        free(uids[i]);
    free(uids);
}

json_object *fg_owner_lookup(void *ctx, const char *group, const char *kind, const char *name)
{
    struct fg_owner_lookup *l = ctx;
    const struct fg_owner_caches *c = l->caches;
    struct fg_store *s = NULL;
    if (!strcmp(group, "apps") && !strcmp(kind, "ReplicaSet"))
        s = c->replicasets;
    for (size_t i = 0; !s && i < c->kinds->n; i++)
        if (!strcmp(c->kinds->v[i].resource.group, group) && !strcmp(c->kinds->v[i].resource.kind, kind))
            s = c->owners[i];
    if (!s || l->n == FG_OWNER_LOOKUP_HELD)
        return NULL;
    char *key = fg_kobj_make_key(l->ns, name);
    json_object *o = fg_store_get_json(s, key);
    free(key);
    if (o)
        l->held[l->n++] = o;
    return o;
}

void fg_owner_lookup_release(struct fg_owner_lookup *l)
{
    for (size_t i = 0; i < l->n; i++)
        json_object_put(l->held[i]);
    l->n = 0;
}
