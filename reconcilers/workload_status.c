/* What a GPUWorkload's status should say (workload_status.h). */
#include "reconcilers/workload_status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "operator/kube/quantity.h"
#include "reconcilers/allocation.h"
#include "reconcilers/conditions.h"
#include "reconcilers/eligibility.h"

/* The whole GPUs the pod template asks for, in milli. */
static int64_t original_request(json_object *tmpl)
{
    json_object *cs = fg_json_get(tmpl, "spec", "containers", NULL);
    int64_t total = 0;
    for (size_t i = 0; i < fg_json_array_len(cs); i++) {
        int64_t milli = 0;
        if (fg_container_ask(json_object_array_get_idx(cs, i), "nvidia.com/gpu", &milli, NULL) == FG_OK)
            total += milli;
    }
    return total;
}

/* GPUs in milli as a decimal number of GPUs: 2700 → "2.7", 9000 → "9". */
static void set_gpus(json_object *st, const char *key, int64_t milli)
{
    char text[32];
    int n = snprintf(text, sizeof(text), "%s%lld.%03lld", milli < 0 ? "-" : "", (long long)(llabs(milli) / 1000),
                     (long long)(llabs(milli) % 1000));
    while (n > 0 && text[n - 1] == '0')
        text[--n] = '\0';
    if (n > 0 && text[n - 1] == '.')
        text[--n] = '\0';
    fg_json_set_str(st, key, text);
}

static json_object *allocation(const struct fg_workload_view *v)
{
    struct fg_allocation a;
    char why[FG_ERRMSG_MAX] = "";
    bool ok = fg_allocation_resolve(v->workload, &v->terms->rec, v->terms->update_mode, &a, why) == FG_OK;
    char compute[FG_QUANTITY_MAX], memory[FG_QUANTITY_MAX];
    fg_quantity_format(a.compute_milli, compute);
    if (a.memory_mib)
        fg_quantity_format(a.memory_mib * FG_MIB_MILLI, memory);
    else
        snprintf(memory, sizeof(memory), "%s", FG_ALLOC_WHOLE_MEMORY);
    json_object *o = json_object_new_object();
    fg_json_set_str(o, "compute", compute);
    fg_json_set_str(o, "memory", memory);
    if (!ok)
        fg_json_set_str(o, "problem", why);
    return o;
}

json_object *fg_workload_status_build(const struct fg_workload_view *v, const char *now)
{
    int64_t generation = 0;
    fg_json_get_int64(v->gpuworkload, &generation, "metadata", "generation", NULL);
    json_object *st = json_object_new_object();
    char text[FG_ERRMSG_MAX];
    snprintf(text, sizeof(text), "%s/%s", v->kind->resource.kind, fg_json_get_str(v->workload, "metadata", "name", NULL));
    fg_json_set_str(st, "target", text);
    fg_json_set_str(st, "detectedClass", fg_workload_class_name(fg_workload_detect_class(v->kind, v->workload)));
    fg_json_set_str(st, "policy", v->terms->policy);
    json_object_object_add(st, "pods", json_object_new_int64((int64_t)v->pods));
    json_object_object_add(st, "unmutatedPods", json_object_new_int64((int64_t)v->unmutated_pods));
    struct fg_eligibility e;
    json_object *tmpl = fg_workload_gpu_template(v->workload, &e);
    int64_t per_pod = original_request(tmpl);
    char q[FG_QUANTITY_MAX];
    fg_quantity_format(per_pod, q);
    snprintf(text, sizeof(text), "%s nvidia.com/gpu", q);
    fg_json_set_str(st, "originalRequest", text);
    set_gpus(st, "gpusBefore", per_pod * (int64_t)v->pods);
    set_gpus(st, "gpusAfter", v->gpu_milli);
    set_gpus(st, "gpusSaved", per_pod * (int64_t)v->pods - v->gpu_milli);
    json_object_object_add(st, "allocation", allocation(v));
    json_object *elig = json_object_new_object();
    bool eligible = e.ask == FG_GPU_ELIGIBLE;
    const char *reason = eligible ? "Eligible" : e.ask == FG_GPU_NONE ? "noGPURequest" : e.reason;
    const char *message = eligible ? "fracgpu schedules its pods on shared GPUs"
                                   : e.ask == FG_GPU_NONE ? "its pods ask for no nvidia.com/gpu" : e.message;
    json_object_object_add(elig, "eligible", json_object_new_boolean(eligible));
    fg_json_set_str(elig, "reason", reason);
    fg_json_set_str(elig, "message", message);
    json_object_object_add(st, "eligibility", elig);
    json_object *conds = json_object_new_array();
    json_object_array_add(conds, fg_condition_build(v->gpuworkload, generation, "Eligible", eligible ? "True" : "False",
                                                    reason, message, now));
    bool found = v->terms->policy_found;
    snprintf(text, sizeof(text),
             found ? "GPUPolicy %s is in force" : "GPUPolicy %s does not exist: its pods keep whole GPUs until it does",
             v->terms->policy);
    json_object_array_add(conds, fg_condition_build(v->gpuworkload, generation, "PolicyFound", found ? "True" : "False",
                                                    found ? "PolicyFound" : "PolicyNotFound", text, now));
    json_object_object_add(st, "conditions", conds);
    const char *action = v->last_action ? v->last_action : fg_json_get_str(v->gpuworkload, "status", "lastAction", NULL);
    const char *why = v->last_action ? v->last_action_reason
                                     : fg_json_get_str(v->gpuworkload, "status", "lastActionReason", NULL);
    if (action)
        fg_json_set_str(st, "lastAction", action);
    if (why)
        fg_json_set_str(st, "lastActionReason", why);
    /* the rightsizer's members, kept as it wrote them */
    static const char *const rightsizer_members[] = { "usage", "recommendation" };
    for (size_t i = 0; i < sizeof rightsizer_members / sizeof *rightsizer_members; i++) {
        json_object *m = fg_json_get(v->gpuworkload, "status", rightsizer_members[i], NULL);
        if (m)
            json_object_object_add(st, rightsizer_members[i], json_object_get(m));
    }
    return st;
}
