/* A rightsized workload's pods: out-of-memory kills, the GPUs' memory, and Auto's rolls (rightsizer_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/quantity.h"
#include "operator/kube/resource.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"
#include "reconcilers/rightsizer_int.h"

#define NS_INDEX "namespace"

/* What the walk learns of the workload's pods. */
struct walk {
    bool rolls;                            /* new pods get the applied allocation: stale pods may be rolled */
    size_t live, unsettled;
    char stale_name[254], stale_uid[64];   /* the first pod whose allocation is not the applied one */
};

/* The memory of the GPU the pod was placed on, from its capacity pod (0: unknown). */
static int64_t gpu_memory_of(struct fg_rightsizer *r, json_object *pod)
{
    const char *cap = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_CAPACITY_POD, NULL);
    if (!cap)
        return 0;
    char key[512];
    snprintf(key, sizeof key, "%s/%s", r->o.capacity_ns, cap);
    json_object *c = fg_store_get_json(fg_informer_store(r->pods_inf), key);
    const char *mib = fg_json_get_str(c, "metadata", "annotations", FG_ANN_GPU_MEMORY_MIB, NULL);
    int64_t v = mib ? strtoll(mib, NULL, 10) : 0;
    json_object_put(c);
    return v > 0 ? v : 0;
}

static void note_restarts(struct fg_rightsizer *r, struct rs_workload *w, json_object *pod, int64_t now_ms)
{
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    if (!uid)
        return;
    struct rs_pod *p = rs_pod_get(r, uid);
    p->seen = true;
    bool oom_killed = false;
    int64_t restarts = fg_rs_pod_restarts(pod, &oom_killed);
    if (p->restarts >= 0 && restarts > p->restarts) {
        struct fg_allocation a = { 0 };
        bool near_limit = fg_allocation_from_pod(pod, &a, NULL) == FG_OK && a.memory_mib > 0 && p->memory_mib >= 0 &&
                          p->memory_mib >= FG_RS_OOM_SHARE * (double)a.memory_mib;
        if (oom_killed || near_limit) {
            fg_rec_oom(&w->st, &w->o, now_ms, p->memory_mib);
            fg_counter_add(r->ooms, 1);
            w->dirty = true;
            fg_log(FG_LOG_INFO, RS_COMPONENT, "GPUWorkload %s: pod %s restarted %s (%.0f MiB used of %lld)", w->key,
                   fg_json_get_str(pod, "metadata", "name", NULL), oom_killed ? "OOMKilled" : "at its memory limit",
                   p->memory_mib, (long long)a.memory_mib);
        }
    }
    p->restarts = restarts;
}

static bool holds_applied(const struct rs_workload *w, json_object *pod)
{
    struct fg_allocation a;
    if (fg_allocation_from_pod(pod, &a, NULL) != FG_OK)
        return true;   /* not ours to judge */
    return a.compute_milli == w->st.applied.compute_milli && a.memory_mib == w->st.applied.memory_mib;
}

static void visit_pod(struct fg_rightsizer *r, struct rs_workload *w, json_object *pod, int64_t now_ms, struct walk *k)
{
    if (!fg_str_eq(fg_json_get_str(pod, "metadata", "annotations", FG_ANN_WORKLOAD, NULL), w->name) ||
        !fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_MANAGED, NULL), "true"))
        return;
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    if (fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed"))
        return;
    if (fg_json_get(pod, "metadata", "deletionTimestamp", NULL)) {
        k->unsettled++;
        return;
    }
    k->live++;
    if (!fg_rs_pod_ready(pod))
        k->unsettled++;
    note_restarts(r, w, pod, now_ms);
    int64_t gpu = gpu_memory_of(r, pod);
    if (gpu > 0 && (!w->gpu_memory_mib || gpu < w->gpu_memory_mib))
        w->gpu_memory_mib = gpu;
    if (!k->stale_name[0] && k->rolls && !holds_applied(w, pod)) {
        snprintf(k->stale_name, sizeof k->stale_name, "%s", fg_json_get_str(pod, "metadata", "name", NULL));
        snprintf(k->stale_uid, sizeof k->stale_uid, "%s", fg_json_get_str(pod, "metadata", "uid", NULL));
    }
}

struct evict_call {
    struct fg_rightsizer *r;
    char key[512], pod[254];
};

static void evicted(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct evict_call *ec = ud;
    struct fg_rightsizer *r = ec->r;
    struct rs_workload *w = NULL;
    if (r->running && lh_table_lookup_ex(r->workloads, ec->key, (void **)&w))
        w->evicting = false;
    if (err && !(st && st->http_code == 404)) {
        fg_counter_add(r->evictions_refused, 1);
        fg_log(FG_LOG_INFO, RS_COMPONENT, "GPUWorkload %s: pod %s not evicted (asked again next interval): %s", ec->key,
               ec->pod, st && st->message ? st->message : fg_err_str(err));
    } else if (!err) {
        fg_counter_add(r->evictions, 1);
    }
    free(ec);
}

static void evict(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, const struct walk *k)
{
    char *path = fg_kube_path(&fg_kube_pods, w->ns, k->stale_name, "eviction", NULL);
    char *body = fg_asprintf("{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"%s\","
                             "\"namespace\":\"%s\"},\"deleteOptions\":{\"preconditions\":{\"uid\":\"%s\"}}}",
                             k->stale_name, w->ns, k->stale_uid);
    struct evict_call *ec = fg_calloc(1, sizeof *ec);
    ec->r = r;
    snprintf(ec->key, sizeof ec->key, "%s", w->key);
    snprintf(ec->pod, sizeof ec->pod, "%s", k->stale_name);
    w->evicting = true;
    char msg[512];
    snprintf(msg, sizeof msg, "evicting pod %s so that its replacement gets compute %lldm and memory %lldMi",
             k->stale_name, (long long)w->st.applied.compute_milli, (long long)w->st.applied.memory_mib);
    rs_emit(r, gw, "Normal", "RollingToNewAllocation", msg);
    fg_kube_loop_request(r->loop, "POST", path, "application/json", body, strlen(body), evicted, ec);
    free(body);
    free(path);
}

/* The allocation the workload's new pods get, as its GPUWorkload's status says (the workload
 * reconciler writes it as the webhook decides: the workload's fixed fraction where it sets one, else
 * the recommendation); false when the status does not say, or not readably. */
static bool next_allocation(json_object *gw, struct fg_allocation *out)
{
    const char *c = fg_json_get_str(gw, "status", "allocation", "compute", NULL);
    const char *m = fg_json_get_str(gw, "status", "allocation", "memory", NULL);
    int64_t compute = 0, memory = 0;
    if (!c || !m || fg_quantity_parse(c, &compute, NULL) != FG_OK ||
        (strcmp(m, FG_ALLOC_WHOLE_MEMORY) != 0 && fg_quantity_parse(m, &memory, NULL) != FG_OK))
        return false;
    out->compute_milli = compute;
    out->memory_mib = memory / FG_MIB_MILLI + (memory % FG_MIB_MILLI != 0);
    return true;
}

/* Whether rolling a stale pod brings it the applied allocation: only when new pods get it. A workload
 * that fixes its fraction (fracgpu.io/gpu-compute, gpu-memory) keeps a history and a recommendation,
 * but its replacements would get the fixed fraction again, and be rolled again, for ever. */
static bool rolls_to_applied(const struct rs_workload *w, json_object *gw)
{
    struct fg_allocation next;
    return w->st.applied.set && next_allocation(gw, &next) && next.compute_milli == w->st.applied.compute_milli &&
           next.memory_mib == w->st.applied.memory_mib;
}

void rs_pods_walk(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, int64_t now_ms)
{
    struct fg_kobj_list l = { 0 };
    if (fg_store_by_index(fg_informer_store(r->pods_inf), NS_INDEX, w->ns, &l) != FG_OK)
        return;
    struct walk k = { .rolls = rolls_to_applied(w, gw) };
    for (size_t i = 0; i < l.n; i++) {
        if (!strstr(fg_kobj_text(l.items[i], NULL), w->name))
            continue;   /* cheaply: not one of its pods */
        json_object *pod = NULL;
        if (fg_kobj_parse(l.items[i], &pod, NULL) == FG_OK)
            visit_pod(r, w, pod, now_ms, &k);
        json_object_put(pod);
    }
    fg_kobj_list_cleanup(&l);
    if (w->mode == FG_UPDATE_AUTO && k.stale_name[0] && !w->evicting && !k.unsettled && k.live >= r->o.min_replicas)
        evict(r, w, gw, &k);
}
