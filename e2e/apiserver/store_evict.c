/*
 * store_evict — the pods/eviction subresource, honouring PodDisruptionBudgets.
 *
 * An eviction finds the budgets in the pod's namespace whose selector matches the pod (more than one
 * is an error, as in kube-apiserver). A budget whose status was computed for its current generation
 * (status.observedGeneration >= metadata.generation) is trusted and its disruptionsAllowed is
 * decremented on success; otherwise, since the test cluster may run no disruption controller, the
 * allowance is computed here from the live pods: healthy pods (Ready, or Running without a Ready
 * condition) minus the desired number from minAvailable / maxUnavailable (integers or percentages
 * of the matching pods, rounded up). An unhealthy pod may always be evicted. When the budget allows
 * it the pod is deleted (with the eviction's deleteOptions) and the reply is a 201 Success Status;
 * otherwise 429 TooManyRequests with a DisruptionBudget cause.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"
#include "operator/kube/selector.h"
#include "e2e/apiserver/status.h"
#include "e2e/apiserver/store.h"
#include "e2e/apiserver/store_int.h"

/* As kube's disruption controller counts: not being deleted, and Ready (or Running without a Ready
 * condition). */
static bool pod_healthy(json_object *pod)
{
    if (fg_json_get(pod, "metadata", "deletionTimestamp", NULL))
        return false;
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready"))
            return fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    return fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running");
}

/* An int-or-string ("25%") against a total: the count, percentages rounded up. */
static long scaled(json_object *v, long total)
{
    if (json_object_is_type(v, json_type_int))
        return (long)json_object_get_int64(v);
    const char *s = json_object_get_string(v);
    double pct = s ? atof(s) : 0;
    return (long)ceil(pct * (double)total / 100.0);
}

/* How many disruptions the budget allows now; -1 when its selector is unusable. */
static long allowed_now(struct fg__store *st, const struct fg__type *pods, const char *ns, json_object *pdb,
                        struct fg_selector *sel)
{
    int64_t observed = -1, generation = 0, allowed = 0;
    fg_json_get_int64(pdb, &generation, "metadata", "generation", NULL);
    if (fg_json_get_int64(pdb, &observed, "status", "observedGeneration", NULL) && observed >= generation &&
        fg_json_get_int64(pdb, &allowed, "status", "disruptionsAllowed", NULL))
        return (long)allowed;
    struct fg__bucket *b = fg__store_bucket(st, pods);
    char *prefix = fg_asprintf("%s/", ns);
    long expected = 0, healthy = 0;
    for (size_t i = fg__store_lower_bound(b, prefix); i < b->n && fg_str_has_prefix(b->v[i]->key, prefix); i++) {
        if (!fg_selector_match_labels(sel, b->v[i]->obj))
            continue;
        expected++;
        healthy += pod_healthy(b->v[i]->obj);
    }
    free(prefix);
    json_object *min_available = fg_json_get(pdb, "spec", "minAvailable", NULL);
    json_object *max_unavailable = fg_json_get(pdb, "spec", "maxUnavailable", NULL);
    long desired = 0;
    if (max_unavailable)
        desired = expected - scaled(max_unavailable, expected);
    else if (min_available)
        desired = scaled(min_available, expected);
    return healthy - desired > 0 ? healthy - desired : 0;
}

/* Records one disruption on a budget that carries a trusted status. */
static void consume(struct fg__store *st, const struct fg__type *pdbs, json_object *pdb)
{
    int64_t observed = -1, generation = 0, allowed = 0;
    fg_json_get_int64(pdb, &generation, "metadata", "generation", NULL);
    if (!fg_json_get_int64(pdb, &observed, "status", "observedGeneration", NULL) || observed < generation ||
        !fg_json_get_int64(pdb, &allowed, "status", "disruptionsAllowed", NULL))
        return;
    json_object *obj = fg__json_shallow_dup(pdb);
    json_object *status = fg__json_shallow_dup(fg_json_get(pdb, "status", NULL));
    json_object_object_add(status, "disruptionsAllowed", json_object_new_int64(allowed - 1));
    json_object_object_add(obj, "status", status);
    json_object_object_add(obj, "metadata", fg__json_shallow_dup(fg_json_get(pdb, "metadata", NULL)));
    json_object_object_del(fg_json_get(obj, "metadata", NULL), "resourceVersion");
    json_object *out = NULL;
    if (fg__write_commit(st, pdbs, pdb, obj, FG__SCOPE_ALL, &out) != FG_OK)
        abort(); /* no precondition, same name: a commit of a stored object cannot fail */
    json_object_put(out);
}

static enum fg_err refuse(json_object **out, const char *name, const char *pdb_name, const char *why)
{
    json_object *details = fg__status_details(name, "", "pods");
    char *msg = fg_asprintf("The disruption budget %s %s", pdb_name, why);
    fg__status_add_cause(details, "DisruptionBudget", msg, "");
    free(msg);
    return fg__write_fail(out, FG_E_KUBE_TOO_MANY_REQUESTS, NULL, NULL, details,
                          "Cannot evict pod as it would violate the pod's disruption budget.");
}

enum fg_err fg__store_evict(struct fg__store *st, const struct fg__type *pods, const char *ns, const char *name,
                            json_object *eviction, json_object **out)
{
    const struct fg__entry *pod = fg__store_get(st, pods, ns, name);
    if (!pod)
        return fg__write_not_found(out, pods, name);
    const struct fg__type *pdbs = fg__registry_find(st->reg, "policy", "v1", "poddisruptionbudgets");
    json_object *budget = NULL;
    long allowed = 0;
    struct fg__bucket *b = pdbs ? fg__store_bucket(st, pdbs) : NULL;
    char *prefix = fg_asprintf("%s/", ns);
    for (size_t i = b ? fg__store_lower_bound(b, prefix) : 0; b && i < b->n && fg_str_has_prefix(b->v[i]->key, prefix);
         i++) {
        struct fg_selector sel;
        json_object *selector = fg_json_get(b->v[i]->obj, "spec", "selector", NULL);
        if (!selector || fg_selector_from_json(selector, &sel, NULL) != FG_OK)
            continue; /* a budget without a usable selector selects no pod */
        if (fg_selector_match_labels(&sel, pod->obj)) {
            if (budget) {
                fg_selector_cleanup(&sel);
                free(prefix);
                return fg__write_fail(out, FG_E_KUBE_INTERNAL, NULL, NULL, NULL, "This pod has more than one "
                                      "PodDisruptionBudget, which the eviction subresource does not support.");
            }
            budget = b->v[i]->obj;
            allowed = allowed_now(st, pods, ns, budget, &sel);
        }
        fg_selector_cleanup(&sel);
    }
    free(prefix);
    if (budget && pod_healthy(pod->obj)) {
        const char *pdb_name = fg_json_get_str(budget, "metadata", "name", NULL);
        if (allowed <= 0)
            return refuse(out, name, pdb_name ? pdb_name : "", "allows no disruption now");
        consume(st, pdbs, budget);
    }
    json_object *deleted = NULL;
    enum fg_err err = fg__store_delete(st, pods, ns, name, fg_json_get(eviction, "deleteOptions", NULL), &deleted);
    if (err) {
        *out = deleted;
        return err;
    }
    json_object_put(deleted);
    *out = fg__status_success(201);
    return FG_OK;
}
