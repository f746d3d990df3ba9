/*
 * sched_spread — kube-scheduler's PodTopologySpread filter: a pod's topologySpreadConstraints with
 * whenUnsatisfiable DoNotSchedule, over any topologyKey (kubernetes.io/hostname and
 * topology.kubernetes.io/zone in practice).
 *
 * PreFilter counts, per constraint and per domain (the values of its topologyKey on eligible
 * nodes), the placed pods that are not terminating, live in the pod's namespace and match the
 * constraint's selector (labelSelector, with the pod's own values of matchLabelKeys added; no
 * selector matches nothing). A node is eligible when it has every constraint's topologyKey and, per
 * constraint, passes nodeAffinityPolicy (Honor, the default: the pod's node selector and required
 * affinity) and nodeTaintsPolicy (Ignore by default; Honor: no untolerated NoSchedule/NoExecute
 * taint). Filter refuses a node without a topologyKey (UnschedulableAndUnresolvable, "missing
 * required label") and one where the domain's count, plus one when the pod matches itself, exceeds
 * the smallest domain's count (0 while fewer than minDomains domains exist) by more than maxSkew.
 * ScheduleAnyway constraints and the default constraints kube scores with are not applied.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"
#include "operator/kube/nodematch.h"

#define NOT_MATCH "node(s) didn't match pod topology spread constraints"

struct constraint {
    const char *key;
    int64_t max_skew, min_domains;
    struct fg_selector selector;
    bool matches_nothing, honor_affinity, honor_taints, self_match;
    json_object *counts;            /* domain value → matching pods */
    int64_t min;                    /* the global minimum of counts (kube's critical paths) */
};

struct fg_sim_sched_spread {
    const struct fg_sim_sched_pod *pod;
    struct constraint *v;
    size_t n;
};

/* The constraint's labelSelector with the pod's values of matchLabelKeys required too (a new tree). */
static json_object *selector_json(json_object *c, const struct fg_sim_sched_pod *pod)
{
    json_object *sel = NULL;
    if (json_object_deep_copy(fg_json_get(c, "labelSelector", NULL), &sel, NULL) != 0 || !sel)
        return NULL;
    json_object *keys = fg_json_get(c, "matchLabelKeys", NULL);
    for (size_t i = 0; i < fg_json_array_len(keys); i++) {
        const char *key = json_object_get_string(json_object_array_get_idx(keys, i));
        const char *value = fg_json_get_str(pod->obj, "metadata", "labels", key, NULL);
        if (!value)
            continue;
        json_object *labels = fg_json_ensure_obj(sel, "matchLabels");
        fg_json_set_str(labels, key, value);
    }
    return sel;
}

static bool parse_constraint(json_object *c, const struct fg_sim_sched_pod *pod, struct constraint *out)
{
    memset(out, 0, sizeof *out);
    out->key = fg_json_get_str(c, "topologyKey", NULL);
    out->max_skew = 1;
    out->min_domains = 1;
    fg_json_get_int64(c, &out->max_skew, "maxSkew", NULL);
    fg_json_get_int64(c, &out->min_domains, "minDomains", NULL);
    out->honor_affinity = !fg_str_eq(fg_json_get_str(c, "nodeAffinityPolicy", NULL), "Ignore");
    out->honor_taints = fg_str_eq(fg_json_get_str(c, "nodeTaintsPolicy", NULL), "Honor");
    json_object *sel = selector_json(c, pod);
    out->matches_nothing = !sel || fg_selector_from_json(sel, &out->selector, NULL) != FG_OK;
    json_object_put(sel);
    out->self_match = !out->matches_nothing && fg_selector_match_labels(&out->selector, pod->obj);
    out->counts = json_object_new_object();
    return out->key != NULL;
}

static bool counts_pod(const struct constraint *c, const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_pod *other)
{
    return !c->matches_nothing && !other->terminating && fg_str_eq(other->ns, pod->ns) &&
           fg_selector_match_labels(&c->selector, other->obj);
}

static const char *label(const struct fg_sim_sched_node *n, const char *key)
{
    return fg_json_get_str(n->obj, "metadata", "labels", key, NULL);
}

static bool has_every_key(const struct fg_sim_sched_spread *sp, const struct fg_sim_sched_node *n)
{
    for (size_t i = 0; i < sp->n; i++)
        if (!label(n, sp->v[i].key))
            return false;
    return true;
}

static bool eligible(const struct constraint *c, const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n)
{
    if (c->honor_affinity && !fg_node_matches_pod(pod->obj, n->obj))
        return false;
    return !c->honor_taints || !fg_untolerated_taint(n->taints, pod->tolerations, false);
}

static void count(json_object *counts, const char *value, int64_t delta)
{
    json_object *v = NULL;
    int64_t have = json_object_object_get_ex(counts, value, &v) ? json_object_get_int64(v) : 0;
    json_object_object_add(counts, value, json_object_new_int64(have + delta));
}

static int64_t global_min(const struct constraint *c)
{
    if ((int64_t)json_object_object_length(c->counts) < c->min_domains)
        return 0;
    int64_t min = INT64_MAX;
    json_object_object_foreach(c->counts, value, n) {
        (void)value;
        if (json_object_get_int64(n) < min)
            min = json_object_get_int64(n);
    }
    return min == INT64_MAX ? 0 : min;
}

static void refresh_minimums(struct fg_sim_sched_spread *sp)
{
    for (size_t i = 0; i < sp->n; i++)
        sp->v[i].min = global_min(&sp->v[i]);
}

static void constraint_cleanup(struct constraint *c)
{
    fg_selector_cleanup(&c->selector);
    json_object_put(c->counts);
}

void fg_sim_sched_spread_update(struct fg_sim_sched_spread *sp, const struct fg_sim_sched_pod *other,
                                const struct fg_sim_sched_node *n, int sign)
{
    if (!has_every_key(sp, n))
        return;
    for (size_t i = 0; i < sp->n; i++)
        if (eligible(&sp->v[i], sp->pod, n) && counts_pod(&sp->v[i], sp->pod, other))
            count(sp->v[i].counts, label(n, sp->v[i].key), sign);
    refresh_minimums(sp);
}

struct fg_sim_sched_spread *fg_sim_sched_spread_new(const struct fg_sim_sched_snapshot *s,
                                                    const struct fg_sim_sched_pod *pod)
{
    json_object *list = fg_json_get(pod->obj, "spec", "topologySpreadConstraints", NULL);
    struct fg_sim_sched_spread *sp = NULL;
    for (size_t i = 0; i < fg_json_array_len(list); i++) {
        json_object *c = json_object_array_get_idx(list, i);
        if (!fg_str_eq(fg_json_get_str(c, "whenUnsatisfiable", NULL), "DoNotSchedule"))
            continue;
        if (!sp) {
            sp = fg_calloc(1, sizeof *sp);
            sp->pod = pod;
        }
        sp->v = fg_realloc(sp->v, (sp->n + 1) * sizeof *sp->v);
        if (parse_constraint(c, pod, &sp->v[sp->n]))
            sp->n++;
        else
            constraint_cleanup(&sp->v[sp->n]);
    }
    for (size_t i = 0; sp && i < s->nnodes; i++) {
        const struct fg_sim_sched_node *n = s->nodes[i];
        if (!has_every_key(sp, n))
            continue;
        for (size_t c = 0; c < sp->n; c++) {
            if (!eligible(&sp->v[c], pod, n))
                continue;
            count(sp->v[c].counts, label(n, sp->v[c].key), 0);   /* the domain exists, even empty */
            for (size_t j = 0; j < n->npods; j++)
                if (counts_pod(&sp->v[c], pod, n->pods[j]))
                    count(sp->v[c].counts, label(n, sp->v[c].key), 1);
        }
    }
    if (sp)
        refresh_minimums(sp);
    return sp;
}

void fg_sim_sched_spread_free(struct fg_sim_sched_spread *sp)
{
    if (!sp)
        return;
    for (size_t i = 0; i < sp->n; i++)
        constraint_cleanup(&sp->v[i]);
    free(sp->v);
    free(sp);
}

void fg_sim_sched_spread_filter(const struct fg_sim_sched_spread *sp, const struct fg_sim_sched_node *n,
                                struct fg_sim_sched_status *st)
{
    st->plugin = FG_SIM_SCHED_SPREAD;
    for (size_t i = 0; i < sp->n; i++) {
        const struct constraint *c = &sp->v[i];
        const char *value = label(n, c->key);
        if (!value) {
            st->code = FG_SIM_SCHED_UNRESOLVABLE;
            fg_sim_sched_status_add(st, NOT_MATCH " (missing required label)");
            return;
        }
        json_object *have = NULL;
        int64_t matching = json_object_object_get_ex(c->counts, value, &have) ? json_object_get_int64(have) : 0;
        if (matching + c->self_match - c->min > c->max_skew) {
            st->code = FG_SIM_SCHED_UNSCHEDULABLE;
            fg_sim_sched_status_add(st, NOT_MATCH);
            return;
        }
    }
}
