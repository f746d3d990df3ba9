/* patch_merge — RFC 7386 JSON merge patch and the copy helpers; see patch.h. */
#include "e2e/apiserver/patch.h"

#include <stdlib.h>

json_object *fg__json_dup(json_object *o)
{
    json_object *copy = NULL;
    if (o && json_object_deep_copy(o, &copy, NULL) != 0)
        abort(); /* json-c fails a deep copy only when allocation fails */
    return copy;
}

json_object *fg__json_shallow_dup(json_object *o)
{
    if (json_object_is_type(o, json_type_array)) {
        size_t n = json_object_array_length(o);
        json_object *copy = json_object_new_array_ext((int)(n ? n : 1));
        for (size_t i = 0; i < n; i++)
            json_object_array_add(copy, json_object_get(json_object_array_get_idx(o, i)));
        return copy;
    }
    json_object *copy = json_object_new_object();
    json_object_object_foreach(o, key, value)
        json_object_object_add(copy, key, json_object_get(value));
    return copy;
}

/* Merges the object `patch` into `target`, a private shallow copy: every object on a patched path is
 * copied before it changes, everything else stays shared with the original (which is immutable). */
static void merge_into(json_object *target, json_object *patch)
{
    json_object_object_foreach(patch, key, value) {
        if (!value) {
            json_object_object_del(target, key);
        } else if (json_object_is_type(value, json_type_object)) {
            json_object *child = NULL;
            json_object_object_get_ex(target, key, &child);
            child = json_object_is_type(child, json_type_object) ? fg__json_shallow_dup(child)
                                                                 : json_object_new_object();
            merge_into(child, value);
            json_object_object_add(target, key, child);
        } else {
            json_object_object_add(target, key, fg__json_dup(value));
        }
    }
}

enum fg_err fg__patch_merge(json_object *orig, json_object *patch, json_object **out, char *errmsg)
{
    *out = NULL;
    if (!json_object_is_type(patch, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "merge patch must be a JSON object");
    json_object *result = json_object_is_type(orig, json_type_object) ? fg__json_shallow_dup(orig)
                                                                       : json_object_new_object();
    merge_into(result, patch);
    *out = result;
    return FG_OK;
}
