/*
 * cycle — the scheduling pass: every waiting pod that may be tried, by priority then age, through
 * the core's cycle; then the pod groups whose members are all reserved are bound, groups that waited
 * too long are released, and the pods nothing could hold go to the capacity pass.
 *
 * A pass runs on the loop soon after the events that asked for it (they are many: one pass serves
 * them all) and again on the adapter's tick for pods whose backoff ran out. A pod that failed is
 * tried again once its backoff has passed and the cluster's epoch has moved since its failure, or
 * after 30 s in any case.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "scheduler/adapter/adapter_int.h"
#include "scheduler/plugins/plugins.h"
#include "scheduler/policies/policy.h"

#define RETRY_ANYWAY_NS (30ull * FG_NS_PER_S)

static bool due(const struct fg__sched_adapter *a, const struct sa_pod *p, uint64_t now)
{
    if (!p->waiting)
        return false;
    if (!p->failed_epoch)
        return true;
    if (now < p->next_try_ns)
        return false;
    return p->failed_epoch != a->epoch || now >= p->next_try_ns - p->backoff_ns + RETRY_ANYWAY_NS;
}

int sa_pod_order(const struct sa_pod *p, const struct sa_pod *q)
{
    if (p->info.priority != q->info.priority)
        return p->info.priority > q->info.priority ? -1 : 1;
    if (p->info.created_ms != q->info.created_ms)
        return p->info.created_ms < q->info.created_ms ? -1 : 1;
    return strcmp(p->key, q->key);
}

static int by_priority_then_age(const void *x, const void *y)
{
    return sa_pod_order(*(struct sa_pod *const *)x, *(struct sa_pod *const *)y);
}

static void note_unschedulable(struct fg__sched_adapter *a, struct sa_pod *p)
{
    if (a->n_unschedulable == a->cap_unschedulable) {
        a->cap_unschedulable = a->cap_unschedulable ? 2 * a->cap_unschedulable : 64;
        a->unschedulable = fg_realloc(a->unschedulable, a->cap_unschedulable * sizeof(*a->unschedulable));
    }
    a->unschedulable[a->n_unschedulable++] = p;
}

/* The pod's assumed placement, recorded once the cycle reserved it. */
static void assume(struct fg__sched_adapter *a, struct sa_pod *p, const struct fg_sched_placement *pl)
{
    struct sa_node *n = sa_node_get(a, a->cluster.nodes[pl->node].name, false);
    p->assumed = true;
    p->waiting = false;
    snprintf(p->assumed_node, sizeof(p->assumed_node), "%s", n->name);
    p->assumed_slot = pl->n_gpus ? pl->gpus[0] : -1;
    snprintf(p->assumed_cap, sizeof(p->assumed_cap), "%s",
             p->assumed_slot >= 0 && n->bins[p->assumed_slot].cap ? n->bins[p->assumed_slot].cap->name : "");
}

/* Enters the placement the framework reserved into the pod's charge (the framework charged it). */
static void record(struct fg__sched_adapter *a, struct sa_pod *p, const struct fg_sched_placement *pl)
{
    sa_node_list_add(sa_node_get(a, p->assumed_node, false), p);
    p->pl = *pl;
    p->charge = p->want.pod;
    p->charged_slot = p->assumed_slot;
}

static void try_pod(struct fg__sched_adapter *a, struct sa_pod *p)
{
    char why[FG_ERRMSG_MAX] = "";
    if (!p->want_ok && !p->want_error[0]) {
        fg_sa_want_cleanup(&p->want);
        if (fg_sa_want_build(p->json, &p->info, a->gpu_mem_max ? a->gpu_mem_max : 1, &p->want, why) == FG_OK)
            p->want_ok = true;
        else
            snprintf(p->want_error, sizeof(p->want_error), "%s", why);
    }
    if (!p->want_ok) {
        sa_set_unscheduled(a, p, "Unschedulable", p->want_error);
        sa_pod_backoff(a, p);
        return;
    }
    struct fg_sched_placement pl;
    a->cycle_pod = p;
    enum fg_err err = fg_sched_schedule(&a->fw, &a->cluster, &p->want.pod, &pl, why);
    a->cycle_pod = NULL;
    if (err) {
        snprintf(p->want_error, sizeof(p->want_error), "%s", why);
        p->want_ok = false;
        sa_set_unscheduled(a, p, "Unschedulable", why);
        sa_pod_backoff(a, p);
        return;
    }
    switch (pl.code) {
    case FG_SCHED_SUCCESS:
        record(a, p, &pl);
        fg_counter_add(a->scheduled, 1);
        return;
    case FG_SCHED_WAIT:
        assume(a, p, &pl);
        p->group_wait = true;
        a->n_group_wait++;
        p->group_since_ns = fg_clock_mono_ns();
        record(a, p, &pl);
        return;
    case FG_SCHED_UNSCHEDULABLE:
        fg_counter_add(a->unschedulable_ctr, 1);
        sa_pod_backoff(a, p);
        if (!p->want.pod.n_gpus)   /* GPU pods went to the capacity pass from PostFilter */
            sa_set_unscheduled(a, p, "Unschedulable", pl.reason ? pl.reason : "no node fits");
        return;
    case FG_SCHED_UNRESOLVABLE:
        sa_set_unscheduled(a, p, "Unschedulable", pl.reason ? pl.reason : "no node can ever fit the pod");
        sa_pod_backoff(a, p);
        return;
    case FG_SCHED_ERROR:
        sa_pod_backoff(a, p);
        return;
    }
}

/* Binds the members of permitted groups; releases groups that waited past the timeout. */
static void groups(struct fg__sched_adapter *a)
{
    if (!a->n_group_wait)
        return;
    uint64_t now = fg_clock_mono_ns();   /* not the pass's start: members reserved in this pass came after it */
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
        if (!p->group_wait)
            continue;
        if (fg_sched_group_permitted(&a->fw, p->want.pod.group)) {
            char why[FG_ERRMSG_MAX];
            p->group_wait = false;
            a->n_group_wait--;
            a->cycle_pod = p;
            if (fg_sched_framework_bind(&a->fw, &a->cluster, &p->want.pod, &p->pl, why) != FG_OK ||
                p->pl.code != FG_SCHED_SUCCESS) {
                p->assumed = false;
                sa_uncharge(a, p);
                p->waiting = true;
                sa_pod_backoff(a, p);
            }
            a->cycle_pod = NULL;
        } else if (now >= p->group_since_ns + a->o.group_timeout_ms * 1000000ull) {
            fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s: group %s still short of %d members after %llu ms: released",
                   p->key, p->want.pod.group, p->want.pod.group_min, (unsigned long long)a->o.group_timeout_ms);
            sa_set_unscheduled(a, p, "Unschedulable", "its pod group did not gather in time");
            sa_pod_forget(a, p, "pod group timed out");
        }
    }
}

void sa_pass(struct fg__sched_adapter *a)
{
    if (!a->running)
        return;
    uint64_t start = fg_clock_mono_ns();
    sa_nodes_flush(a);
    size_t n = 0, cap = 64;
    struct sa_pod **due_pods = fg_malloc(cap * sizeof(*due_pods));
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
        if (!due(a, p, start))
            continue;
        if (n == cap)
            due_pods = fg_realloc(due_pods, (cap *= 2) * sizeof(*due_pods));
        due_pods[n++] = p;
    }
    qsort(due_pods, n, sizeof(*due_pods), by_priority_then_age);
    a->n_unschedulable = 0;
    for (size_t i = 0; i < n; i++)
        try_pod(a, due_pods[i]);
    free(due_pods);
    groups(a);
    sa_capacity_plan(a);
    if (n)
        fg_histogram_observe(a->cycle_seconds, (double)(fg_clock_mono_ns() - start) / 1e9);
}

static void pass_cb(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct fg__sched_adapter *a = ud;
    a->pass_armed = false;
    sa_pass(a);
}

void sa_pass_soon(struct fg__sched_adapter *a)
{
    if (!a->running || a->pass_armed)
        return;
    a->pass_armed = true;
    struct timeval tv = { 0, 2000 };   /* gathers the events of a burst into one pass */
    event_add(a->pass_ev, &tv);
}

/* ---- plugins ---- */

/* PostFilter: nothing fits now; a GPU pod is handed to the capacity pass (capacity.c), which asks
 * for new GPUs once the pass is over. */
static enum fg_sched_code post_filter(const struct fg_sched_post_filter_plugin *pl, struct fg_sched_cycle *cy)
{
    struct fg__sched_adapter *a = pl->ctx;
    if (cy->pod->n_gpus)
        note_unschedulable(a, a->cycle_pod);
    return FG_SCHED_UNSCHEDULABLE;
}

static enum fg_sched_code bind_plugin(const struct fg_sched_bind_plugin *pl, const struct fg_sched_cluster *c,
                                      const struct fg_sched_pod *pod, const struct fg_sched_placement *p)
{
    (void)c;
    (void)pod;
    struct fg__sched_adapter *a = pl->ctx;
    struct sa_pod *sp = a->cycle_pod;
    assume(a, sp, p);
    enum fg_sched_code code = sa_bind_start(a, sp, p);
    if (code != FG_SCHED_SUCCESS)
        sp->assumed = false;
    return code;
}

enum fg_err sa_cycle_init(struct fg__sched_adapter *a, char *errmsg)
{
    fg_sched_cluster_init(&a->cluster);
    enum fg_err err = fg_sched_policy_new(a->o.policy, NULL, 1, &a->policy, errmsg);
    if (err)
        return err;
    a->bind = (struct fg_sched_bind_plugin){ "fracgpu-binding", bind_plugin, a };
    a->profile = fg_sched_profile_default;
    a->profile.bind = &a->bind;
    a->post_filter = (struct fg_sched_post_filter_plugin){ "fracgpu-capacity", post_filter, a };
    a->profile.post_filter = &a->post_filter;
    fg_sched_framework_init(&a->fw, &a->profile, a->policy);
    a->pass_ev = evtimer_new(a->base, pass_cb, a);
    return FG_OK;
}

void sa_cycle_cleanup(struct fg__sched_adapter *a)
{
    if (a->pass_ev)
        event_free(a->pass_ev);
    a->pass_ev = NULL;
    a->pass_armed = false;
    fg_sched_framework_cleanup(&a->fw);
    fg_sched_policy_free(a->policy);
    a->policy = NULL;
    fg_sched_cluster_cleanup(&a->cluster);
    free(a->unschedulable);
    a->unschedulable = NULL;
    a->n_unschedulable = a->cap_unschedulable = 0;
}
