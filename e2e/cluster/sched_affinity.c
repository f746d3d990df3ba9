/*
 * sched_affinity — kube-scheduler's InterPodAffinity plugin: required terms as a filter, preferred
 * terms (and the symmetry of existing pods' terms) as a score.
 *
 * A term selects pods by label selector (none: no pod) in namespaces: those it lists, every one for
 * an empty namespaceSelector, else the namespace of the pod that carries it. A non-empty
 * namespaceSelector would need the namespaces' labels, which this scheduler does not watch: such a
 * term selects only in the namespaces it lists. Topology is the value of the term's topologyKey label
 * on the node a pod runs on; a node without the label is in no domain.
 *
 * PreFilter counts, per (topologyKey, value), the placed pods that match all of the incoming pod's
 * required affinity terms, those that match each of its required anti-affinity terms, and the
 * placed pods whose own required anti-affinity terms match the incoming pod. Filter then applies
 * kube's three checks in its order: affinity (UnschedulableAndUnresolvable, with kube's exception
 * for the first pod of a group that matches its own terms), anti-affinity and existing pods'
 * anti-affinity (Unschedulable, so preemption may help). Preemption takes victims out of the counts
 * and puts them back (fg_sim_sched_affinity_update), as kube's PreFilter extensions do.
 *
 * Score sums, per topology domain, the weights of the incoming pod's preferred terms that placed
 * pods match (anti-affinity negative), of placed pods' preferred terms that the incoming pod matches,
 * and 1 (hardPodAffinityWeight) per placed pod's required affinity term it matches; a node scores
 * the sum over the domains it is in. Counts are kept in JSON objects keyed "key\001value".
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"

#define HARD_POD_AFFINITY_WEIGHT 1

struct fg_sim_sched_affinity {
    const struct fg_sim_sched_pod *pod;
    json_object *affinity;          /* pairs → placed pods matching all required affinity terms */
    json_object *anti;              /* pairs → placed pods matching a required anti-affinity term */
    json_object *existing_anti;     /* pairs → placed pods whose required anti-affinity selects the pod */
};

/* ---- terms ---- */

static enum fg_err parse_term(json_object *j, int64_t weight, const char *ns, struct fg_sim_sched_terms *out,
                              char *errmsg)
{
    struct fg_sim_sched_term t = { .ns = ns, .weight = weight };
    t.topology_key = fg_json_get_str(j, "topologyKey", NULL);
    json_object *list = fg_json_get(j, "namespaces", NULL);
    json_object *ns_sel = fg_json_get(j, "namespaceSelector", NULL);
    t.all_namespaces = json_object_is_type(ns_sel, json_type_object) && json_object_object_length(ns_sel) == 0;
    if (!t.all_namespaces && fg_json_array_len(list))
        t.namespaces = json_object_get(list);
    else if (!t.all_namespaces && ns_sel)
        t.namespaces = json_object_new_array();   /* namespaces by selector only: none known */
    json_object *sel = fg_json_get(j, "labelSelector", NULL);
    t.matches_nothing = !json_object_is_type(sel, json_type_object);
    if (!t.matches_nothing && fg_selector_from_json(sel, &t.selector, errmsg)) {
        json_object_put(t.namespaces);
        return FG_E_PARSE;
    }
    out->v = fg_realloc(out->v, (out->n + 1) * sizeof *out->v);
    out->v[out->n++] = t;
    return FG_OK;
}

static enum fg_err parse_list(json_object *list, bool preferred, const char *ns, struct fg_sim_sched_terms *out,
                              char *errmsg)
{
    enum fg_err err = FG_OK;
    for (size_t i = 0; i < fg_json_array_len(list) && !err; i++) {
        json_object *j = json_object_array_get_idx(list, i);
        int64_t weight = 0;
        if (preferred)
            fg_json_get_int64(j, &weight, "weight", NULL);
        err = parse_term(preferred ? fg_json_get(j, "podAffinityTerm", NULL) : j, weight, ns, out, errmsg);
    }
    return err;
}

enum fg_err fg_sim_sched_terms_parse(struct fg_sim_sched_pod *p, char *errmsg)
{
    json_object *a = fg_json_get(p->obj, "spec", "affinity", "podAffinity", NULL);
    json_object *anti = fg_json_get(p->obj, "spec", "affinity", "podAntiAffinity", NULL);
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err;
    if ((err = parse_list(fg_json_get(a, "requiredDuringSchedulingIgnoredDuringExecution", NULL), false, p->ns,
                          &p->affinity, why)) ||
        (err = parse_list(fg_json_get(a, "preferredDuringSchedulingIgnoredDuringExecution", NULL), true, p->ns,
                          &p->preferred_affinity, why)) ||
        (err = parse_list(fg_json_get(anti, "requiredDuringSchedulingIgnoredDuringExecution", NULL), false, p->ns,
                          &p->anti_affinity, why)) ||
        (err = parse_list(fg_json_get(anti, "preferredDuringSchedulingIgnoredDuringExecution", NULL), true, p->ns,
                          &p->preferred_anti_affinity, why)))
        return fg_errmsg(errmsg, err, "pod %s: affinity: %s", p->key, why);
    return FG_OK;
}

static void terms_cleanup(struct fg_sim_sched_terms *t)
{
    for (size_t i = 0; i < t->n; i++) {
        fg_selector_cleanup(&t->v[i].selector);
        json_object_put(t->v[i].namespaces);
    }
    free(t->v);
    memset(t, 0, sizeof *t);
}

void fg_sim_sched_terms_cleanup(struct fg_sim_sched_pod *p)
{
    terms_cleanup(&p->affinity);
    terms_cleanup(&p->preferred_affinity);
    terms_cleanup(&p->anti_affinity);
    terms_cleanup(&p->preferred_anti_affinity);
}

static bool namespace_selected(const struct fg_sim_sched_term *t, const char *ns)
{
    if (t->all_namespaces)
        return true;
    if (!t->namespaces)
        return fg_str_eq(t->ns, ns);
    for (size_t i = 0; i < fg_json_array_len(t->namespaces); i++)
        if (fg_str_eq(json_object_get_string(json_object_array_get_idx(t->namespaces, i)), ns))
            return true;
    return false;
}

bool fg_sim_sched_term_matches(const struct fg_sim_sched_term *t, const struct fg_sim_sched_pod *pod)
{
    return !t->matches_nothing && namespace_selected(t, pod->ns) && fg_selector_match_labels(&t->selector, pod->obj);
}

/* ---- counts by topology pair ---- */

static const char *label(const struct fg_sim_sched_node *n, const char *key)
{
    return key ? fg_json_get_str(n->obj, "metadata", "labels", key, NULL) : NULL;
}

static int64_t count_get(json_object *counts, const char *key, const char *value)
{
    char *pair = fg_asprintf("%s\001%s", key, value);
    json_object *v = NULL;
    int64_t n = json_object_object_get_ex(counts, pair, &v) ? json_object_get_int64(v) : 0;
    free(pair);
    return n;
}

/* counts[(key, n's value of key)] += delta, deleting zero entries; nothing when n lacks the label. */
static void count_add(json_object *counts, const struct fg_sim_sched_node *n, const char *key, int64_t delta)
{
    const char *value = label(n, key);
    if (!value || !delta)
        return;
    char *pair = fg_asprintf("%s\001%s", key, value);
    json_object *v = NULL;
    int64_t total = (json_object_object_get_ex(counts, pair, &v) ? json_object_get_int64(v) : 0) + delta;
    if (total)
        json_object_object_add(counts, pair, json_object_new_int64(total));
    else
        json_object_object_del(counts, pair);
    free(pair);
}

static bool matches_all(const struct fg_sim_sched_terms *terms, const struct fg_sim_sched_pod *pod)
{
    for (size_t i = 0; i < terms->n; i++)
        if (!fg_sim_sched_term_matches(&terms->v[i], pod))
            return false;
    return terms->n > 0;
}

void fg_sim_sched_affinity_update(struct fg_sim_sched_affinity *a, const struct fg_sim_sched_pod *other,
                                  const struct fg_sim_sched_node *n, int sign)
{
    const struct fg_sim_sched_pod *pod = a->pod;
    if (matches_all(&pod->affinity, other))
        for (size_t i = 0; i < pod->affinity.n; i++)
            count_add(a->affinity, n, pod->affinity.v[i].topology_key, sign);
    for (size_t i = 0; i < pod->anti_affinity.n; i++)
        if (fg_sim_sched_term_matches(&pod->anti_affinity.v[i], other))
            count_add(a->anti, n, pod->anti_affinity.v[i].topology_key, sign);
    for (size_t i = 0; i < other->anti_affinity.n; i++)
        if (fg_sim_sched_term_matches(&other->anti_affinity.v[i], pod))
            count_add(a->existing_anti, n, other->anti_affinity.v[i].topology_key, sign);
}

struct fg_sim_sched_affinity *fg_sim_sched_affinity_new(const struct fg_sim_sched_snapshot *s,
                                                        const struct fg_sim_sched_pod *pod)
{
    bool incoming = pod->affinity.n || pod->anti_affinity.n;
    if (!incoming && !s->naffinity)
        return NULL;
    struct fg_sim_sched_affinity *a = fg_calloc(1, sizeof *a);
    a->pod = pod;
    a->affinity = json_object_new_object();
    a->anti = json_object_new_object();
    a->existing_anti = json_object_new_object();
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct fg_sim_sched_node *n = s->nodes[i];
        if (!incoming && !n->naffinity)
            continue;
        for (size_t j = 0; j < n->npods; j++)
            fg_sim_sched_affinity_update(a, n->pods[j], n, 1);
    }
    return a;
}

void fg_sim_sched_affinity_free(struct fg_sim_sched_affinity *a)
{
    if (!a)
        return;
    json_object_put(a->affinity);
    json_object_put(a->anti);
    json_object_put(a->existing_anti);
    free(a);
}

/* ---- Filter ---- */

static bool satisfies_affinity(const struct fg_sim_sched_affinity *a, const struct fg_sim_sched_node *n)
{
    const struct fg_sim_sched_terms *terms = &a->pod->affinity;
    bool pods_exist = true;
    for (size_t i = 0; i < terms->n; i++) {
        const char *value = label(n, terms->v[i].topology_key);
        if (!value)
            return false;   /* every topology label must exist on the node */
        if (count_get(a->affinity, terms->v[i].topology_key, value) <= 0)
            pods_exist = false;
    }
    /* the first pod of a group with affinity to itself may go anywhere its topology exists */
    return pods_exist || (json_object_object_length(a->affinity) == 0 && matches_all(terms, a->pod));
}

static bool satisfies_anti_affinity(const struct fg_sim_sched_affinity *a, const struct fg_sim_sched_node *n)
{
    const struct fg_sim_sched_terms *terms = &a->pod->anti_affinity;
    for (size_t i = 0; i < terms->n && json_object_object_length(a->anti); i++) {
        const char *value = label(n, terms->v[i].topology_key);
        if (value && count_get(a->anti, terms->v[i].topology_key, value) > 0)
            return false;
    }
    return true;
}

static bool satisfies_existing_anti_affinity(const struct fg_sim_sched_affinity *a, const struct fg_sim_sched_node *n)
{
    if (!json_object_object_length(a->existing_anti))
        return true;
    json_object *labels = fg_json_get(n->obj, "metadata", "labels", NULL);
    if (!json_object_is_type(labels, json_type_object))
        return true;
    json_object_object_foreach(labels, key, value) {
        if (count_get(a->existing_anti, key, json_object_get_string(value)) > 0)
            return false;
    }
    return true;
}

void fg_sim_sched_affinity_filter(const struct fg_sim_sched_affinity *a, const struct fg_sim_sched_node *n,
                                  struct fg_sim_sched_status *st)
{
    st->plugin = FG_SIM_SCHED_POD_AFFINITY;
    if (a->pod->affinity.n && !satisfies_affinity(a, n)) {
        st->code = FG_SIM_SCHED_UNRESOLVABLE;
        fg_sim_sched_status_add(st, "node(s) didn't match pod affinity rules");
    } else if (!satisfies_anti_affinity(a, n)) {
        st->code = FG_SIM_SCHED_UNSCHEDULABLE;
        fg_sim_sched_status_add(st, "node(s) didn't match pod anti-affinity rules");
    } else if (!satisfies_existing_anti_affinity(a, n)) {
        st->code = FG_SIM_SCHED_UNSCHEDULABLE;
        fg_sim_sched_status_add(st, "node(s) didn't satisfy existing pods anti-affinity rules");
    }
}

/* ---- Score ---- */

static void score_terms(json_object *scores, const struct fg_sim_sched_terms *terms, const struct fg_sim_sched_pod *target,
                        const struct fg_sim_sched_node *n, int64_t fixed_weight, int sign)
{
    for (size_t i = 0; i < terms->n; i++)
        if (fg_sim_sched_term_matches(&terms->v[i], target))
            count_add(scores, n, terms->v[i].topology_key, sign * (fixed_weight ? fixed_weight : terms->v[i].weight));
}

/* kube's processExistingPod: what `existing` on n adds to the domains' scores for pod. */
static void score_existing(json_object *scores, const struct fg_sim_sched_pod *pod,
                           const struct fg_sim_sched_pod *existing, const struct fg_sim_sched_node *n)
{
    json_object *labels = fg_json_get(n->obj, "metadata", "labels", NULL);
    if (!json_object_is_type(labels, json_type_object) || !json_object_object_length(labels))
        return;
    score_terms(scores, &pod->preferred_affinity, existing, n, 0, 1);
    score_terms(scores, &pod->preferred_anti_affinity, existing, n, 0, -1);
    score_terms(scores, &existing->affinity, pod, n, HARD_POD_AFFINITY_WEIGHT, 1);
    score_terms(scores, &existing->preferred_affinity, pod, n, 0, 1);
    score_terms(scores, &existing->preferred_anti_affinity, pod, n, 0, -1);
}

bool fg_sim_sched_affinity_score(const struct fg_sim_sched_snapshot *s, const struct fg_sim_sched_pod *pod,
                                 struct fg_sim_sched_node *const *feasible, size_t n, int64_t *out)
{
    bool constraints = pod->preferred_affinity.n || pod->preferred_anti_affinity.n;
    if (!constraints && !s->naffinity)
        return false;
    json_object *scores = json_object_new_object();
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct fg_sim_sched_node *node = s->nodes[i];
        for (size_t j = 0; j < node->npods && (constraints || node->naffinity); j++)
            if (constraints || fg_sim_sched_pod_has_affinity(node->pods[j]))
                score_existing(scores, pod, node->pods[j], node);
    }
    bool any = json_object_object_length(scores) > 0;
    for (size_t i = 0; i < n && any; i++) {
        out[i] = 0;
        json_object_object_foreach(scores, pair, v) {
            const char *sep = strchr(pair, '\001');
            char *key = fg_strndup(pair, (size_t)(sep - pair));
            if (fg_str_eq(label(feasible[i], key), sep + 1))
                out[i] += json_object_get_int64(v);
            free(key);
        }
    }
    json_object_put(scores);
    return any;
}
