/* views — what each kubectl fracgpu command prints; see views.h. */
#include "kubectl-fracgpu/views.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "kubectl-fracgpu/inventory.h"
#include "kubectl-fracgpu/output.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

static bool wide(const struct fgk_view_opts *o)
{
    return o->output && !strcmp(o->output, "wide");
}

static bool structured(const struct fgk_view_opts *o)
{
    return o->output && strcmp(o->output, "wide");
}

/* MiB as kubectl would show a quantity: 10Gi, 1536Mi. */
static const char *mib(int64_t v, char out[32])
{
    if (v % 1024 == 0)
        snprintf(out, 32, "%lldGi", (long long)(v / 1024));
    else
        snprintf(out, 32, "%lldMi", (long long)v);
    return out;
}

/* ---- gpus ---- */

void fgk_view_gpus(json_object *nodes, json_object *pods, json_object *workloads, const struct fgk_view_opts *o,
                   FILE *out)
{
    struct fgk_inventory inv;
    fgk_inventory_build(nodes, pods, workloads, o->cap_ns, &inv);
    if (structured(o)) {
        json_object *j = fgk_inventory_json(&inv);
        fgk_print_object(j, o->output, out);
        json_object_put(j);
        fgk_inventory_cleanup(&inv);
        return;
    }
    static const char *const headers[] = { "NODE", "GPU", "MODEL", "CAPACITY-POD", "SHARING", "TENANTS", "COMPUTE",
                                           "MEMORY", "UUID", "MEASURED-COMPUTE", "MEASURED-MEMORY", "PODS" };
    struct fgk_table t;
    fgk_table_init(&t, wide(o) ? 12 : 8, headers);
    for (size_t i = 0; i < inv.n; i++) {
        const struct fgk_gpu *g = &inv.gpus[i];
        char a[32], b[32];
        fgk_table_cell(&t, g->node);
        if (g->index >= 0)
            fgk_table_cellf(&t, "%d", g->index);
        else
            fgk_table_cell(&t, "-");
        fgk_table_cell(&t, g->model ? g->model : "-");
        fgk_table_cell(&t, g->cap ? g->cap : "-");
        fgk_table_cell(&t, g->sharing);
        fgk_table_cellf(&t, "%zu", g->n_tenants);
        if (g->cap) {
            fgk_table_cellf(&t, "%lldm/1000m", (long long)g->milli);
            fgk_table_cellf(&t, "%s/%s", mib(g->mem_alloc_mib, a), mib(g->mem_mib, b));
        } else {
            fgk_table_cell(&t, "-");
            fgk_table_cell(&t, "-");
        }
        if (!wide(o))
            continue;
        fgk_table_cell(&t, g->uuid ? g->uuid : "-");
        if (g->measured) {
            fgk_table_cellf(&t, "%lldm", (long long)g->used_milli);
            fgk_table_cell(&t, mib(g->used_mem_mib, a));
        } else {
            fgk_table_cell(&t, "-");
            fgk_table_cell(&t, "-");
        }
        char names[1024] = "";
        size_t used = 0;
        for (size_t k = 0; k < g->n_tenants && used < sizeof names; k++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s/%s", k ? "," : "", g->tenants[k].ns,
                                     g->tenants[k].name);
        fgk_table_cell(&t, g->n_tenants ? names : "-");
    }
    fgk_table_print(&t, out);
    fgk_table_cleanup(&t);
    fgk_inventory_cleanup(&inv);
}

/* ---- workloads ---- */

static const char *status_str(json_object *w, const char *a, const char *b)
{
    const char *s = fg_json_get_str(w, "status", a, b, NULL);
    return s && *s ? s : "-";
}

void fgk_view_workloads(json_object *workloads, const struct fgk_view_opts *o, FILE *out)
{
    if (structured(o)) {
        json_object *list = json_object_new_object();
        fg_json_set_str(list, "apiVersion", "v1");
        fg_json_set_str(list, "kind", "List");
        json_object_object_add(list, "items", json_object_get(workloads));
        fgk_print_object(list, o->output, out);
        json_object_put(list);
        return;
    }
    static const char *const all[] = { "NAMESPACE", "NAME", "TARGET", "POLICY", "PODS", "ALLOCATION", "USAGE",
                                       "RECOMMENDED", "GPUS-BEFORE", "GPUS-AFTER", "GPUS-SAVED", "REASON", "SAMPLES" };
    size_t skip = o->all_namespaces ? 0 : 1, cols = (wide(o) ? 13 : 11) - skip;
    struct fgk_table t;
    fgk_table_init(&t, cols, all + skip);
    double before = 0, after = 0;
    for (size_t i = 0; i < fg_json_array_len(workloads); i++) {
        json_object *w = json_object_array_get_idx(workloads, i);
        if (o->all_namespaces)
            fgk_table_cell(&t, fg_json_get_str(w, "metadata", "namespace", NULL));
        fgk_table_cell(&t, fg_json_get_str(w, "metadata", "name", NULL));
        fgk_table_cell(&t, status_str(w, "target", NULL));
        fgk_table_cell(&t, status_str(w, "policy", NULL));
        int64_t pods = 0;
        fg_json_get_int64(w, &pods, "status", "pods", NULL);
        fgk_table_cellf(&t, "%lld", (long long)pods);
        if (fg_json_get(w, "status", "allocation", NULL))
            fgk_table_cellf(&t, "%s/%s", status_str(w, "allocation", "compute"), status_str(w, "allocation", "memory"));
        else
            fgk_table_cell(&t, "-");
        int64_t p95 = 0, peak = 0;
        char a[32];
        if (fg_json_get_int64(w, &p95, "status", "usage", "computeP95Milli", NULL) &&
            fg_json_get_int64(w, &peak, "status", "usage", "memoryPeakMiB", NULL))
            fgk_table_cellf(&t, "%lldm/%s", (long long)p95, mib(peak, a));
        else
            fgk_table_cell(&t, "-");
        fgk_table_cell(&t, status_str(w, "recommendation", "summary"));
        fgk_table_cell(&t, status_str(w, "gpusBefore", NULL));
        fgk_table_cell(&t, status_str(w, "gpusAfter", NULL));
        fgk_table_cell(&t, status_str(w, "gpusSaved", NULL));
        if (wide(o)) {
            int64_t samples = 0;
            fgk_table_cell(&t, status_str(w, "recommendation", "reason"));
            fg_json_get_int64(w, &samples, "status", "usage", "samples", NULL);
            fgk_table_cellf(&t, "%lld", (long long)samples);
        }
        before += atof(status_str(w, "gpusBefore", NULL));
        after += atof(status_str(w, "gpusAfter", NULL));
    }
    if (!fg_json_array_len(workloads)) {
        fprintf(out, "No GPUWorkloads found%s.\n", o->all_namespaces ? "" : " in this namespace");
    } else {
        fgk_table_print(&t, out);
        fprintf(out, "\nGPUs before %.1f, after %.1f: %.1f saved (%.0f%%)\n", before, after, before - after,
                before > 0 ? 100.0 * (before - after) / before : 0.0);
    }
    fgk_table_cleanup(&t);
}

/* ---- explain ---- */

/* The pod's condition of this type, or NULL. */
static json_object *condition(json_object *pod, const char *type)
{
    json_object *cs = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(cs, i), "type", NULL), type))
            return json_object_array_get_idx(cs, i);
    return NULL;
}

/* Whether some container of pod asks for resource. */
static bool asks_for(json_object *pod, const char *resource)
{
    json_object *cs = fg_json_get(pod, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        if (fg_json_get(c, "resources", "limits", resource, NULL) || fg_json_get(c, "resources", "requests", resource, NULL))
            return true;
    }
    return false;
}

/* The reasons in e, one line for the text form. */
static void say(json_object *e, FILE *out, const char *key, const char *label)
{
    const char *v = fg_json_get_str(e, key, NULL);
    if (v)
        fprintf(out, "%-12s %s\n", label, v);
}

static void explain_unmanaged(json_object *pod, json_object *e)
{
    if (asks_for(pod, FG_RES_NVIDIA_GPU))
        fg_json_set_str(e, "why",
                        "it asks for whole GPUs (nvidia.com/gpu) and was not mutated: its workload is not opted in "
                        "(kubectl annotate <kind>/<name> fracgpu.io/automate=true, or label its namespace), it is "
                        "not eligible (kubectl fracgpu workloads; its GPUWorkload's Eligible condition says why), or "
                        "it was created before opting in (fracgpu rolls the workload's pods)");
    else
        fg_json_set_str(e, "why", "it asks for no GPU: nothing for fracgpu to do");
}

void fgk_view_explain(json_object *pod, json_object *nodes, json_object *pods, json_object *workloads,
                      const struct fgk_view_opts *o, FILE *out)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL), *name = fg_json_get_str(pod, "metadata", "name", NULL);
    json_object *e = json_object_new_object();
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    fg_json_set_str(e, "pod", key);
    bool managed = fg_str_eq(fg_json_get_str(pod, "spec", "schedulerName", NULL), FG_SCHEDULER_NAME);
    json_object_object_add(e, "managed", json_object_new_boolean(managed));
    if (!managed) {
        explain_unmanaged(pod, e);
    } else {
        const char *wl = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_WORKLOAD, NULL);
        json_object_object_add(e, "workload", wl ? json_object_new_string(wl) : NULL);
        const char *pol = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_POLICY, NULL);
        json_object_object_add(e, "policy", pol ? json_object_new_string(pol) : NULL);
        const char *mode = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_UPDATE_MODE, NULL);
        json_object_object_add(e, "updateMode", mode ? json_object_new_string(mode) : NULL);
        struct fg_allocation a;
        char why[256] = "";
        if (fg_allocation_from_pod(pod, &a, why) == FG_OK) {
            char text[96], m[32];
            snprintf(text, sizeof text, "%lldm of a GPU, %s", (long long)a.compute_milli,
                     a.memory_mib ? mib(a.memory_mib, m) : "the whole GPU's memory");
            fg_json_set_str(e, "allocation", text);
        } else {
            fg_json_set_str(e, "allocation", why);
        }
        const char *node = fg_json_get_str(pod, "spec", "nodeName", NULL);
        struct fgk_inventory inv;
        fgk_inventory_build(nodes, pods, workloads, o->cap_ns, &inv);
        const struct fgk_gpu *on = NULL;
        for (size_t i = 0; i < inv.n && !on; i++)
            for (size_t k = 0; k < inv.gpus[i].n_tenants && !on; k++)
                if (fg_str_eq(inv.gpus[i].tenants[k].ns, ns) && fg_str_eq(inv.gpus[i].tenants[k].name, name))
                    on = &inv.gpus[i];
        if (on) {
            char text[512], m1[32], m2[32];
            snprintf(text, sizeof text, "node %s, GPU %d (%s), held by capacity pod %s/%s", on->node, on->index,
                     on->uuid ? on->uuid : "?", o->cap_ns, on->cap);
            fg_json_set_str(e, "placement", text);
            snprintf(text, sizeof text, "%zu tenants, %lldm/1000m and %s/%s allocated, %s", on->n_tenants,
                     (long long)on->milli, mib(on->mem_alloc_mib, m1), mib(on->mem_mib, m2), on->sharing);
            fg_json_set_str(e, "gpu", text);
        } else if (node) {
            char text[256];
            snprintf(text, sizeof text, "bound to node %s, but no live capacity pod there names it: it is being "
                     "evicted, or its capacity pod is gone", node);
            fg_json_set_str(e, "placement", text);
        } else {
            json_object *c = condition(pod, "PodScheduled");
            const char *reason = fg_json_get_str(c, "reason", NULL), *message = fg_json_get_str(c, "message", NULL);
            char text[1024];
            snprintf(text, sizeof text, "%s: %s", reason ? reason : c ? "?" : "not tried yet",
                     message ? message : "fracgpu-scheduler has not looked at it yet");
            fg_json_set_str(e, "waiting", text);
            const char *nominated = fg_json_get_str(pod, "status", "nominatedNodeName", NULL);
            if (nominated) {
                snprintf(text, sizeof text, "node %s: pods of lower priority are being evicted to make room", nominated);
                fg_json_set_str(e, "nominated", text);
            }
        }
        fgk_inventory_cleanup(&inv);
    }
    if (structured(o)) {
        fgk_print_object(e, o->output, out);
    } else {
        fprintf(out, "%-12s %s\n", "Pod:", key);
        fprintf(out, "%-12s %s\n", "Managed:", managed ? "yes, by fracgpu-scheduler" : "no");
        say(e, out, "why", "Why not:");
        say(e, out, "workload", "Workload:");
        say(e, out, "policy", "Policy:");
        say(e, out, "updateMode", "Update mode:");
        say(e, out, "allocation", "Allocation:");
        say(e, out, "placement", "Placed on:");
        say(e, out, "gpu", "That GPU:");
        say(e, out, "waiting", "Waiting:");
        say(e, out, "nominated", "Nominated:");
    }
    json_object_put(e);
}
