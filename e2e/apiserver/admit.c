/* admit — type-specific admission between decoding and storing; see admit.h. */
#include "e2e/apiserver/admit.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "e2e/apiserver/cow.h"
#include "e2e/apiserver/defaults.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/store_int.h"

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

/* kube-apiserver's Job strategy on create, unless spec.manualSelector is true: the template gets the
 * labels job-name and batch.kubernetes.io/job-name (the Job's name), controller-uid and
 * batch.kubernetes.io/controller-uid (its uid), and spec.selector.matchLabels
 * batch.kubernetes.io/controller-uid, each where not set. A Job with no labels of its own, or holding
 * its template's (in kube both are then one Go map), ends up with the template's labels. */
static void job_selector(json_object *obj)
{
    if (json_object_get_boolean(fg_json_get(obj, "spec", "manualSelector", NULL)))
        return;
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    const char *uid = fg_json_get_str(obj, "metadata", "uid", NULL);
    struct fg__cow c;
    struct fg__cow_node root;
    fg__cow_init(&c, &root, obj);
    struct fg__cow_node meta = fg__cow_child(&root, "metadata"), spec = fg__cow_child(&root, "spec");
    struct fg__cow_node tpl = fg__cow_child(&spec, "template"), tpl_meta = fg__cow_child(&tpl, "metadata");
    struct fg__cow_node labels = fg__cow_child(&tpl_meta, "labels");
    struct fg__cow_node selector = fg__cow_child(&spec, "selector");
    struct fg__cow_node match = fg__cow_child(&selector, "matchLabels");
    json_object *own = fg_json_get(meta.obj, "labels", NULL);
    bool shared = !json_object_is_type(own, json_type_object) || !json_object_object_length(own) || own == labels.obj;
    static const struct { const char *key; bool uid; } generated[] = {
        { "job-name", false }, { "batch.kubernetes.io/job-name", false },
        { "controller-uid", true }, { "batch.kubernetes.io/controller-uid", true },
    };
    for (size_t i = 0; name && uid && i < sizeof(generated) / sizeof(*generated); i++)
        fg__cow_default_str(&c, &labels, generated[i].key, FG__COW_IF_NIL, generated[i].uid ? uid : name);
    if (uid)
        fg__cow_default_str(&c, &match, "batch.kubernetes.io/controller-uid", FG__COW_IF_NIL, uid);
    if (shared && labels.obj)
        fg__cow_set(&c, &meta, "labels", json_object_get(labels.obj));
    fg__cow_cleanup(&c);
}

/* kube-apiserver's Job update validation: spec.selector and spec.template do not change (kube lets a
 * suspended Job's template change its scheduling directives; here a suspended Job's template may
 * change at all). */
static enum fg_err job_immutable(const struct fg__type *type, json_object *cur, json_object *obj, json_object **out)
{
    static const char *const fields[] = { "selector", "template" };
    bool suspended = json_object_get_boolean(fg_json_get(cur, "spec", "suspend", NULL));
    for (size_t i = 0; i < 2; i++) {
        if (i == 1 && suspended)
            break;
        if (json_object_equal(fg_json_get(cur, "spec", fields[i], NULL), fg_json_get(obj, "spec", fields[i], NULL)))
            continue;
        char field[32];
        snprintf(field, sizeof(field), "spec.%s", fields[i]);
        return fg__write_invalid(out, type, fg_json_get_str(cur, "metadata", "name", NULL), field, "FieldValueInvalid",
                                 "Invalid value: field is immutable");
    }
    return FG_OK;
}

/* What kube-apiserver's strategies and the CRD machinery do between mutation and validation: CRDs
 * checked, custom resources validated against their schemas, new pods Pending, new Jobs selected, a
 * Job's selector and template kept. */
static enum fg_err strategy(const struct fg__type *type, json_object *cur, json_object **obj, json_object **out)
{
    bool core = !type->crd && !*type->group, batch = !type->crd && !strcmp(type->group, "batch");
    if (fg__crd_is_crd_type(type))
        return fg__crd_admit(type, *obj, out);
    if (type->schema)
        return fg__schema_admit(type, obj, out);
    if (!cur && core && !strcmp(type->plural, "pods"))
        pod_pending(*obj);
    else if (!cur && batch && !strcmp(type->plural, "jobs"))
        job_selector(*obj);
    else if (cur && batch && !strcmp(type->plural, "jobs"))
        return job_immutable(type, cur, *obj, out);
    return FG_OK;
}

/* On failure *obj is released. */
static enum fg_err failed(enum fg_err err, json_object **obj)
{
    if (err && *obj) {
        json_object_put(*obj);
        *obj = NULL;
    }
    return err;
}

enum fg_err fg__admit_mutate(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                             json_object **out)
{
    /* a write taking up where it waited for a webhook has done what comes before that webhook */
    bool past_mutation = fg__admission_resuming(st->admission, true);
    bool resuming = past_mutation || fg__admission_resuming(st->admission, false);
    enum fg_err err = FG_OK;
    if (!resuming) {
        fg__defaults_apply(type, *obj);
        err = fg__priority_admit(st, type, cur, *obj, out); /* built-in admission, then webhooks */
    }
    if (!err && !past_mutation)
        err = fg__webhook_admit(st, type, cur, obj, true, out);
    return failed(err, obj);
}

enum fg_err fg__admit_validate(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                               json_object **out)
{
    enum fg_err err = FG_OK;
    if (!fg__admission_resuming(st->admission, true)) /* else the strategy had run too */
        err = strategy(type, cur, obj, out);
    if (!err)
        err = fg__webhook_admit(st, type, cur, obj, false, out);
    return failed(err, obj);
}

enum fg_err fg__admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                      json_object **out)
{
    enum fg_err err = fg__admit_mutate(st, type, cur, obj, out);
    return err ? err : fg__admit_validate(st, type, cur, obj, out);
}
