/* What governs an automated workload's pods (terms.h). */
#include "reconcilers/terms.h"

#include <string.h>

#include "base/json.h"
#include "crds/builtin.h"
#include "crds/gpuworkload.h"
#include "reconcilers/podcontract.h"

const char *fg_terms_policy_name(const struct fg_workload_kind *kind, json_object *workload, json_object *gw)
{
    const char *policy = fg_json_get_str(workload, "metadata", "annotations", FG_ANN_POLICY, NULL);
    if (!policy || !*policy)
        policy = gw ? fg_gpuworkload_policy_get(gw) : NULL;
    if (!policy || !*policy)
        policy = fg_builtin_policy_for_class(fg_workload_detect_class(kind, workload));
    return policy;
}

void fg_terms_resolve(const char *policy, json_object *policy_obj, json_object *gw, struct fg_terms *out,
                      char *errmsg)
{
    memset(out, 0, sizeof(*out));
    out->policy = policy;
    const struct fg_builtin_policy *b = fg_builtin_policy_find(policy);
    if (policy_obj)
        out->policy_found = fg_gpupolicy_decode(fg_json_get(policy_obj, "spec", NULL), &out->spec, errmsg) == FG_OK;
    else if ((out->policy_found = b != NULL))
        out->spec = b->spec;
    else
        fg_errmsg(errmsg, FG_E_INVAL, "GPUPolicy %s does not exist", policy);
    out->update_mode = out->policy_found ? out->spec.update_mode : FG_UPDATE_OFF;
    const char *own = fg_json_get_str(gw, "spec", "updateMode", NULL);
    for (int m = FG_UPDATE_OFF; own && m <= FG_UPDATE_AUTO; m++)
        if (!strcmp(own, fg_update_mode_name((enum fg_update_mode)m)))
            out->update_mode = (enum fg_update_mode)m;
    struct fg_recommendation *rec = &out->rec;
    rec->has_compute = fg_json_get_int64(gw, &rec->compute_milli, "status", "recommendation", "computeMilli", NULL) &&
                       rec->compute_milli >= 1 && rec->compute_milli <= FG_POLICY_MILLI_MAX;
    rec->has_memory = fg_json_get_int64(gw, &rec->memory_mib, "status", "recommendation", "memoryMiB", NULL) &&
                      rec->memory_mib >= 1 && rec->memory_mib <= FG_POLICY_MIB_MAX;
}
