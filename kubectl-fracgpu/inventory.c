/* inventory — the cluster's GPUs from nodes, pods and GPUWorkloads; see inventory.h. */
#include "kubectl-fracgpu/inventory.h"

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

/* The GPUWorkload `name` in namespace ns, or NULL. */
static json_object *workload(json_object *workloads, const char *ns, const char *name)
{
    for (size_t i = 0; name && i < fg_json_array_len(workloads); i++) {
        json_object *w = json_object_array_get_idx(workloads, i);
        if (fg_str_eq(fg_json_get_str(w, "metadata", "namespace", NULL), ns) &&
            fg_str_eq(fg_json_get_str(w, "metadata", "name", NULL), name))
            return w;
    }
    return NULL;
}

static void add_tenant(struct fgk_gpu *g, json_object *pod, json_object *workloads)
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
    json_object *w = workload(workloads, t.ns, t.workload);
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

static int by_node(const void *x, const void *y)
{
    json_object *a = *(json_object *const *)x, *b = *(json_object *const *)y;
    return strcmp(fg_json_get_str(a, "metadata", "name", NULL), fg_json_get_str(b, "metadata", "name", NULL));
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

void fgk_inventory_build(json_object *nodes, json_object *pods, json_object *workloads, const char *cap_ns,
                         struct fgk_inventory *out)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 0, n_nodes = fg_json_array_len(nodes);
    json_object **sorted = fg_calloc(n_nodes ? n_nodes : 1, sizeof(*sorted));
    for (size_t i = 0; i < n_nodes; i++)
        sorted[i] = json_object_array_get_idx(nodes, i);
    qsort(sorted, n_nodes, sizeof(*sorted), by_node);
    for (size_t i = 0; i < n_nodes; i++) {
        json_object *node = sorted[i];
        const char *name = fg_json_get_str(node, "metadata", "name", NULL);
        int64_t gpus = gpus_of(node);
        if (!name || gpus <= 0)
            continue;
        const char *model = fg_json_get_str(node, "metadata", "labels", "nvidia.com/gpu.product", NULL);
        size_t first = out->n;
        for (size_t p = 0; p < fg_json_array_len(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            if (!fg_str_eq(fg_json_get_str(pod, "metadata", "namespace", NULL), cap_ns) ||
                !fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_ROLE, NULL), FG_ROLE_CAPACITY) ||
                !fg_str_eq(fg_json_get_str(pod, "spec", "nodeName", NULL), name) || !live(pod))
                continue;
            const char *mem = annotation(pod, FG_ANN_GPU_MEMORY_MIB), *sharing = annotation(pod, FG_ANN_SHARING);
            struct fgk_gpu g = { .node = name, .model = model, .uuid = annotation(pod, FG_ANN_GPU_UUID),
                                 .cap = fg_json_get_str(pod, "metadata", "name", NULL),
                                 .sharing = fg_str_eq(sharing, "mps") ? "mps" : "timeslice", .index = -1,
                                 .mem_mib = mem ? strtoll(mem, NULL, 10) : 0 };
            push_gpu(out, &cap, &g);
        }
        for (size_t k = first; k < out->n; k++)
            for (size_t p = 0; p < fg_json_array_len(pods); p++) {
                json_object *pod = json_object_array_get_idx(pods, p);
                if (fg_str_eq(annotation(pod, FG_ANN_CAPACITY_POD), out->gpus[k].cap) &&
                    fg_str_eq(fg_json_get_str(pod, "spec", "nodeName", NULL), name) && live(pod))
                    add_tenant(&out->gpus[k], pod, workloads);
            }
        for (int64_t k = (int64_t)(out->n - first); k < gpus; k++) {
            struct fgk_gpu g = { .node = name, .model = model, .sharing = "-", .index = -1 };
            push_gpu(out, &cap, &g);
        }
    }
    free(sorted);
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
