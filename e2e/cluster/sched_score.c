/*
 * sched_score — kube-scheduler's Score plugins of the default profile, each normalised to
 * [0, 100] as kube does, weighted as kube weighs them, and selectHost.
 *   NodeResourcesFit (weight 1), LeastAllocated over cpu and memory with equal weights: per resource
 *     (allocatable - requested) * 100 / allocatable, 0 when over, in integers, averaged; requested
 *     is the node's non-zero requests plus the pod's (kube's 100m and 200Mi for containers that set
 *     none), so that pods without requests still spread.
 *   NodeResourcesBalancedAllocation (1): (1 - std) * 100 over the cpu and memory fractions of the
 *     real requests including the pod's, each at most 1 (for two resources std is |f1 - f2| / 2).
 *   NodeAffinity (2): the weights of the preferred terms the node satisfies, scaled so that the
 *     best node has 100.
 *   TaintToleration (3): the PreferNoSchedule taints the pod does not tolerate, reversed: 100 for
 *     the fewest, 0 for the most (every node 100 when none has any).
 *   InterPodAffinity (2): sched_affinity.c's sums, scaled from the lowest (0) to the highest (100);
 *     skipped, as kube skips it, when no term anywhere scores.
 * PodTopologySpread's scoring and ImageLocality are not applied. The node with the highest total
 * wins; among equal totals each is picked with equal probability (reservoir sampling, as kube).
 */
#include <math.h>
#include <stdlib.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"
#include "operator/kube/nodematch.h"

#define WEIGHT_FIT 1
#define WEIGHT_BALANCED 1
#define WEIGHT_NODE_AFFINITY 2
#define WEIGHT_TAINTS 3
#define WEIGHT_POD_AFFINITY 2

static int64_t least_requested(int64_t requested, int64_t capacity)
{
    if (capacity == 0 || requested > capacity)
        return 0;
    return (capacity - requested) * FG_SIM_SCHED_MAX_SCORE / capacity;
}

static int64_t least_allocated(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n)
{
    int64_t sum = 0, weights = 0;
    if (n->alloc_cpu) {
        sum += least_requested(n->nonzero_cpu + pod->nonzero_cpu, n->alloc_cpu);
        weights++;
    }
    if (n->alloc_memory) {
        sum += least_requested(n->nonzero_memory + pod->nonzero_memory, n->alloc_memory);
        weights++;
    }
    return weights ? sum / weights : 0;
}

static int64_t balanced_allocation(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n)
{
    double fractions[2];
    size_t nf = 0;
    if (n->alloc_cpu)
        fractions[nf++] = fmin(1.0, (double)(n->req_cpu + pod->cpu) / (double)n->alloc_cpu);
    if (n->alloc_memory)
        fractions[nf++] = fmin(1.0, (double)(n->req_memory + pod->memory) / (double)n->alloc_memory);
    double std = nf == 2 ? fabs((fractions[0] - fractions[1]) / 2) : 0;
    return (int64_t)((1 - std) * FG_SIM_SCHED_MAX_SCORE);
}

/* kube's DefaultNormalizeScore. */
static void normalize(int64_t *v, size_t n, bool reverse)
{
    int64_t max = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > max)
            max = v[i];
    for (size_t i = 0; i < n; i++) {
        int64_t score = max ? FG_SIM_SCHED_MAX_SCORE * v[i] / max : 0;
        v[i] = reverse ? FG_SIM_SCHED_MAX_SCORE - score : score;
    }
}

/* InterPodAffinity's NormalizeScore: min to 0, max to 100. */
static void normalize_min_max(int64_t *v, size_t n)
{
    int64_t min = INT64_MAX, max = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        min = v[i] < min ? v[i] : min;
        max = v[i] > max ? v[i] : max;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = max > min ? (int64_t)((double)FG_SIM_SCHED_MAX_SCORE * ((double)(v[i] - min) / (double)(max - min))) : 0;
}

void fg_sim_sched_score_nodes(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *const *feasible, size_t n,
                              struct fg_sim_sched_score *out)
{
    const struct fg_sim_sched_pod *pod = c->pod;
    bool preferred_nodes = fg_json_get(pod->obj, "spec", "affinity", "nodeAffinity",
                                       "preferredDuringSchedulingIgnoredDuringExecution", NULL) != NULL;
    int64_t *node_affinity = fg_calloc(n ? n : 1, sizeof *node_affinity);
    int64_t *taints = fg_calloc(n ? n : 1, sizeof *taints);
    int64_t *pod_affinity = fg_calloc(n ? n : 1, sizeof *pod_affinity);
    for (size_t i = 0; i < n; i++) {
        out[i] = (struct fg_sim_sched_score){ 0 };
        out[i].fit = least_allocated(pod, feasible[i]);
        out[i].balanced = balanced_allocation(pod, feasible[i]);
        node_affinity[i] = preferred_nodes ? fg_node_preferred_affinity(pod->obj, feasible[i]->obj) : 0;
        taints[i] = feasible[i]->soft_taints ? fg_untolerated_prefer_no_schedule(feasible[i]->taints, pod->tolerations) : 0;
    }
    normalize(node_affinity, n, false);
    normalize(taints, n, true);
    if (fg_sim_sched_affinity_score(c->s, pod, feasible, n, pod_affinity))
        normalize_min_max(pod_affinity, n);
    for (size_t i = 0; i < n; i++) {
        out[i].node_affinity = node_affinity[i];
        out[i].taints = taints[i];
        out[i].pod_affinity = pod_affinity[i];
        out[i].total = out[i].fit * WEIGHT_FIT + out[i].balanced * WEIGHT_BALANCED +
                       out[i].node_affinity * WEIGHT_NODE_AFFINITY + out[i].taints * WEIGHT_TAINTS +
                       out[i].pod_affinity * WEIGHT_POD_AFFINITY;
    }
    free(node_affinity);
    free(taints);
    free(pod_affinity);
}

uint64_t fg_sim_sched_rand(uint64_t *rng, uint64_t bound)
{
    uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    x *= 2685821657736338717ull;
    return bound ? x % bound : x;
}

size_t fg_sim_sched_select(const struct fg_sim_sched_score *scores, size_t n, uint64_t *rng)
{
    size_t best = 0, ties = 1;
    for (size_t i = 1; i < n; i++) {
        if (scores[i].total > scores[best].total) {
            best = i;
            ties = 1;
        } else if (scores[i].total == scores[best].total && fg_sim_sched_rand(rng, ++ties) == 0) {
            best = i;
        }
    }
    return best;
}
