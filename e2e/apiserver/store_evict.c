/*
 * store_evict — the pods/eviction subresource, honouring PodDisruptionBudgets as kube-apiserver's
 * eviction REST does.
 *
 * A pod that is Succeeded, Failed, Pending or already being deleted goes without any budget being
 * read. Otherwise the budgets in the pod's namespace whose selector matches the pod are found (more
 * than one is a 500, as in kube-apiserver). A budget whose status was computed for its current
 * generation (status.observedGeneration >= metadata.generation) is trusted: its disruptionsAllowed,
 * currentHealthy and desiredHealthy are read, and disruptionsAllowed is decremented on success;
 * otherwise, since the test cluster may run no disruption controller, they are computed here from
 * the live pods as that controller does: healthy pods are those not being deleted whose Ready
 * condition is True; desired is minAvailable, or the matching pods less maxUnavailable (integers
 * or percentages of the matching pods, rounded up). A pod that is not Ready goes without consuming
 * the budget when spec.unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the default)
 * when the budget is met (currentHealthy >= desiredHealthy > 0); any other eviction needs a
 * disruption allowed. When allowed the pod is deleted (with the eviction's deleteOptions) and the
 * reply is a 201 Success Status; otherwise 429 TooManyRequests with a DisruptionBudget cause. A dry
 * run (st->dry_run) checks all of it and writes nothing.
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

/* Is the pod's Ready condition True (kube's IsPodReady)? */
static bool pod_ready(json_object *pod)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready"))
            return fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    return false;
}

/* May the pod go without its budgets being read (kube's canIgnorePDB)? */
static bool budget_ignored(json_object *pod)
{
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    return fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed") || fg_str_eq(phase, "Pending") ||
           fg_json_get(pod, "metadata", "deletionTimestamp", NULL);
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

/* A budget's numbers, as its status carries them. */
struct budget_now {
    long allowed, current, desired;
};

/* Does the budget carry a status computed for its current generation? */
static bool status_trusted(json_object *pdb)
{
    int64_t observed = -1, generation = 0, allowed = 0;
    fg_json_get_int64(pdb, &generation, "metadata", "generation", NULL);
    return fg_json_get_int64(pdb, &observed, "status", "observedGeneration", NULL) && observed >= generation &&
           fg_json_get_int64(pdb, &allowed, "status", "disruptionsAllowed", NULL);
}

static long status_long(json_object *pdb, const char *field)
{
    int64_t v = 0;
    fg_json_get_int64(pdb, &v, "status", field, NULL);
    return (long)v;
}

/* The budget's numbers now: its trusted status, else computed from the live pods it selects as
 * kube's disruption controller computes them. */
static struct budget_now budget_now(struct fg__store *st, const struct fg__type *pods, const char *ns,
                                    json_object *pdb, struct fg_selector *sel)
{
    if (status_trusted(pdb))
        return (struct budget_now){ status_long(pdb, "disruptionsAllowed"), status_long(pdb, "currentHealthy"),
                                    status_long(pdb, "desiredHealthy") };
    struct fg__bucket *b = fg__store_bucket(st, pods);
    char *prefix = fg_asprintf("%s/", ns);
    long expected = 0, healthy = 0;
    for (size_t i = fg__store_lower_bound(b, prefix); i < b->n && fg_str_has_prefix(b->v[i]->key, prefix); i++) {
        json_object *pod = b->v[i]->obj;
        if (!fg_selector_match_labels(sel, pod))
            continue;
        expected++;
        healthy += !fg_json_get(pod, "metadata", "deletionTimestamp", NULL) && pod_ready(pod);
    }
    free(prefix);
    json_object *min_available = fg_json_get(pdb, "spec", "minAvailable", NULL);
    json_object *max_unavailable = fg_json_get(pdb, "spec", "maxUnavailable", NULL);
    long desired = 0;
    if (max_unavailable)
        desired = expected - scaled(max_unavailable, expected);
    else if (min_available)
        desired = scaled(min_available, expected);
    if (desired < 0)
        desired = 0;
    return (struct budget_now){ healthy > desired ? healthy - desired : 0, healthy, desired };
}

/* Records one disruption on a budget that carries a trusted status. */
static void consume(struct fg__store *st, const struct fg__type *pdbs, json_object *pdb)
{
    if (!status_trusted(pdb))
        return;
    long allowed = status_long(pdb, "disruptionsAllowed");
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

static enum fg_err refuse(json_object **out, const char *name, const char *pdb_name, const struct budget_now *now)
{
    json_object *details = fg__status_details(name, "", "pods");
    char *msg = fg_asprintf("The disruption budget %s needs %ld healthy pods and has %ld currently", pdb_name,
                            now->desired, now->current);
    fg__status_add_cause(details, "DisruptionBudget", msg, "");
    free(msg);
    return fg__write_fail(out, FG_E_KUBE_TOO_MANY_REQUESTS, NULL, NULL, details,
                          "Cannot evict pod as it would violate the pod's disruption budget.");
}

/* The one budget in ns selecting the pod (*budget NULL when none) and its numbers; a 500 when
 * several do, as the eviction subresource supports one. */
static enum fg_err find_budget(struct fg__store *st, const struct fg__type *pods, const struct fg__type *pdbs,
                               const char *ns, json_object *pod, json_object **budget, struct budget_now *now,
                               json_object **out)
{
    *budget = NULL;
    struct fg__bucket *b = pdbs ? fg__store_bucket(st, pdbs) : NULL;
    char *prefix = fg_asprintf("%s/", ns);
    enum fg_err err = FG_OK;
    for (size_t i = b ? fg__store_lower_bound(b, prefix) : 0;
         !err && b && i < b->n && fg_str_has_prefix(b->v[i]->key, prefix); i++) {
        struct fg_selector sel;
        json_object *selector = fg_json_get(b->v[i]->obj, "spec", "selector", NULL);
        if (!selector || fg_selector_from_json(selector, &sel, NULL) != FG_OK)
            continue; /* a budget without a usable selector selects no pod */
        if (fg_selector_match_labels(&sel, pod) && *budget) {
            err = fg__write_fail(out, FG_E_KUBE_INTERNAL, NULL, NULL, NULL, "This pod has more than one "
                                 "PodDisruptionBudget, which the eviction subresource does not support.");
        } else if (fg_selector_match_labels(&sel, pod)) {
            *budget = b->v[i]->obj;
            *now = budget_now(st, pods, ns, *budget, &sel);
        }
        fg_selector_cleanup(&sel);
    }
    free(prefix);
    return err;
}

/* May a pod that is not Ready go without consuming the budget? */
static bool unready_may_go(json_object *pdb, const struct budget_now *now)
{
    if (fg_str_eq(fg_json_get_str(pdb, "spec", "unhealthyPodEvictionPolicy", NULL), "AlwaysAllow"))
        return true;
    return now->current >= now->desired && now->desired > 0; /* IfHealthyBudget: the budget is met */
}

enum fg_err fg__store_evict(struct fg__store *st, const struct fg__type *pods, const char *ns, const char *name,
                            json_object *eviction, json_object **out)
{
    const struct fg__entry *pod = fg__store_get(st, pods, ns, name);
    if (!pod)
        return fg__write_not_found(out, pods, name);
    if (!budget_ignored(pod->obj)) {
        const struct fg__type *pdbs = fg__registry_find(st->reg, "policy", "v1", "poddisruptionbudgets");
        json_object *budget = NULL;
        struct budget_now now = { 0, 0, 0 };
        enum fg_err err = find_budget(st, pods, pdbs, ns, pod->obj, &budget, &now, out);
        if (err)
            return err;
        bool spared = budget && !pod_ready(pod->obj) && unready_may_go(budget, &now); /* not counted healthy */
        if (budget && !spared) {
            const char *pdb_name = fg_json_get_str(budget, "metadata", "name", NULL);
            if (now.allowed <= 0)
                return refuse(out, name, pdb_name ? pdb_name : "", &now);
            consume(st, pdbs, budget);
        }
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
