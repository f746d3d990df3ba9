/* resources — ResourceLists and pod requests in milli-units; see resources.h. */
#include "operator/kube/resources.h"

#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "operator/kube/quantity.h"

static struct fg_resource_amount *find(const struct fg_resources *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].name, name))
            return (struct fg_resource_amount *)&r->v[i];
    return NULL;
}

int64_t fg_resources_get(const struct fg_resources *r, const char *name)
{
    const struct fg_resource_amount *a = find(r, name);
    return a ? a->milli : 0;
}

/* The slot for name, made when absent; NULL when it cannot be. */
static struct fg_resource_amount *slot(struct fg_resources *r, const char *name)
{
    struct fg_resource_amount *a = find(r, name);
    if (a)
        return a;
    if (r->n == FG_RESOURCES_MAX || strlen(name) >= FG_RESOURCE_NAME_MAX)
        return NULL;
    a = &r->v[r->n++];
    strcpy(a->name, name);
    a->milli = 0;
    return a;
}

enum fg_err fg_resources_add(struct fg_resources *r, const char *name, int64_t milli)
{
    const struct fg_resource_amount *existing = find(r, name);
    int64_t sum;
    if (__builtin_add_overflow(existing ? existing->milli : 0, milli, &sum))
        return FG_E_TOO_BIG;
    struct fg_resource_amount *a = slot(r, name);
    if (!a)
        return FG_E_TOO_BIG;
    a->milli = sum;
    return FG_OK;
}

enum fg_err fg_resources_set(struct fg_resources *r, const char *name, int64_t milli)
{
    struct fg_resource_amount *a = slot(r, name);
    if (!a)
        return FG_E_TOO_BIG;
    a->milli = milli;
    return FG_OK;
}

void fg_resources_sum(struct fg_resources *acc, const struct fg_resources *x)
{
    for (size_t i = 0; i < x->n; i++) {
        struct fg_resource_amount *a = slot(acc, x->v[i].name);
        if (a && __builtin_add_overflow(a->milli, x->v[i].milli, &a->milli))
            a->milli = INT64_MAX;
    }
}

void fg_resources_sub(struct fg_resources *acc, const struct fg_resources *x)
{
    for (size_t i = 0; i < x->n; i++) {
        struct fg_resource_amount *a = slot(acc, x->v[i].name);
        if (a)
            a->milli -= x->v[i].milli;
    }
}

/* acc[name] = max(acc[name], x[name]) for every name of x. */
static void resources_max(struct fg_resources *acc, const struct fg_resources *x)
{
    for (size_t i = 0; i < x->n; i++) {
        struct fg_resource_amount *a = slot(acc, x->v[i].name);
        if (a && x->v[i].milli > a->milli)
            a->milli = x->v[i].milli;
    }
}

enum fg_err fg_resources_from_json(json_object *list, struct fg_resources *out, char *errmsg)
{
    memset(out, 0, sizeof *out);
    if (!list)
        return FG_OK;
    if (!json_object_is_type(list, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "a resource list must be an object");
    json_object_object_foreach(list, name, value) {
        int64_t milli;
        char why[FG_ERRMSG_MAX];
        enum fg_err err = fg_quantity_json(value, &milli, why);
        if (!err && fg_resources_set(out, name, milli) != FG_OK)
            err = fg_errmsg(why, FG_E_TOO_BIG, "too many resources or a name too long");
        if (err)
            return fg_errmsg(errmsg, err, "%s: %s", name, why);
    }
    return FG_OK;
}

json_object *fg_resources_to_json(const struct fg_resources *r)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; i < r->n; i++) {
        char q[FG_QUANTITY_MAX];
        fg_quantity_format(r->v[i].milli, q);
        json_object_object_add(o, r->v[i].name, json_object_new_string(q));
    }
    return o;
}

/* kube-scheduler's defaults for a container that requests no cpu or memory (NonMissingContainerRequests). */
#define NONZERO_CPU_MILLI 100ll
#define NONZERO_MEMORY_MILLI (200ll * 1024 * 1024 * 1000)

/* One container's requests: requests, with a limit standing in for a request it lacks, and with
 * nonzero, the scoring defaults for cpu and memory still missing. */
static enum fg_err container_requests(json_object *c, bool nonzero, struct fg_resources *out, char *errmsg)
{
    struct fg_resources limits;
    enum fg_err err = fg_resources_from_json(fg_json_get(c, "resources", "requests", NULL), out, errmsg);
    if (!err)
        err = fg_resources_from_json(fg_json_get(c, "resources", "limits", NULL), &limits, errmsg);
    for (size_t i = 0; !err && i < limits.n; i++)
        if (!find(out, limits.v[i].name) && fg_resources_set(out, limits.v[i].name, limits.v[i].milli))
            err = fg_errmsg(errmsg, FG_E_TOO_BIG, "too many resources");
    if (!err && nonzero && ((!find(out, "cpu") && fg_resources_set(out, "cpu", NONZERO_CPU_MILLI)) ||
                            (!find(out, "memory") && fg_resources_set(out, "memory", NONZERO_MEMORY_MILLI))))
        err = fg_errmsg(errmsg, FG_E_TOO_BIG, "too many resources");
    return err;
}

static enum fg_err named_error(char *errmsg, enum fg_err err, const char *list, size_t i, json_object *c,
                               const char *why)
{
    const char *name = fg_json_get_str(c, "name", NULL);
    return fg_errmsg(errmsg, err, "%s[%zu] (%s): %s", list, i, name ? name : "unnamed", why);
}

static enum fg_err pod_requests(json_object *pod, bool nonzero, struct fg_resources *out, char *errmsg)
{
    char why[FG_ERRMSG_MAX];
    struct fg_resources one, sidecars = { 0 }, init_peak = { 0 };
    memset(out, 0, sizeof *out);
    json_object *containers = fg_json_get(pod, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(containers); i++) {
        json_object *c = json_object_array_get_idx(containers, i);
        enum fg_err err = container_requests(c, nonzero, &one, why);
        if (err)
            return named_error(errmsg, err, "containers", i, c, why);
        fg_resources_sum(out, &one);
    }
    json_object *inits = fg_json_get(pod, "spec", "initContainers", NULL);
    for (size_t i = 0; i < fg_json_array_len(inits); i++) {
        json_object *c = json_object_array_get_idx(inits, i);
        enum fg_err err = container_requests(c, nonzero, &one, why);
        if (err)
            return named_error(errmsg, err, "initContainers", i, c, why);
        if (fg_str_eq(fg_json_get_str(c, "restartPolicy", NULL), "Always")) {
            fg_resources_sum(&sidecars, &one);    /* runs beside everything started after it */
            one = sidecars;
        } else {
            fg_resources_sum(&one, &sidecars);
        }
        resources_max(&init_peak, &one);
    }
    fg_resources_sum(out, &sidecars);
    resources_max(out, &init_peak);
    struct fg_resources overhead;
    enum fg_err err = fg_resources_from_json(fg_json_get(pod, "spec", "overhead", NULL), &overhead, why);
    if (err)
        return fg_errmsg(errmsg, err, "overhead: %s", why);
    fg_resources_sum(out, &overhead);
    return FG_OK;
}

enum fg_err fg_pod_requests(json_object *pod, struct fg_resources *out, char *errmsg)
{
    return pod_requests(pod, false, out, errmsg);
}

enum fg_err fg_pod_requests_nonzero(json_object *pod, struct fg_resources *out, char *errmsg)
{
    return pod_requests(pod, true, out, errmsg);
}

const char *fg_resources_exceeds(const struct fg_resources *request, const struct fg_resources *available)
{
    for (size_t i = 0; i < request->n; i++)
        if (request->v[i].milli > 0 && request->v[i].milli > fg_resources_get(available, request->v[i].name))
            return request->v[i].name;
    return NULL;
}
