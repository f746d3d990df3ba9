/*
 * autoscaler — cluster-autoscaler's node-group behaviour for the simulated cloud (cloud.h).
 *
 * Every scanInterval it looks at the cluster as cluster-autoscaler does:
 *   - Scale-up. Pods the scheduler marked PodScheduled=False with reason Unschedulable for at
 *     least scaleUpDelay, and that would not fit on a node already on its way (an instance whose
 *     node has not registered yet), are packed first-fit onto fresh nodes of each group whose
 *     template (the group's capacity, labels and taints, less what its DaemonSets would run there)
 *     can take them — fit of every resource, node selector and required node affinity, taints. The
 *     group that takes the most pods with the least idle CPU and memory wins (the least-waste
 *     expander); it grows by as many nodes as those pods need, up to maxSize. Each pod gets an
 *     Event TriggeredScaleUp (`pod triggered scale-up: [{gpu 1->2 (max: 10)}]`), or once
 *     NotTriggerScaleUp saying why no group can take it.
 *   - Scale-down. A node of a group above minSize that holds no pod but DaemonSet and mirror pods
 *     (finished pods aside) for scaleDownUnneeded, when no scale-up happened within
 *     scaleDownDelayAfterAdd and no pod on it is annotated
 *     cluster-autoscaler.kubernetes.io/safe-to-evict: "false", is tainted
 *     ToBeDeletedByClusterAutoscaler:NoSchedule, gets an Event ScaleDownEmpty, and its instance is
 *     terminated (the kubelet then removes the Node).
 * Only empty nodes are removed: moving pods off under-used nodes is not simulated.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/objects.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/event.h"
#include "operator/kube/nodematch.h"
#include "operator/kube/resource.h"
#include "operator/kube/resources.h"

#define COMPONENT "cluster-autoscaler"
#define TO_BE_DELETED "ToBeDeletedByClusterAutoscaler"
#define SAFE_TO_EVICT "cluster-autoscaler.kubernetes.io/safe-to-evict"
#define MAX_TRACKED 4096

struct unneeded {
    char node[FG_SIM_NODE_NAME_MAX];
    int64_t since_ms;
};

struct autoscaler {
    struct fg_manager *m;
    const struct fg_sim_config *cfg;
    struct fg_kube_client *client;
    struct fg_informer *pods, *nodes, *instances, *daemonsets;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop, running;
    int64_t last_scale_up_ms;
    struct unneeded unneeded[MAX_TRACKED];
    size_t nunneeded;
    char (*told)[64];            /* uids of pods told NotTriggerScaleUp */
    size_t ntold;
};

/* ---- the view of one scan ---- */

struct bin {
    struct fg_resources free;
};

struct group_view {
    const struct fg_sim_group *g;
    json_object *tmpl;           /* the template node */
    struct fg_resources capacity;   /* of a fresh node, less its daemon pods */
    long size;                   /* instances */
    struct bin *upcoming;        /* instances not registered yet */
    size_t nupcoming;
};

static json_object *parse(struct fg_kobj *o)
{
    json_object *obj = NULL;
    return fg_kobj_parse(o, &obj, NULL) == FG_OK ? obj : NULL;
}

static json_object *list_store(struct fg_informer *inf)
{
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(inf), &l);
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < l.n; i++) {
        json_object *o = parse(l.items[i]);
        if (o)
            json_object_array_add(arr, o);
    }
    fg_kobj_list_cleanup(&l);
    return arr;
}

static json_object *template_node(const struct fg_sim_group *g)
{
    json_object *n = json_object_new_object();
    char name[128];
    snprintf(name, sizeof name, "template-node-for-%s", g->name);
    json_object *meta = fg_json_ensure_obj(n, "metadata");
    fg_json_set_str(meta, "name", name);
    json_object_object_add(meta, "labels", fg_sim_cloud_node_labels(g, name));
    json_object_object_add(fg_json_ensure_obj(n, "spec"), "taints", json_object_get(g->taints));
    return n;
}

/* Does pod fit node (template or real) with `room` left? *why names the first thing that does not. */
static bool fits(json_object *pod, json_object *node, const struct fg_resources *room, const char **why)
{
    struct fg_resources req;
    if (fg_pod_requests(pod, &req, NULL) != FG_OK || fg_resources_add(&req, "pods", 1000) != FG_OK) {
        *why = "malformed requests";
        return false;
    }
    if (!fg_node_matches_pod(pod, node)) {
        *why = "node(s) didn't match Pod's node affinity/selector";
        return false;
    }
    if (fg_untolerated_taint(fg_json_get(node, "spec", "taints", NULL), fg_json_get(pod, "spec", "tolerations", NULL),
                             false)) {
        *why = "node(s) had untolerated taint";
        return false;
    }
    const char *short_of = fg_resources_exceeds(&req, room);
    if (short_of) {
        *why = "Insufficient resources";
        return false;
    }
    return true;
}

static void take(struct fg_resources *room, json_object *pod)
{
    struct fg_resources req;
    if (fg_pod_requests(pod, &req, NULL) == FG_OK && fg_resources_add(&req, "pods", 1000) == FG_OK)
        fg_resources_sub(room, &req);
}

/* What a fresh node of the group has left once the DaemonSets that would run there took theirs. */
static void daemon_overhead(json_object *daemonsets, struct group_view *v)
{
    v->capacity = v->g->capacity;
    for (size_t i = 0; i < fg_json_array_len(daemonsets); i++) {
        json_object *tmpl = fg_json_get(json_object_array_get_idx(daemonsets, i), "spec", "template", NULL);
        const char *why;
        if (fits(tmpl, v->tmpl, &v->capacity, &why))
            take(&v->capacity, tmpl);
    }
}

static bool unschedulable_since(json_object *pod, int64_t *since)
{
    json_object *c = fg_sim_condition(pod, "PodScheduled");
    return fg_str_eq(fg_json_get_str(c, "status", NULL), "False") &&
           fg_str_eq(fg_json_get_str(c, "reason", NULL), "Unschedulable") &&
           fg_time_parse(fg_json_get_str(c, "lastTransitionTime", NULL), since);
}

static void event(struct autoscaler *a, json_object *obj, const char *kind, const char *type, const char *reason,
                  const char *message)
{
    fg_json_set_str(obj, "kind", kind);
    fg_json_set_str(obj, "apiVersion", "v1");
    struct fg_kube_event ev = { type, reason, message, COMPONENT, NULL };
    enum fg_err err = fg_kube_event_emit(a->client, obj, &ev);
    (void)err;   /* best effort */
}

static bool told(struct autoscaler *a, const char *uid)
{
    for (size_t i = 0; i < a->ntold; i++)
        if (!strcmp(a->told[i], uid))
            return true;
    a->told = fg_realloc(a->told, (a->ntold + 1) * sizeof *a->told);
    snprintf(a->told[a->ntold++], sizeof a->told[0], "%s", uid);
    return false;
}

/* ---- scale-up ---- */

/* Packs the pods not yet placed first-fit onto at most `limit` new nodes of v, marking those it
 * placed; returns the nodes it used. */
static size_t pack(struct group_view *v, json_object **pods, size_t n, bool *placed, size_t limit)
{
    struct bin *bins = fg_calloc(limit ? limit : 1, sizeof *bins);
    size_t nbins = 0;
    const char *why;
    for (size_t i = 0; i < n; i++) {
        if (placed[i] || !fits(pods[i], v->tmpl, &v->capacity, &why))
            continue;   /* placed already, or no fresh node of this group takes it */
        size_t b = 0;
        while (b < nbins && !fits(pods[i], v->tmpl, &bins[b].free, &why))
            b++;
        if (b == nbins) {
            if (nbins == limit)
                continue;
            bins[nbins++].free = v->capacity;
        }
        take(&bins[b].free, pods[i]);
        placed[i] = true;
    }
    free(bins);
    return nbins;
}

/* Idle CPU and memory, as a fraction of capacity, that n nodes of v would have after taking pods. */
static double waste(struct group_view *v, json_object **pods, size_t npods, const bool *placed, size_t n)
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

static void scale_up(struct autoscaler *a, struct group_view *views, size_t nviews, json_object *pods)
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
    for (size_t v = 0; v < nviews; v++)   /* pods that an upcoming node will take anyway */
        for (size_t i = 0; i < npending; i++)
            for (size_t b = 0; b < views[v].nupcoming && !placed[i]; b++) {
                const char *why;
                if (fits(pending[i], views[v].tmpl, &views[v].upcoming[b].free, &why)) {
                    take(&views[v].upcoming[b].free, pending[i]);
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
        struct group_view *v = &views[best];
        char msg[256];
        snprintf(msg, sizeof msg, "pod triggered scale-up: [{%s %ld->%ld (max: %u)}]", v->g->name, v->size,
                 v->size + (long)best_nodes, v->g->max_size);
        fg_log(FG_LOG_INFO, COMPONENT, "scale-up: group %s %ld->%ld for %zu pods", v->g->name, v->size,
               v->size + (long)best_nodes, best_count);
        char errmsg[FG_ERRMSG_MAX];
        for (size_t i = 0; i < best_nodes; i++) {
            char node[FG_SIM_NODE_NAME_MAX];
            if (fg_sim_cloud_launch(a->client, v->g->name, node, errmsg) != FG_OK)
                fg_log(FG_LOG_WARN, COMPONENT, "%s", errmsg);
        }
        v->size += (long)best_nodes;
        a->last_scale_up_ms = now;
        for (size_t i = 0; i < npending; i++)
            if (best_placed[i] && !placed[i])
                event(a, pending[i], "Pod", "Normal", "TriggeredScaleUp", msg);
        memcpy(placed, best_placed, npending * sizeof *placed);
        free(best_placed);
    }
    for (size_t i = 0; i < npending; i++) {   /* what no group can take: say why, once */
        if (placed[i] || told(a, fg_json_get_str(pending[i], "metadata", "uid", NULL)))
            continue;
        char msg[512] = "pod didn't trigger scale-up:";
        for (size_t v = 0; v < nviews; v++) {
            const char *why = "max node group size reached";
            if ((long)views[v].g->max_size > views[v].size)
                fits(pending[i], views[v].tmpl, &views[v].capacity, &why);
            size_t len = strlen(msg);
            snprintf(msg + len, sizeof msg - len, "%s 1 %s", v ? "," : "", why);
        }
        event(a, pending[i], "Pod", "Normal", "NotTriggerScaleUp", msg);
    }
    free(placed);
    free(pending);
}

/* ---- scale-down ---- */

static bool blocks_emptiness(json_object *pod)
{
    if (fg_sim_pod_finished(pod))
        return false;
    json_object *ref = fg_sim_controller_ref(pod);
    return !fg_str_eq(fg_json_get_str(ref, "kind", NULL), "DaemonSet") &&
           !fg_json_get_str(pod, "metadata", "annotations", "kubernetes.io/config.mirror", NULL);
}

static int64_t *unneeded_since(struct autoscaler *a, const char *node, int64_t now, bool add)
{
    for (size_t i = 0; i < a->nunneeded; i++)
        if (!strcmp(a->unneeded[i].node, node))
            return &a->unneeded[i].since_ms;
    if (!add || a->nunneeded == MAX_TRACKED)
        return NULL;
    struct unneeded *u = &a->unneeded[a->nunneeded++];
    snprintf(u->node, sizeof u->node, "%s", node);
    u->since_ms = now;
    return &u->since_ms;
}

static void forget_unneeded(struct autoscaler *a, const char *node)
{
    for (size_t i = 0; i < a->nunneeded; i++)
        if (!strcmp(a->unneeded[i].node, node))
            a->unneeded[i] = a->unneeded[--a->nunneeded];
}

static enum fg_err taint_to_be_deleted(struct autoscaler *a, json_object *node)
{
    json_object *taints = json_object_new_array(), *old = fg_json_get(node, "spec", "taints", NULL);
    for (size_t i = 0; i < fg_json_array_len(old); i++)
        json_object_array_add(taints, json_object_get(json_object_array_get_idx(old, i)));
    json_object *t = json_object_new_object();
    char value[32];
    snprintf(value, sizeof value, "%lld", (long long)time(NULL));
    fg_json_set_str(t, "key", TO_BE_DELETED);
    fg_json_set_str(t, "value", value);
    fg_json_set_str(t, "effect", "NoSchedule");
    json_object_array_add(taints, t);
    json_object *patch = json_object_new_object();
    json_object_object_add(fg_json_ensure_obj(patch, "spec"), "taints", taints);
    char *path = fg_kube_path(&fg_kube_nodes, NULL, fg_json_get_str(node, "metadata", "name", NULL), NULL, NULL);
    enum fg_err err = fg_kube_patch(a->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, NULL);
    free(path);
    json_object_put(patch);
    return err;
}

static void scale_down(struct autoscaler *a, struct group_view *views, size_t nviews, json_object *nodes,
                       json_object *pods)
{
    int64_t now = fg_clock_wall_ms();
    bool cooling = now - a->last_scale_up_ms < (int64_t)(a->cfg->autoscale.scale_down_delay_after_add_ns / FG_NS_PER_MS);
    for (size_t i = 0; i < fg_json_array_len(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        const char *name = fg_json_get_str(node, "metadata", "name", NULL);
        const char *group = fg_json_get_str(node, "metadata", "labels", FG_SIM_LABEL_GROUP, NULL);
        struct group_view *v = NULL;
        for (size_t g = 0; g < nviews && !v; g++)
            if (fg_str_eq(views[g].g->name, group))
                v = &views[g];
        bool empty = v != NULL, protected = false;
        for (size_t p = 0; p < fg_json_array_len(pods) && empty; p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            if (!fg_str_eq(fg_json_get_str(pod, "spec", "nodeName", NULL), name))
                continue;
            empty = !blocks_emptiness(pod);
            protected = protected || fg_str_eq(fg_json_get_str(pod, "metadata", "annotations", SAFE_TO_EVICT, NULL), "false");
        }
        if (!empty || protected) {
            forget_unneeded(a, name);
            continue;
        }
        int64_t *since = unneeded_since(a, name, now, true);
        if (!since || cooling || v->size <= (long)v->g->min_size ||
            now - *since < (int64_t)(a->cfg->autoscale.scale_down_unneeded_ns / FG_NS_PER_MS))
            continue;
        char errmsg[FG_ERRMSG_MAX], msg[256];
        if (taint_to_be_deleted(a, node) != FG_OK)
            continue;
        snprintf(msg, sizeof msg, "Scale-down: removing empty node %s", name);
        fg_log(FG_LOG_INFO, COMPONENT, "scale-down: group %s %ld->%ld, removing empty node %s", v->g->name, v->size,
               v->size - 1, name);
        event(a, node, "Node", "Normal", "ScaleDownEmpty", msg);
        if (fg_sim_cloud_terminate(a->client, name, errmsg) != FG_OK) {
            fg_log(FG_LOG_WARN, COMPONENT, "%s", errmsg);
            continue;
        }
        v->size--;
        forget_unneeded(a, name);
    }
}

/* ---- the loop ---- */

static void scan(struct autoscaler *a)
{
    json_object *pods = list_store(a->pods), *nodes = list_store(a->nodes), *instances = list_store(a->instances);
    json_object *daemonsets = list_store(a->daemonsets);
    struct group_view views[FG_SIM_MAX_GROUPS];
    size_t nviews = a->cfg->ngroups;
    for (size_t g = 0; g < nviews; g++) {
        struct group_view *v = &views[g];
        memset(v, 0, sizeof *v);
        v->g = &a->cfg->groups[g];
        v->tmpl = template_node(v->g);
        daemon_overhead(daemonsets, v);
        for (size_t i = 0; i < fg_json_array_len(instances); i++) {
            json_object *inst = json_object_array_get_idx(instances, i);
            if (!fg_str_eq(fg_sim_cloud_group(inst), v->g->name))
                continue;
            v->size++;
            bool registered = false;
            for (size_t n = 0; n < fg_json_array_len(nodes) && !registered; n++)
                registered = fg_str_eq(fg_json_get_str(json_object_array_get_idx(nodes, n), "metadata", "name", NULL),
                                       fg_sim_cloud_node(inst));
            if (!registered) {
                v->upcoming = fg_realloc(v->upcoming, (v->nupcoming + 1) * sizeof *v->upcoming);
                v->upcoming[v->nupcoming++].free = v->capacity;
            }
        }
    }
    scale_up(a, views, nviews, pods);
    scale_down(a, views, nviews, nodes, pods);
    for (size_t g = 0; g < nviews; g++) {
        json_object_put(views[g].tmpl);
        free(views[g].upcoming);
    }
    json_object_put(daemonsets);
    json_object_put(instances);
    json_object_put(nodes);
    json_object_put(pods);
}

static void *loop(void *ud)
{
    struct autoscaler *a = ud;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        pthread_mutex_unlock(&a->mu);
        scan(a);
        pthread_mutex_lock(&a->mu);
        if (!a->stop)
            fg_cond_wait_ns(&a->cond, &a->mu, a->cfg->autoscale.scan_ns);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct autoscaler *a = ud;
    a->stop = false;
    if (pthread_create(&a->thread, NULL, loop, a))
        return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the autoscaler");
    a->running = true;
    return FG_OK;
}

static void stop(void *ud)
{
    struct autoscaler *a = ud;
    if (!a->running)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    a->running = false;
}

static void autoscaler_free(void *ud)
{
    struct autoscaler *a = ud;
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cond);
    free(a->told);
    free(a);
}

enum fg_err fg_sim_autoscaler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg)
{
    struct autoscaler *a = fg_calloc(1, sizeof *a);
    a->m = m;
    a->cfg = cfg;
    a->client = fg_manager_client(m);
    pthread_mutex_init(&a->mu, NULL);
    fg_cond_init_monotonic(&a->cond);
    fg_manager_on_free(m, autoscaler_free, a);
    struct fg_informer_factory *f = fg_manager_informers(m);
    enum fg_err err;
    if ((err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods }, &a->pods, errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_nodes }, &a->nodes, errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_daemonsets }, &a->daemonsets,
                                       errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_configmaps,
                                                                      .ns = FG_SIM_CLOUD_NAMESPACE,
                                                                      .label_selector = FG_SIM_CLOUD_SELECTOR },
                                       &a->instances, errmsg)))
        return err;
    return fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "autoscaler", .leader_only = true, .start = start,
                                                              .stop = stop, .ud = a });
}
