/*
 * policy_status — building a GPUPolicy's desired status; see policy_status.h.
 */
#include "reconcilers/policy_status.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/json.h"
#include "crds/gpupolicy.h"
#include "reconcilers/conditions.h"

json_object *fg_policy_status_build(json_object *policy, int64_t workloads, const char *now, bool *valid)
{
    int64_t generation = 0;
    fg_json_get_int64(policy, &generation, "metadata", "generation", NULL);

    struct fg_gpupolicy_spec spec;
    char msg[FG_ERRMSG_MAX] = "";
    const char *reason = "InvalidField";
    *valid = fg_gpupolicy_decode(fg_json_get(policy, "spec", NULL), &spec, msg) == FG_OK &&
             fg_gpupolicy_validate(&spec, &reason, msg) == FG_OK;

    json_object *status = json_object_new_object();
    json_object_object_add(status, "observedGeneration", json_object_new_int64(generation));
    json_object_object_add(status, "workloads", json_object_new_int64(workloads));
    json_object *conds = json_object_new_array();
    if (*valid) {
        json_object_array_add(conds, fg_condition_build(policy, generation, "Ready", "True", "Valid",
                                               "the policy is valid and in use by the recommender", now));
    } else {
        json_object_array_add(conds, fg_condition_build(policy, generation, "Ready", "False", reason, msg, now));
        json_object_array_add(conds, fg_condition_build(policy, generation, "Invalid", "True", reason, msg, now));
    }
    json_object_object_add(status, "conditions", conds);
    return status;
}

bool fg_policy_status_changed(json_object *policy, json_object *desired)
{
    return !json_object_equal(fg_json_get(policy, "status", NULL), desired);
}
