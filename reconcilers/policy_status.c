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

/* The existing condition of `type` in policy's status, or NULL. */
static json_object *current_condition(json_object *policy, const char *type)
{
    json_object *conds = fg_json_get(policy, "status", "conditions", NULL);
    if (!json_object_is_type(conds, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = fg_json_get_str(c, "type", NULL);
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

static json_object *condition(json_object *policy, int64_t generation, const char *type, const char *status,
                              const char *reason, const char *message, const char *now)
{
    json_object *c = json_object_new_object();
    fg_json_set_str(c, "type", type);
    fg_json_set_str(c, "status", status);
    fg_json_set_str(c, "reason", reason);
    fg_json_set_str(c, "message", message);
    json_object_object_add(c, "observedGeneration", json_object_new_int64(generation));
    json_object *old = current_condition(policy, type);
    const char *old_status = fg_json_get_str(old, "status", NULL);
    const char *old_time = fg_json_get_str(old, "lastTransitionTime", NULL);
    fg_json_set_str(c, "lastTransitionTime", old_status && old_time && !strcmp(old_status, status) ? old_time : now);
    return c;
}

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
        json_object_array_add(conds, condition(policy, generation, "Ready", "True", "Valid",
                                               "the policy is valid and in use by the recommender", now));
    } else {
        json_object_array_add(conds, condition(policy, generation, "Ready", "False", reason, msg, now));
        json_object_array_add(conds, condition(policy, generation, "Invalid", "True", reason, msg, now));
    }
    json_object_object_add(status, "conditions", conds);
    return status;
}

bool fg_policy_status_changed(json_object *policy, json_object *desired)
{
    return !json_object_equal(fg_json_get(policy, "status", NULL), desired);
}
