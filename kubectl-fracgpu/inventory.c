/* inventory — the cluster's GPUs from nodes, pods and GPUWorkloads; see inventory.h. */
#include "kubectl-fracgpu/inventory.h"

#include <json-c/linkhash.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/quantity.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

static const char *annotation(json_object *o, const char *key)
{
    return fg_json_get_str(o, "metadata", "annotations", key, NULL);
}

static bool live(json_object *pod)
{
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    return !fg_json_get(pod, "metadata", "deletionTimestamp", NULL) && !fg_str_eq(phase, "Succeeded") &&
           !fg_str_eq(phase, "Failed");
}

static int64_t gpus_of(json_object *node)
{
    int64_t milli = 0;
    json_object *v = fg_json_get(node, "status", "allocatable", FG_RES_NVIDIA_GPU, NULL);
    if (!v || fg_quantity_json(v, &milli, NULL) != FG_OK || milli < 0)
        return 0;
    return milli / 1000;
}

static void push_gpu(struct fgk_inventory *inv, size_t *cap, const struct fgk_gpu *g)
{
    if (inv->n == *cap)
        inv->gpus = fg_realloc(inv->gpus, (*cap = *cap ? 2 * *cap : 16) * sizeof(*inv->gpus));
    inv->gpus[inv->n++] = *g;
}

static void free_key(struct lh_entry *e)
{
    free((char *)lh_entry_k(e));
}

/* The GPUWorkloads by "namespace/name" (values borrowed from the list). */
static lh_table *index_workloads(json_object *workloads)
{
    lh_table *t = lh_kchar_table_new(64, free_key);
    for (size_t i = 0; i < fg_json_array_len(workloads); i++) {
        json_object *w = json_object_array_get_idx(workloads, i);
        lh_table_insert(t, fg_asprintf("%s/%s", fg_json_get_str(w, "metadata", "namespace", NULL),
                                       fg_json_get_str(w, "metadata", "name", NULL)),
                        w);
    }
    return t;
}

static void add_tenant(struct fgk_gpu *g, json_object *pod, lh_table *workloads)
{
    struct fg_allocation a = { 0 };
    if (fg_allocation_from_pod(pod, &a, NULL) != FG_OK)
        a = (struct fg_allocation){ 0, 0 };
    struct fgk_tenant t = {
        .ns = fg_json_get_str(pod, "metadata", "namespace", NULL),
        .name = fg_json_get_str(pod, "metadata", "name", NULL),
        .workload = annotation(pod, FG_ANN_WORKLOAD),
        .phase = fg_json_get_str(pod, "status", "phase", NULL),
        .milli = a.compute_milli,
        .mem_mib = a.memory_mib,
    };
    json_object *w = NULL;
    if (t.workload) {
        char *key = fg_asprintf("%s/%s", t.ns, t.workload);
        lh_table_lookup_ex(workloads, key, (void **)&w);
        free(key);
    }
    t.measured = fg_json_get_int64(w, &t.used_milli, "status", "usage", "computeP95Milli", NULL) &&
                 fg_json_get_int64(w, &t.used_mem_mib, "status", "usage", "memoryPeakMiB", NULL);
    g->tenants = fg_realloc(g->tenants, (g->n_tenants + 1) * sizeof(*g->tenants));
    g->tenants[g->n_tenants++] = t;
    g->milli += t.milli;
    g->mem_alloc_mib += t.mem_mib ? t.mem_mib : g->mem_mib;
    if (t.measured) {
        g->measured++;
        g->used_milli += t.used_milli;
        g->used_mem_mib += t.used_mem_mib;
    }
    if (fg_str_eq(annotation(pod, FG_ANN_SHARING), "exclusive"))
        g->sharing = "exclusive";
    int64_t index = -1;
    const char *idx = annotation(pod, FG_ANN_GPU_INDEX);
    if (g->index < 0 && idx && (index = strtol(idx, NULL, 10)) >= 0)
        g->index = (int)index;
}

static int by_place(const void *x, const void *y)
{
    const struct fgk_gpu *a = x, *b = y;
    int c = strcmp(a->node, b->node);
    if (c)
        return c;
    if (!a->cap != !b->cap)
        return a->cap ? -1 : 1;
    if (a->index != b->index)
        return a->index < 0 ? 1 : b->index < 0 ? -1 : a->index - b->index;
    return a->cap && b->cap ? strcmp(a->cap, b->cap) : 0;
}

/* A GPU node: its GPUs, and how many of them a capacity pod holds. */
struct gpu_node {
    const char *name, *model;
    int64_t gpus, held;
};

void fgk_inventory_build(json_object *nodes, json_object *pods, json_object *workloads, const char *cap_ns,
                         struct fgk_inventory *out)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 0, n = 0;
    /* one pass over each list, each lookup through a table: a cluster of thousands of nodes and tens
     * of thousands of pods costs no more than reading them */
    struct gpu_node *gn = fg_calloc(fg_json_array_len(nodes) + 1, sizeof(*gn));
    lh_table *by_node = lh_kchar_table_new(64, NULL), *by_cap = lh_kchar_table_new(64, NULL);
    lh_table *by_workload = index_workloads(workloads);
    for (size_t i = 0; i < fg_json_array_len(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        const char *name = fg_json_get_str(node, "metadata", "name", NULL);
        int64_t gpus = gpus_of(node);
        if (!name || gpus <= 0)
            continue;
        gn[n] = (struct gpu_node){ name, fg_json_get_str(node, "metadata", "labels", "nvidia.com/gpu.product", NULL),
                                   gpus, 0 };
        lh_table_insert(by_node, name, &gn[n++]);
    }
    for (size_t p = 0; p < fg_json_array_len(pods); p++) {   /* the capacity pods: the held GPUs */
        json_object *pod = json_object_array_get_idx(pods, p);
        const char *on = fg_json_get_str(pod, "spec", "nodeName", NULL);
        struct gpu_node *node = NULL;
        if (!on || !fg_str_eq(fg_json_get_str(pod, "metadata", "namespace", NULL), cap_ns) ||
            !fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_ROLE, NULL), FG_ROLE_CAPACITY) ||
            !live(pod) || !lh_table_lookup_ex(by_node, on, (void **)&node))
            continue;
        const char *mem = annotation(pod, FG_ANN_GPU_MEMORY_MIB), *sharing = annotation(pod, FG_ANN_SHARING);
        struct fgk_gpu g = { .node = node->name, .model = node->model, .uuid = annotation(pod, FG_ANN_GPU_UUID),
                             .cap = fg_json_get_str(pod, "metadata", "name", NULL),
                             .sharing = fg_str_eq(sharing, "mps") ? "mps" : "timeslice", .index = -1,
                             .mem_mib = mem ? strtoll(mem, NULL, 10) : 0 };
        push_gpu(out, &cap, &g);
        lh_table_insert(by_cap, g.cap, (void *)(uintptr_t)out->n);   /* index + 1: never NULL */
        node->held++;
    }
    for (size_t p = 0; p < fg_json_array_len(pods); p++) {   /* their tenants */
        json_object *pod = json_object_array_get_idx(pods, p);
        void *at = NULL;
        const char *cap_name = annotation(pod, FG_ANN_CAPACITY_POD);
        if (!cap_name || !lh_table_lookup_ex(by_cap, cap_name, &at) || !live(pod))
            continue;
        struct fgk_gpu *g = &out->gpus[(uintptr_t)at - 1];
        if (fg_str_eq(fg_json_get_str(pod, "spec", "nodeName", NULL), g->node))
            add_tenant(g, pod, by_workload);
    }
    for (size_t i = 0; i < n; i++)   /* the GPUs nobody holds */
        for (int64_t k = gn[i].held; k < gn[i].gpus; k++) {
            struct fgk_gpu g = { .node = gn[i].name, .model = gn[i].model, .sharing = "-", .index = -1 };
            push_gpu(out, &cap, &g);
        }
    lh_table_free(by_node);
    lh_table_free(by_cap);
    lh_table_free(by_workload);
    free(gn);
    if (out->n)
        qsort(out->gpus, out->n, sizeof(*out->gpus), by_place);
}

void fgk_inventory_cleanup(struct fgk_inventory *inv)
{
    for (size_t i = 0; i < inv->n; i++)
        free(inv->gpus[i].tenants);
    free(inv->gpus);
    memset(inv, 0, sizeof(*inv));
}

static json_object *pair(int64_t milli, int64_t mib)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "computeMilli", json_object_new_int64(milli));
    json_object_object_add(o, "memoryMiB", json_object_new_int64(mib));
    return o;
}

static json_object *str_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

json_object *fgk_inventory_json(const struct fgk_inventory *inv)
{
    json_object *list = json_object_new_object(), *items = json_object_new_array();
    fg_json_set_str(list, "apiVersion", "v1");
    fg_json_set_str(list, "kind", "List");
    for (size_t i = 0; i < inv->n; i++) {
        const struct fgk_gpu *g = &inv->gpus[i];
        json_object *o = json_object_new_object();
        fg_json_set_str(o, "node", g->node);
        json_object_object_add(o, "index", g->index >= 0 ? json_object_new_int(g->index) : NULL);
        json_object_object_add(o, "model", str_or_null(g->model));
        json_object_object_add(o, "uuid", str_or_null(g->uuid));
        json_object_object_add(o, "capacityPod", str_or_null(g->cap));
        fg_json_set_str(o, "sharing", g->sharing);
        json_object_object_add(o, "capacity", pair(g->cap ? 1000 : 0, g->mem_mib));
        json_object_object_add(o, "allocated", pair(g->milli, g->mem_alloc_mib));
        json_object_object_add(o, "measured", g->measured ? pair(g->used_milli, g->used_mem_mib) : NULL);
        json_object *tenants = json_object_new_array();
        for (size_t t = 0; t < g->n_tenants; t++) {
            const struct fgk_tenant *x = &g->tenants[t];
            json_object *to = pair(x->milli, x->mem_mib ? x->mem_mib : g->mem_mib);
            fg_json_set_str(to, "namespace", x->ns);
            fg_json_set_str(to, "name", x->name);
            json_object_object_add(to, "workload", str_or_null(x->workload));
            json_object_object_add(to, "phase", str_or_null(x->phase));
            json_object_object_add(to, "measured", x->measured ? pair(x->used_milli, x->used_mem_mib) : NULL);
            json_object_array_add(tenants, to);
        }
        json_object_object_add(o, "tenants", tenants);
        json_object_array_add(items, o);
    }
    json_object_object_add(list, "items", items);
    return list;
}
