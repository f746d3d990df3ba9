/*
 * sched_preempt — kube-scheduler's DefaultPreemption (PostFilter) for a pod that fits nowhere.
 *
 * Eligibility: not with preemptionPolicy Never, nor while a lower-priority pod that this scheduler
 * preempted is still terminating on the pod's nominated node (unless that node now refuses the pod
 * outright). Candidates are the nodes whose filters said Unschedulable (not UnschedulableAndUnresolvable:
 * removing pods cannot help there). A dry run per candidate, from a random offset, stopping once
 * max(10% of them, 100) candidates are found with at least one that violates no budget: remove every
 * pod of lower priority, check that the pod then fits (nominated pods of its priority or more counted,
 * as in the cycle), then put victims back, highest priority first (those whose
 * PodDisruptionBudget would be violated first, then the others) while the pod still fits; what
 * cannot go back are the victims. A budget covers pods of its namespace its selector matches (an
 * empty selector none), allows status.disruptionsAllowed disruptions and ignores pods already in
 * status.disruptedPods. The node chosen has, in order: the fewest budget violations, the lowest
 * highest-victim priority, the smallest sum of victim priorities, the fewest victims, the latest
 * start among its highest-priority victims; then the first found.
 *
 * The dry runs change the snapshot's nodes (and the cycle's PreFilter state) and restore them
 * before returning. With no candidate the message is kube's: "preemption: " and a FitError over the
 * nodes tried ("No preemption victims found for incoming pod", or the filter's reasons) and the
 * others ("Preemption is not helpful for scheduling"), and the pod's nomination is cleared.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"

#define MIN_CANDIDATES_PERCENT 10
#define MIN_CANDIDATES 100

struct pdb {
    const char *ns;
    struct fg_selector selector;
    bool empty;
    int64_t allowed;
    json_object *disrupted;         /* status.disruptedPods: name → time */
};

struct candidate {
    struct fg_sim_sched_node *node;
    struct fg_sim_sched_pod **victims;  /* most important first */
    size_t nvictims, violations;
};

/* ---- budgets ---- */

static struct pdb *pdbs_load(json_object *all, size_t *n)
{
    struct pdb *v = fg_calloc((size_t)json_object_object_length(all) + 1, sizeof *v);
    *n = 0;
    json_object_object_foreach(all, key, obj) {
        (void)key;
        struct pdb *p = &v[*n];
        json_object *sel = fg_json_get(obj, "spec", "selector", NULL);
        if (!json_object_is_type(sel, json_type_object) || fg_selector_from_json(sel, &p->selector, NULL))
            continue;   /* an invalid selector matches no pod */
        p->ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
        p->empty = p->selector.n == 0;
        fg_json_get_int64(obj, &p->allowed, "status", "disruptionsAllowed", NULL);
        p->disrupted = fg_json_get(obj, "status", "disruptedPods", NULL);
        (*n)++;
    }
    return v;
}

static void pdbs_free(struct pdb *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fg_selector_cleanup(&v[i].selector);
    free(v);
}

/* Splits pods (in order) into those whose eviction would violate a budget and the others, as kube's
 * filterPodsWithPDBViolation; violating[i] is set per pod. */
static void pdb_violations(struct pdb *pdbs, size_t npdbs, struct fg_sim_sched_pod **pods, size_t n, bool *violating)
{
    int64_t *allowed = fg_calloc(npdbs ? npdbs : 1, sizeof *allowed);
    for (size_t i = 0; i < npdbs; i++)
        allowed[i] = pdbs[i].allowed;
    for (size_t i = 0; i < n; i++) {
        violating[i] = false;
        json_object *labels = fg_json_get(pods[i]->obj, "metadata", "labels", NULL);
        if (!labels || !json_object_object_length(labels))
            continue;
        for (size_t j = 0; j < npdbs; j++) {
            if (!fg_str_eq(pdbs[j].ns, pods[i]->ns) || pdbs[j].empty ||
                !fg_selector_match_labels(&pdbs[j].selector, pods[i]->obj) ||
                fg_json_get(pdbs[j].disrupted, pods[i]->name, NULL))
                continue;
            if (--allowed[j] < 0)
                violating[i] = true;
        }
    }
    free(allowed);
}

/* ---- victims on one node ---- */

/* kube's MoreImportantPod: higher priority, then the earlier start (unstarted pods last). */
static int cmp_importance(const void *a, const void *b)
{
    const struct fg_sim_sched_pod *pa = *(struct fg_sim_sched_pod *const *)a, *pb = *(struct fg_sim_sched_pod *const *)b;
    if (pa->priority != pb->priority)
        return pa->priority > pb->priority ? -1 : 1;
    int64_t sa = pa->started_ms ? pa->started_ms : INT64_MAX, sb = pb->started_ms ? pb->started_ms : INT64_MAX;
    return sa < sb ? -1 : sa > sb;
}

static void take_off(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n, struct fg_sim_sched_pod *p)
{
    fg_sim_sched_node_remove_pod(n, p);
    if (c->affinity)
        fg_sim_sched_affinity_update(c->affinity, p, n, -1);
    if (c->spread)
        fg_sim_sched_spread_update(c->spread, p, n, -1);
}

static void put_back(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n, struct fg_sim_sched_pod *p)
{
    fg_sim_sched_node_add_pod(n, p);
    if (c->affinity)
        fg_sim_sched_affinity_update(c->affinity, p, n, 1);
    if (c->spread)
        fg_sim_sched_spread_update(c->spread, p, n, 1);
}

/* Tries to put `pod` back on n while the cycle's pod still fits; false (and left off) otherwise. */
static bool reprieve(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n, struct fg_sim_sched_pod *pod)
{
    struct fg_sim_sched_status st;
    put_back(c, n, pod);
    fg_sim_sched_filter_with_nominated(c, n, &st);
    if (st.code == FG_SIM_SCHED_SUCCESS)
        return true;
    take_off(c, n, pod);
    return false;
}

/* kube's SelectVictimsOnNode: fills cand, or st with why n cannot help. n is restored. */
static void select_victims(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n, struct pdb *pdbs,
                           size_t npdbs, struct candidate *cand, struct fg_sim_sched_status *st)
{
    memset(cand, 0, sizeof *cand);
    cand->node = n;
    struct fg_sim_sched_pod **lower = fg_calloc(n->npods + 1, sizeof *lower);
    size_t nlower = 0;
    for (size_t i = 0; i < n->npods; i++)
        if (n->pods[i]->priority < c->pod->priority)
            lower[nlower++] = n->pods[i];
    if (!nlower) {
        *st = (struct fg_sim_sched_status){ .code = FG_SIM_SCHED_UNRESOLVABLE };
        fg_sim_sched_status_add(st, "No preemption victims found for incoming pod");
        free(lower);
        return;
    }
    for (size_t i = 0; i < nlower; i++)
        take_off(c, n, lower[i]);
    fg_sim_sched_filter_with_nominated(c, n, st);
    if (st->code != FG_SIM_SCHED_SUCCESS) {
        for (size_t i = 0; i < nlower; i++)
            put_back(c, n, lower[i]);
        free(lower);
        return;
    }
    qsort(lower, nlower, sizeof *lower, cmp_importance);
    bool *violating = fg_calloc(nlower, sizeof *violating);
    pdb_violations(pdbs, npdbs, lower, nlower, violating);
    cand->victims = fg_calloc(nlower, sizeof *cand->victims);
    for (int pass = 1; pass >= 0; pass--)   /* the violating ones first */
        for (size_t i = 0; i < nlower; i++)
            if (violating[i] == (pass == 1) && !reprieve(c, n, lower[i])) {
                cand->victims[cand->nvictims++] = lower[i];
                cand->violations += violating[i];
            }
    qsort(cand->victims, cand->nvictims, sizeof *cand->victims, cmp_importance);
    for (size_t i = 0; i < cand->nvictims; i++)
        put_back(c, n, cand->victims[i]);
    free(violating);
    free(lower);
}

/* ---- the node chosen ---- */

static int64_t candidate_score(const struct candidate *cand, int rule)
{
    int64_t sum = 0, earliest = INT64_MAX;
    switch (rule) {
    case 0: return -(int64_t)cand->violations;
    case 1: return -cand->victims[0]->priority;
    case 2:
        for (size_t i = 0; i < cand->nvictims; i++)
            sum += cand->victims[i]->priority + INT32_MAX + 1ll;
        return -sum;
    case 3: return -(int64_t)cand->nvictims;
    default:
        for (size_t i = 0; i < cand->nvictims; i++)
            if (cand->victims[i]->priority == cand->victims[0]->priority && cand->victims[i]->started_ms &&
                cand->victims[i]->started_ms < earliest)
                earliest = cand->victims[i]->started_ms;
        return earliest;
    }
}

/* kube's pickOneNodeForPreemption over cands (non-violating ones first). */
static size_t pick(struct candidate *cands, size_t n)
{
    size_t *alive = fg_calloc(n, sizeof *alive), nalive = n;
    for (size_t i = 0; i < n; i++)
        alive[i] = i;
    for (int rule = 0; rule < 5 && nalive > 1; rule++) {
        int64_t best = INT64_MIN;
        for (size_t i = 0; i < nalive; i++)
            if (candidate_score(&cands[alive[i]], rule) > best)
                best = candidate_score(&cands[alive[i]], rule);
        size_t kept = 0;
        for (size_t i = 0; i < nalive; i++)
            if (candidate_score(&cands[alive[i]], rule) == best)
                alive[kept++] = alive[i];
        nalive = kept;
    }
    size_t chosen = alive[0];
    free(alive);
    return chosen;
}

/* ---- PostFilter ---- */

static const char *not_eligible(const struct fg_sim_sched_cycle *c, const enum fg_sim_sched_code *codes)
{
    const struct fg_sim_sched_pod *pod = c->pod;
    if (pod->preempt_never)
        return "preemption: not eligible due to preemptionPolicy=Never.";
    const char *nominated = fg_sim_sched_nominated_node(c->s, pod->key);
    struct fg_sim_sched_node *n = fg_sim_sched_node_get(c->s, nominated ? nominated : pod->nominated);
    if (!n || (n->listed && codes[n->index] == FG_SIM_SCHED_UNRESOLVABLE))
        return NULL;
    for (size_t i = 0; i < n->npods; i++)
        if (n->pods[i]->priority < pod->priority && n->pods[i]->terminating_by_preemption)
            return "preemption: not eligible due to a terminating pod on the nominated node.";
    return NULL;
}

static size_t candidates_wanted(size_t potential)
{
    size_t n = potential * MIN_CANDIDATES_PERCENT / 100;
    n = n < MIN_CANDIDATES ? MIN_CANDIDATES : n;
    return n > potential ? potential : n;
}

static void nominate(const struct fg_sim_sched_cycle *c, struct candidate *cand, struct fg_sim_sched_result *out)
{
    const struct fg_sim_sched_snapshot *s = c->s;
    out->set_nomination = true;
    out->nominated = fg_strdup(cand->node->name);
    out->victims = fg_calloc(cand->nvictims, sizeof *out->victims);
    for (size_t i = 0; i < cand->nvictims; i++)
        out->victims[out->nvictims++] = fg_sim_sched_pod_ref(cand->victims[i]);
    out->demoted = fg_calloc(s->nnominated + 1, sizeof *out->demoted);
    for (size_t i = 0; i < s->nnominated; i++)
        if (!strcmp(s->nominated[i].node, cand->node->name) && s->nominated[i].pod->priority < c->pod->priority)
            out->demoted[out->ndemoted++] = fg_sim_sched_pod_ref(s->nominated[i].pod);
}

char *fg_sim_sched_preempt(const struct fg_sim_sched_cycle *c, const enum fg_sim_sched_code *codes, uint64_t *rng,
                           struct fg_sim_sched_result *out)
{
    const char *why = not_eligible(c, codes);
    if (why)
        return fg_strdup(why);
    struct fg_sim_sched_snapshot *s = c->s;
    struct fg_sim_sched_node **potential = fg_calloc(s->nnodes + 1, sizeof *potential);
    size_t npotential = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        if (codes[i] == FG_SIM_SCHED_UNSCHEDULABLE)
            potential[npotential++] = s->nodes[i];
    size_t npdbs = 0;
    struct pdb *pdbs = pdbs_load(s->pdbs, &npdbs);
    struct candidate *cands = fg_calloc(npotential + 1, sizeof *cands);
    size_t ncands = 0, nclean = 0, wanted = candidates_wanted(npotential);
    size_t offset = npotential ? (size_t)fg_sim_sched_rand(rng, npotential) : 0;
    struct fg_sim_sched_diagnosis d = { 0 };
    for (size_t i = 0; i < npotential && !(nclean && ncands >= wanted); i++) {
        struct fg_sim_sched_status st;
        select_victims(c, potential[(offset + i) % npotential], pdbs, npdbs, &cands[ncands], &st);
        if (st.code == FG_SIM_SCHED_SUCCESS && cands[ncands].nvictims) {
            nclean += cands[ncands].violations == 0;
            ncands++;
        } else {
            free(cands[ncands].victims);
            fg_sim_sched_diagnosis_add(&d, &st);
        }
    }
    char *message = NULL;
    if (!ncands) {
        fg_sim_sched_diagnosis_count(&d, "Preemption is not helpful for scheduling", s->nnodes - npotential);
        char *fit = fg_sim_sched_fit_message(s->nnodes, &d, NULL);
        message = fg_asprintf("preemption: %s", fit);
        free(fit);
        out->set_nomination = true;   /* clear any earlier nomination */
    } else {
        /* kube lists the candidates that violate no budget first */
        struct candidate *ordered = fg_calloc(ncands, sizeof *ordered);
        size_t k = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < ncands; i++)
                if ((cands[i].violations == 0) == (pass == 0))
                    ordered[k++] = cands[i];
        nominate(c, &ordered[pick(ordered, ncands)], out);
        free(ordered);
    }
    for (size_t i = 0; i < ncands; i++)
        free(cands[i].victims);
    fg_sim_sched_diagnosis_cleanup(&d);
    free(cands);
    pdbs_free(pdbs, npdbs);
    free(potential);
    return message;
}
