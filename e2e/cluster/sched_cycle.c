/*
 * sched_cycle — one scheduling cycle of kube-scheduler's schedulePod on the snapshot.
 *
 * PreFilter computes the inter-pod affinity and topology spread state once. A pod nominated to a
 * node (by an earlier preemption) tries that node alone first and takes it if it passes. Otherwise
 * the filters run over the nodes from where the previous search stopped, until kube's number of
 * feasible nodes is found (every node below 100; above, a share falling from 50% by 1% per 125
 * nodes to at least 5%, and never fewer than 100), counting nominated pods of the pod's priority or
 * more where they are nominated. One feasible node is taken as is; several are scored and the best
 * selected. None: the PostFilter (preemption) runs and the message is kube's FitError, or with no
 * node at all "no nodes available to schedule pods".
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "e2e/cluster/sched.h"

#define MIN_FEASIBLE_NODES 100
#define MIN_FEASIBLE_PERCENT 5

size_t fg_sim_sched_nodes_to_find(size_t nnodes)
{
    if (nnodes < MIN_FEASIBLE_NODES)
        return nnodes;
    long percent = 50 - (long)(nnodes / 125);
    if (percent < MIN_FEASIBLE_PERCENT)
        percent = MIN_FEASIBLE_PERCENT;
    size_t n = nnodes * (size_t)percent / 100;
    return n < MIN_FEASIBLE_NODES ? MIN_FEASIBLE_NODES : n;
}

void fg_sim_sched_cycle_init(struct fg_sim_sched_cycle *c, struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod)
{
    c->s = s;
    c->pod = pod;
    c->affinity = fg_sim_sched_affinity_new(s, pod);
    c->spread = fg_sim_sched_spread_new(s, pod);
}

void fg_sim_sched_cycle_cleanup(struct fg_sim_sched_cycle *c)
{
    fg_sim_sched_affinity_free(c->affinity);
    fg_sim_sched_spread_free(c->spread);
    memset(c, 0, sizeof *c);
}

/* The pod's nominated node, when it still passes every filter. */
static struct fg_sim_sched_node *nominated_fit(const struct fg_sim_sched_cycle *c)
{
    const char *name = fg_sim_sched_nominated_node(c->s, c->pod->key);
    struct fg_sim_sched_node *n = fg_sim_sched_node_get(c->s, name ? name : c->pod->nominated);
    if (!n || !n->listed)
        return NULL;
    struct fg_sim_sched_status st;
    fg_sim_sched_filter_with_nominated(c, n, &st);
    return st.code == FG_SIM_SCHED_SUCCESS ? n : NULL;
}

static struct fg_sim_sched_node *best(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node **feasible, size_t n,
                                      uint64_t *rng)
{
    if (n == 1)
        return feasible[0];
    struct fg_sim_sched_score *scores = fg_calloc(n, sizeof *scores);
    fg_sim_sched_score_nodes(c, feasible, n, scores);
    struct fg_sim_sched_node *chosen = feasible[fg_sim_sched_select(scores, n, rng)];
    free(scores);
    return chosen;
}

void fg_sim_sched_schedule(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, uint64_t *rng,
                           struct fg_sim_sched_result *out)
{
    memset(out, 0, sizeof *out);
    if (!s->nnodes) {
        out->message = fg_strdup("no nodes available to schedule pods");
        out->set_nomination = true;
        return;
    }
    struct fg_sim_sched_cycle c;
    fg_sim_sched_cycle_init(&c, s, pod);
    if ((out->node = nominated_fit(&c))) {
        fg_sim_sched_cycle_cleanup(&c);
        return;
    }
    size_t want = fg_sim_sched_nodes_to_find(s->nnodes), nfeasible = 0, processed = 0;
    struct fg_sim_sched_node **feasible = fg_calloc(want, sizeof *feasible);
    enum fg_sim_sched_code *codes = fg_calloc(s->nnodes, sizeof *codes);
    struct fg_sim_sched_diagnosis d = { 0 };
    for (size_t start = s->next_start % s->nnodes; processed < s->nnodes && nfeasible < want; processed++) {
        struct fg_sim_sched_node *n = s->nodes[(start + processed) % s->nnodes];
        struct fg_sim_sched_status st;
        fg_sim_sched_filter_with_nominated(&c, n, &st);
        codes[n->index] = st.code;
        if (st.code == FG_SIM_SCHED_SUCCESS)
            feasible[nfeasible++] = n;
        else
            fg_sim_sched_diagnosis_add(&d, &st);
    }
    s->next_start = (s->next_start + processed) % s->nnodes;
    if (nfeasible) {
        out->node = best(&c, feasible, nfeasible, rng);
    } else {
        char *postfilter = fg_sim_sched_preempt(&c, codes, rng, out);
        out->message = fg_sim_sched_fit_message(s->nnodes, &d, postfilter);
        out->rejected_by = d.plugins;
        free(postfilter);
    }
    fg_sim_sched_diagnosis_cleanup(&d);
    free(codes);
    free(feasible);
    fg_sim_sched_cycle_cleanup(&c);
}

void fg_sim_sched_result_cleanup(struct fg_sim_sched_result *r)
{
    free(r->message);
    free(r->nominated);
    for (size_t i = 0; i < r->nvictims; i++)
        fg_sim_sched_pod_unref(r->victims[i]);
    for (size_t i = 0; i < r->ndemoted; i++)
        fg_sim_sched_pod_unref(r->demoted[i]);
    free(r->victims);
    free(r->demoted);
    memset(r, 0, sizeof *r);
}
