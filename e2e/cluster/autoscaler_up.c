/*
 * autoscaler_up — scale-up. Pods the scheduler marked PodScheduled=False with reason
 * Unschedulable for at least scaleUpDelay, and that would fit neither on a node already there (the
 * scheduler will place them when it tries again) nor on one on its way, are packed first-fit onto fresh nodes of each group whose template can take them; the group that
 * takes the most pods with the least idle CPU and memory wins (the least-waste expander) and grows
 * by as many nodes as those pods need, up to maxSize. Each pod hears TriggeredScaleUp, or once
 * NotTriggerScaleUp with each group's reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/autoscaler.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/objects.h"
#include "operator/kube/resources.h"

static bool unschedulable_since(json_object *pod, int64_t *since)
{
    json_object *c = fg_sim_condition(pod, "PodScheduled");
    return fg_str_eq(fg_json_get_str(c, "status", NULL), "False") &&
           fg_str_eq(fg_json_get_str(c, "reason", NULL), "Unschedulable") &&
           fg_time_parse(fg_json_get_str(c, "lastTransitionTime", NULL), since);
}

static void free_told(struct lh_entry *e)
{
    free(lh_entry_k(e));
}

/* Records that the pod with uid is told now in `now` (a new table of the pods still pending); true
 * when it was told before. */
static bool told_before(struct fg_sim_autoscaler *a, struct lh_table *now, const char *uid)
{
    bool before = a->told && lh_table_lookup_entry(a->told, uid);
    if (!lh_table_lookup_entry(now, uid))
        lh_table_insert(now, fg_strdup(uid), NULL);
    return before;
}

/* Packs the pods not yet placed first-fit onto at most `limit` new nodes of v, marking those it
 * placed; returns the nodes it used. */
static size_t pack(struct fg_sim_group_view *v, json_object **pods, size_t n, bool *placed, size_t limit)
{
    struct fg_sim_bin *bins = fg_calloc(limit ? limit : 1, sizeof *bins);
    size_t nbins = 0;
    const char *why;
    for (size_t i = 0; i < n; i++) {
        if (placed[i] || !fg_sim_autoscaler_fits(pods[i], v->tmpl, &v->capacity, &why))
            continue;   /* placed already, or no fresh node of this group takes it */
        size_t b = 0;
        while (b < nbins && !fg_sim_autoscaler_fits(pods[i], v->tmpl, &bins[b].free, &why))
            b++;
        if (b == nbins) {
            if (nbins == limit)
                continue;
            bins[nbins++].free = v->capacity;
        }
        fg_sim_autoscaler_take(&bins[b].free, pods[i]);
        placed[i] = true;
    }
    free(bins);
    return nbins;
}

/* Idle CPU and memory, as a fraction of capacity, that n nodes of v would have after taking pods. */
static double waste(struct fg_sim_group_view *v, json_object **pods, size_t npods, const bool *placed, size_t n)
{
    struct fg_resources used = { 0 };
    for (size_t i = 0; i < npods; i++) {
        struct fg_resources req;
        if (placed[i] && fg_pod_requests(pods[i], &req, NULL) == FG_OK)
            fg_resources_sum(&used, &req);
    }
    double cpu = (double)fg_resources_get(&v->g->capacity, "cpu") * (double)n;
    double mem = (double)fg_resources_get(&v->g->capacity, "memory") * (double)n;
    double w = 0;
    if (cpu > 0)
        w += 1 - (double)fg_resources_get(&used, "cpu") / cpu;
    if (mem > 0)
        w += 1 - (double)fg_resources_get(&used, "memory") / mem;
    return w;
}

/* Will the scheduler, trying again, place pod on a node already there (cluster-autoscaler's
 * filterOutSchedulable)? A pod with inter-pod affinity or spread constraints is left to scale-up:
 * the fit checked here does not weigh other pods. Takes its room when it fits. */
static bool fits_existing(json_object *pod, struct fg_sim_node_room *rooms, size_t nrooms)
{
    json_object *affinity = fg_json_get(pod, "spec", "affinity", NULL);
    if (fg_json_get(affinity, "podAffinity", NULL) || fg_json_get(affinity, "podAntiAffinity", NULL) ||
        fg_json_array_len(fg_json_get(pod, "spec", "topologySpreadConstraints", NULL)))
        return false;
    for (size_t r = 0; r < nrooms; r++) {
        const char *why;
        if (fg_sim_autoscaler_fits(pod, rooms[r].node, &rooms[r].free, &why)) {
            fg_sim_autoscaler_take(&rooms[r].free, pod);
            return true;
        }
    }
    return false;
}

void fg_sim_autoscaler_scale_up(struct fg_sim_autoscaler *a, struct fg_sim_group_view *views, size_t nviews,
                                struct fg_sim_node_room *rooms, size_t nrooms, json_object *pods)
{
    int64_t now = fg_clock_wall_ms();
    size_t n = fg_json_array_len(pods), npending = 0;
    json_object **pending = fg_calloc(n ? n : 1, sizeof *pending);
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        int64_t since;
        const char *node = fg_json_get_str(p, "spec", "nodeName", NULL);
        if ((!node || !*node) && fg_sim_pod_active(p) && unschedulable_since(p, &since) &&
            since + (int64_t)(a->cfg->autoscale.scale_up_delay_ns / FG_NS_PER_MS) <= now)
            pending[npending++] = p;
    }
    bool *placed = fg_calloc(npending ? npending : 1, sizeof *placed);
    for (size_t i = 0; i < npending; i++)   /* pods that a node already there will take */
        placed[i] = fits_existing(pending[i], rooms, nrooms);
    for (size_t v = 0; v < nviews; v++)   /* pods that an upcoming node will take anyway */
        for (size_t i = 0; i < npending; i++)
            for (size_t b = 0; b < views[v].nupcoming && !placed[i]; b++) {
                const char *why;
                if (fg_sim_autoscaler_fits(pending[i], views[v].tmpl, &views[v].upcoming[b].free, &why)) {
                    fg_sim_autoscaler_take(&views[v].upcoming[b].free, pending[i]);
                    placed[i] = true;
                }
            }
    for (;;) {   /* one group at a time, the best first, until no group takes a pod */
        size_t best = nviews, best_nodes = 0, best_count = 0;
        double best_waste = 0;
        bool *best_placed = NULL;
        for (size_t v = 0; v < nviews; v++) {
            long room = (long)views[v].g->max_size - views[v].size;
            if (room <= 0)
                continue;
            bool *trial = fg_calloc(npending ? npending : 1, sizeof *trial);
            memcpy(trial, placed, npending * sizeof *trial);
            size_t nodes = pack(&views[v], pending, npending, trial, (size_t)room), count = 0;
            for (size_t i = 0; i < npending; i++)
                count += trial[i] && !placed[i];
            double w = waste(&views[v], pending, npending, trial, nodes);
            if (count && (best == nviews || count > best_count || (count == best_count && w < best_waste))) {
                free(best_placed);
                best = v, best_nodes = nodes, best_count = count, best_waste = w, best_placed = trial;
            } else {
                free(trial);
            }
        }
        if (best == nviews)
            break;
        struct fg_sim_group_view *v = &views[best];
        char msg[256];
        snprintf(msg, sizeof msg, "pod triggered scale-up: [{%s %ld->%ld (max: %u)}]", v->g->name, v->size,
                 v->size + (long)best_nodes, v->g->max_size);
        fg_log(FG_LOG_INFO, FG_SIM_AUTOSCALER_NAME, "scale-up: group %s %ld->%ld for %zu pods", v->g->name, v->size,
               v->size + (long)best_nodes, best_count);
        char errmsg[FG_ERRMSG_MAX];
        for (size_t i = 0; i < best_nodes; i++) {
            char node[FG_SIM_NODE_NAME_MAX];
            if (fg_sim_cloud_launch(a->client, v->g->name, node, errmsg) != FG_OK)
                fg_log(FG_LOG_WARN, FG_SIM_AUTOSCALER_NAME, "%s", errmsg);
        }
        v->size += (long)best_nodes;
        a->last_scale_up_ms = now;
        for (size_t i = 0; i < npending; i++)
            if (best_placed[i] && !placed[i])
                fg_sim_autoscaler_event(a, pending[i], "Pod", "Normal", "TriggeredScaleUp", msg);
        memcpy(placed, best_placed, npending * sizeof *placed);
        free(best_placed);
    }
    struct lh_table *told = lh_kchar_table_new(64, free_told);
    for (size_t i = 0; i < npending; i++) {   /* what no group can take: say why, once */
        if (placed[i] || told_before(a, told, fg_json_get_str(pending[i], "metadata", "uid", NULL)))
            continue;
        char msg[512] = "pod didn't trigger scale-up:";
        for (size_t v = 0; v < nviews; v++) {
            const char *why = "max node group size reached";
            if ((long)views[v].g->max_size > views[v].size)
                fg_sim_autoscaler_fits(pending[i], views[v].tmpl, &views[v].capacity, &why);
            size_t len = strlen(msg);
            snprintf(msg + len, sizeof msg - len, "%s 1 %s", v ? "," : "", why);
        }
        fg_sim_autoscaler_event(a, pending[i], "Pod", "Normal", "NotTriggerScaleUp", msg);
    }
    if (a->told)
        lh_table_free(a->told);
    a->told = told;   /* pods no longer pending are forgotten */
    free(placed);
    free(pending);
}
