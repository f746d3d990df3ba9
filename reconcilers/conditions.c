/* One status condition (conditions.h). */
#include "reconcilers/conditions.h"

#include <string.h>

#include "base/json.h"

/* The existing condition of `type` in obj's status, or NULL. */
static json_object *current(json_object *obj, const char *type)
{
    json_object *conds = fg_json_get(obj, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = fg_json_get_str(c, "type", NULL);
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

json_object *fg_condition_build(json_object *obj, int64_t generation, const char *type, const char *status,
                                const char *reason, const char *message, const char *now)
{
    json_object *c = json_object_new_object();
    fg_json_set_str(c, "type", type);
    fg_json_set_str(c, "status", status);
    fg_json_set_str(c, "reason", reason);
    fg_json_set_str(c, "message", message);
    json_object_object_add(c, "observedGeneration", json_object_new_int64(generation));
    json_object *old = current(obj, type);
    const char *old_status = fg_json_get_str(old, "status", NULL);
    const char *old_time = fg_json_get_str(old, "lastTransitionTime", NULL);
    fg_json_set_str(c, "lastTransitionTime", old_status && old_time && !strcmp(old_status, status) ? old_time : now);
    return c;
}
