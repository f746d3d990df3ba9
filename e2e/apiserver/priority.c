/*
 * priority — kube-apiserver's `Priority` admission plugin, for pods.
 *
 * On create it resolves spec.priorityClassName to spec.priority and spec.preemptionPolicy from the
 * stored PriorityClass; a pod naming no class gets the global default one (globalDefault: true; the
 * lowest value when several claim it), whose name it then carries, or, when there is none, priority
 * 0 and PreemptLowerPriority. A class that does not exist, a spec.priority or a
 * spec.preemptionPolicy other than the computed one is 403 Forbidden with kube's wording. On update
 * a pod that leaves out priority or preemptionPolicy keeps the stored ones, as the plugin ensures
 * there too. It runs as kube's built-in mutating admission does: after defaulting and before the
 * mutating webhooks (admit.c).
 */
#include "e2e/apiserver/admit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "e2e/apiserver/cow.h"
#include "e2e/apiserver/store_int.h"

#define NO_CLASS_PREEMPTION "PreemptLowerPriority"

/* What a pod's priority resolves to; the strings are borrowed from a stored class or static. */
struct resolved {
    const char *class_name; /* NULL: the pod names none and there is no default class */
    int64_t value;
    const char *preemption; /* NULL: the class has none */
};

static void from_class(json_object *pc, struct resolved *r)
{
    r->class_name = fg_json_get_str(pc, "metadata", "name", NULL);
    r->value = 0;
    fg_json_get_int64(pc, &r->value, "value", NULL);
    r->preemption = fg_json_get_str(pc, "preemptionPolicy", NULL);
}

/* The global default class (the lowest value among several), or priority 0 without a class. */
static void default_priority(struct fg__bucket *classes, struct resolved *r)
{
    *r = (struct resolved){ .preemption = NO_CLASS_PREEMPTION };
    json_object *best = NULL;
    int64_t best_value = 0;
    for (size_t i = 0; classes && i < classes->n; i++) {
        json_object *pc = classes->v[i]->obj;
        int64_t value = 0;
        fg_json_get_int64(pc, &value, "value", NULL);
        if (json_object_get_boolean(fg_json_get(pc, "globalDefault", NULL)) && (!best || value < best_value)) {
            best = pc;
            best_value = value;
        }
    }
    if (best)
        from_class(best, r);
}

static enum fg_err forbidden(json_object **out, const struct fg__type *pods, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum fg_err forbidden(json_object **out, const struct fg__type *pods, const char *name, const char *fmt, ...)
{
    char why[FG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return fg__write_fail(out, FG_E_KUBE_FORBIDDEN, pods, name, NULL, "pods \"%s\" is forbidden: %s", name, why);
}

static enum fg_err admit_create(struct fg__store *st, const struct fg__type *pods, json_object *obj, json_object **out)
{
    /* the name is not generated yet: kube's admission errors name the generateName prefix instead */
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    const char *prefix = fg_json_get_str(obj, "metadata", "generateName", NULL);
    name = name && *name ? name : prefix && *prefix ? prefix : "Unknown";
    const struct fg__type *pct = fg__registry_find(st->reg, "scheduling.k8s.io", "v1", "priorityclasses");
    struct fg__bucket *classes = pct ? fg__store_bucket(st, pct) : NULL;
    const char *class_name = fg_json_get_str(obj, "spec", "priorityClassName", NULL);
    struct resolved r;
    if (!class_name || !*class_name) {
        default_priority(classes, &r);
    } else {
        const struct fg__entry *pc = pct ? fg__store_get(st, pct, NULL, class_name) : NULL;
        if (!pc)
            return forbidden(out, pods, name, "no PriorityClass with name %s was found", class_name);
        from_class(pc->obj, &r);
    }
    json_object *priority = fg_json_get(obj, "spec", "priority", NULL);
    if (priority && json_object_get_int64(priority) != r.value)
        return forbidden(out, pods, name, "the integer value of priority (%" PRId64 ") must not be provided in pod "
                         "spec; priority admission controller computed %" PRId64 " from the given PriorityClass name",
                         json_object_get_int64(priority), r.value);
    const char *policy = fg_json_get_str(obj, "spec", "preemptionPolicy", NULL);
    if (r.preemption && policy && strcmp(policy, r.preemption))
        return forbidden(out, pods, name, "the string value of PreemptionPolicy (%s) must not be provided in pod "
                         "spec; priority admission controller computed %s from the given PriorityClass name", policy,
                         r.preemption);
    struct fg__cow c;
    struct fg__cow_node root;
    fg__cow_init(&c, &root, obj);
    struct fg__cow_node spec = fg__cow_child(&root, "spec");
    if (r.class_name)
        fg__cow_set(&c, &spec, "priorityClassName", json_object_new_string(r.class_name));
    fg__cow_set(&c, &spec, "priority", json_object_new_int64(r.value));
    if (r.preemption)
        fg__cow_set(&c, &spec, "preemptionPolicy", json_object_new_string(r.preemption));
    fg__cow_cleanup(&c);
    return FG_OK;
}

/* An update keeps the stored priority and preemptionPolicy where the new pod leaves them out. */
static void admit_update(json_object *cur, json_object *obj)
{
    static const char *const kept[] = { "priority", "preemptionPolicy" };
    struct fg__cow c;
    struct fg__cow_node root;
    fg__cow_init(&c, &root, obj);
    struct fg__cow_node spec = fg__cow_child(&root, "spec");
    for (size_t i = 0; i < sizeof(kept) / sizeof(*kept); i++) {
        json_object *old = fg_json_get(cur, "spec", kept[i], NULL);
        if (old && fg__cow_unset(&spec, kept[i], FG__COW_IF_NIL))
            fg__cow_set(&c, &spec, kept[i], json_object_get(old));
    }
    fg__cow_cleanup(&c);
}

enum fg_err fg__priority_admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object *obj,
                               json_object **out)
{
    if (*type->group || strcmp(type->plural, "pods"))
        return FG_OK;
    if (cur) {
        admit_update(cur, obj);
        return FG_OK;
    }
    return admit_create(st, type, obj, out);
}
