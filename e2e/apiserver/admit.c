/* admit — type-specific admission between decoding and storing; see admit.h. */
#include "e2e/apiserver/admit.h"

#include <string.h>

#include "base/json.h"
#include "e2e/apiserver/patch.h"

/* kube-apiserver's pod strategy: a new pod starts Pending. */
static void pod_pending(json_object *obj)
{
    json_object *status = fg_json_get(obj, "status", NULL);
    if (fg_json_get_str(status, "phase", NULL))
        return;
    status = json_object_is_type(status, json_type_object) ? fg__json_shallow_dup(status) : json_object_new_object();
    fg_json_set_str(status, "phase", "Pending");
    json_object_object_add(obj, "status", status);
}

enum fg_err fg__admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                      json_object **out)
{
    enum fg_err err = fg__priority_admit(st, type, cur, *obj, out); /* built-in admission, then webhooks */
    if (!err)
        err = fg__webhook_admit(st, type, cur, obj, true, out);
    if (err)
        goto out;
    if (fg__crd_is_crd_type(type))
        err = fg__crd_admit(type, *obj, out);
    else if (type->schema)
        err = fg__schema_admit(type, obj, out);
    else if (!cur && !*type->group && !strcmp(type->plural, "pods"))
        pod_pending(*obj);
    if (!err)
        err = fg__webhook_admit(st, type, cur, obj, false, out);
out:
    if (err && *obj) {
        json_object_put(*obj);
        *obj = NULL;
    }
    return err;
}
