/*
 * preempt — room made on one GPU for a pod that waited too long for new capacity, by evicting
 * tenants of lower priority.
 *
 * When. A GPU pod waiting for capacity (capacity.c) for longer than the preemption delay, that may
 * preempt (spec.preemptionPolicy is not Never) and is not a pod group's member, looks for victims.
 * New capacity is the first answer — it takes nobody's GPU — so preemption is for when it does not
 * come soon enough: the autoscaler is at its limit, or the cloud is out of GPUs.
 *
 * Whom. Each held GPU is a candidate: its tenants of lower priority, bound and not leaving, are
 * taken out of the snapshot for a moment (the core's reserve and unreserve, exact inverses, so the
 * snapshot is as it was after) and the pod is checked against that node with the core's own filters
 * and against that GPU. Where it fits, the victims are reprieved in turn, most important first,
 * while it still fits (kube-scheduler's reprieve). Of the candidates, the one whose most important
 * victim has the lowest priority wins, then the one with the fewest victims. Victims a
 * PodDisruptionBudget protected recently are not taken.
 *
 * How. The room is nominated at once: the pod is charged to that GPU as an assumed placement, so no
 * other pod takes what the victims leave. The victims are evicted through the Eviction API, first
 * as a dry run for all of them — a budget that refuses one (429) leaves every victim in place, the
 * nomination is dropped and that victim is spared for a while — then for real, with their own
 * grace periods. The pod's status.nominatedNodeName names the node. Once every victim is gone the
 * pod is bound like any other (bind.c); if they have not gone within NOMINATION_TIMEOUT the
 * nomination is dropped and the pod waits again.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/resource.h"
#include "scheduler/adapter/adapter_int.h"
#include "scheduler/plugins/plugins.h"

#define NOMINATION_TIMEOUT_NS (120ull * FG_NS_PER_S)
#define SPARED_NS (30ull * FG_NS_PER_S)   /* how long a victim a budget protected is left alone */
#define MAX_VICTIMS 64

struct sa_victim {
    char *key, *uid, *ns, *name;
};

struct sa_preemption {
    struct sa_victim *victims;
    size_t n;
    int pending;                /* eviction answers outstanding */
    bool dry_run;               /* the answers awaited are the dry run's */
    bool refused;               /* a budget (or an error) refused one */
    uint64_t since_ns;
    uint64_t id;                /* tells this preemption's answers from an earlier one's */
};

void sa_preempt_free(struct sa_preemption *pr)
{
    if (!pr)
        return;
    for (size_t i = 0; i < pr->n; i++) {
        free(pr->victims[i].key);
        free(pr->victims[i].uid);
        free(pr->victims[i].ns);
        free(pr->victims[i].name);
    }
    free(pr->victims);
    free(pr);
}

/* ---- choosing ---- */

/* Whether pod fits node id, and GPU slot there, on the snapshot as it is now. */
static bool fits_on(struct fg__sched_adapter *a, const struct fg_sched_pod *pod, int id, int slot)
{
    struct fg_sched_cycle cy = { &a->cluster, pod, fg_sched_pod_model_mask(&a->cluster, pod), NULL };
    const struct fg_sched_profile *pr = &fg_sched_profile_default;
    int in = id, out = -1;
    for (size_t i = 0; i < pr->n_filters; i++) {
        const struct fg_sched_filter_plugin *f = pr->filters[i];
        if (f->prefilter && f->prefilter(&cy) != FG_SCHED_SUCCESS)
            return false;
        if (f->filter(&cy, &in, 1, &out) != 1)
            return false;
    }
    const struct fg_sched_gpu *g = &a->cluster.nodes[id].gpus[slot];
    return fg_sched_gpu_admits(g, pod) && g->free_milli >= pod->gpu_milli;
}

static void take_out(struct fg__sched_adapter *a, struct sa_pod *v)
{
    fg_sched_unreserve(&a->cluster, &v->charge, v->pl.node, v->pl.gpus, v->pl.n_gpus);
}

static void put_back(struct fg__sched_adapter *a, struct sa_pod *v)
{
    fg_sched_reserve(&a->cluster, &v->charge, v->pl.node, v->pl.gpus, v->pl.n_gpus);
}

/* Most important first: reprieved first. */
static int by_importance(const void *x, const void *y)
{
    return sa_pod_order(*(struct sa_pod *const *)x, *(struct sa_pod *const *)y);
}

struct candidate {
    struct sa_node *node;
    int slot;
    struct sa_pod *victims[MAX_VICTIMS];
    size_t n;
    int top;                    /* the highest victim priority */
};

/* The fewest victims on GPU slot of n that let p fit there; false when none do. */
static bool victims_on(struct fg__sched_adapter *a, struct sa_pod *p, struct sa_node *n, int slot, struct candidate *out)
{
    struct sa_pod *all[MAX_VICTIMS];
    size_t k = 0;
    uint64_t now = fg_clock_mono_ns();
    for (size_t i = 0; i < n->n_pods; i++) {
        struct sa_pod *t = n->pods[i];
        if (t->charged_slot != slot || t->assumed || t->info.role != FG_SA_FRACGPU)
            continue;
        if (t->info.priority >= p->info.priority || t->info.deleting || t->deleting_sent || t->spared_until_ns > now ||
            t->pl.code != FG_SCHED_SUCCESS)
            continue;
        if (k == MAX_VICTIMS)
            return false;
        all[k++] = t;
    }
    if (!k)
        return false;
    for (size_t i = 0; i < k; i++)
        take_out(a, all[i]);
    bool fits = fits_on(a, &p->want.pod, n->id, slot);
    out->n = 0;
    if (fits) {
        qsort(all, k, sizeof(*all), by_importance);
        for (size_t i = 0; i < k; i++) {
            put_back(a, all[i]);
            if (fits_on(a, &p->want.pod, n->id, slot))
                continue;   /* reprieved: stays, charged again */
            take_out(a, all[i]);
            out->victims[out->n++] = all[i];
        }
    }
    /* the snapshot as it was: every victim still out charged again */
    for (size_t i = 0; i < k; i++) {
        bool out_now = !fits;
        for (size_t j = 0; j < out->n && !out_now; j++)
            out_now = out->victims[j] == all[i];
        if (out_now)
            put_back(a, all[i]);
    }
    if (!fits || !out->n)
        return false;
    out->node = n;
    out->slot = slot;
    out->top = INT_MIN;
    for (size_t i = 0; i < out->n; i++)
        if (out->victims[i]->info.priority > out->top)
            out->top = out->victims[i]->info.priority;
    return true;
}

static bool better(const struct candidate *c, const struct candidate *best)
{
    if (!best->node)
        return true;
    if (c->top != best->top)
        return c->top < best->top;
    return c->n < best->n;
}

/* ---- carrying it out ---- */

struct evict_call {
    struct fg__sched_adapter *a;
    char *key, *uid;            /* the preemptor */
    uint64_t id;
    size_t victim;
};

static struct sa_pod *preemptor(struct evict_call *ec)
{
    struct sa_pod *p = ec->a->running ? sa_pod_get(ec->a, ec->key) : NULL;
    return p && !strcmp(p->uid, ec->uid) && p->preempt && p->preempt->id == ec->id ? p : NULL;
}

static void send_evictions(struct fg__sched_adapter *a, struct sa_pod *p, bool dry_run);

static void nominated(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    char *key = ud;
    if (err && !(st && st->http_code == 404))
        fg_log(FG_LOG_WARN, SA_COMPONENT, "pod %s: cannot write its nominatedNodeName: %s%s%s", key, fg_err_str(err),
               st && st->message ? ": " : "", st && st->message ? st->message : "");
    free(key);
}

static void nominate_node(struct fg__sched_adapter *a, struct sa_pod *p)
{
    char *body = fg_asprintf("{\"status\":{\"nominatedNodeName\":\"%s\"}}", p->assumed_node);
    char *path = fg_kube_path(&fg_kube_pods, p->ns, p->name, "status", NULL);
    fg_kube_loop_request(a->loop, "PATCH", path, "application/strategic-merge-patch+json", body, strlen(body), nominated,
                         fg_strdup(p->key));
    free(path);
    free(body);
}

static void evicted(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct evict_call *ec = ud;
    struct fg__sched_adapter *a = ec->a;
    struct sa_pod *p = preemptor(ec);
    if (p) {
        struct sa_preemption *pr = p->preempt;
        if (err && !(st && st->http_code == 404)) {   /* a victim already gone is as good as evicted */
            struct sa_pod *v = sa_pod_get(a, pr->victims[ec->victim].key);
            bool budget = st && st->http_code == 429;
            if (v && budget)
                v->spared_until_ns = fg_clock_mono_ns() + SPARED_NS;
            fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s: victim %s not evicted%s: %s%s%s", p->key,
                   pr->victims[ec->victim].key, pr->dry_run ? " (dry run)" : "",
                   budget ? "a PodDisruptionBudget refuses" : fg_err_str(err), st && st->message ? ": " : "",
                   st && st->message ? st->message : "");
            pr->refused = true;
        }
        if (--pr->pending == 0) {
            if (pr->refused) {
                sa_pod_forget(a, p, "a victim of its preemption could not be evicted");
            } else if (pr->dry_run) {
                send_evictions(a, p, false);
            } else {
                fg_counter_add(a->preemptions, (uint64_t)pr->n);
                nominate_node(a, p);
            }
        }
    }
    free(ec->key);
    free(ec->uid);
    free(ec);
}

static void send_evictions(struct fg__sched_adapter *a, struct sa_pod *p, bool dry_run)
{
    struct sa_preemption *pr = p->preempt;
    pr->dry_run = dry_run;
    pr->pending = (int)pr->n;
    for (size_t i = 0; i < pr->n; i++) {
        const struct sa_victim *v = &pr->victims[i];
        char *path = fg_kube_path(&fg_kube_pods, v->ns, v->name, "eviction", dry_run ? "dryRun=All" : NULL);
        char *body = fg_asprintf("{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"%s\","
                                 "\"namespace\":\"%s\"},\"deleteOptions\":{%s\"preconditions\":{\"uid\":\"%s\"}}}",
                                 v->name, v->ns, dry_run ? "\"dryRun\":[\"All\"]," : "", v->uid);
        struct evict_call *ec = fg_calloc(1, sizeof(*ec));
        *ec = (struct evict_call){ a, fg_strdup(p->key), fg_strdup(p->uid), pr->id, i };
        fg_kube_loop_request(a->loop, "POST", path, "application/json", body, strlen(body), evicted, ec);
        free(body);
        free(path);
    }
}

/* Charges p to c's GPU as nominated and starts evicting c's victims. */
static void nominate(struct fg__sched_adapter *a, struct sa_pod *p, const struct candidate *c)
{
    static uint64_t next_id;
    struct sa_node *n = c->node;
    struct sa_pod *cap = n->bins[c->slot].cap;
    p->assumed = true;
    p->waiting = false;
    snprintf(p->assumed_node, sizeof(p->assumed_node), "%s", n->name);
    snprintf(p->assumed_cap, sizeof(p->assumed_cap), "%s", cap->name);
    p->assumed_slot = c->slot;
    sa_node_list_add(n, p);
    sa_charge_on(a, p, n);
    struct sa_preemption *pr = fg_calloc(1, sizeof(*pr));
    pr->victims = fg_calloc(c->n, sizeof(*pr->victims));
    pr->n = c->n;
    pr->since_ns = fg_clock_mono_ns();
    pr->id = ++next_id;
    for (size_t i = 0; i < c->n; i++) {
        struct sa_pod *v = c->victims[i];
        pr->victims[i] = (struct sa_victim){ fg_strdup(v->key), fg_strdup(v->uid), fg_strdup(v->ns), fg_strdup(v->name) };
        fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s (priority %d) preempts %s (priority %d) on %s GPU %d (capacity pod %s)",
               p->key, p->info.priority, v->key, v->info.priority, n->name, c->slot, cap->name);
    }
    p->preempt = pr;
    send_evictions(a, p, true);
}

bool sa_preempt_try(struct fg__sched_adapter *a, struct sa_pod *p)
{
    if (p->info.never_preempts || p->want.pod.group || !p->want.pod.n_gpus || p->preempt)
        return false;
    struct candidate best = { 0 }, c;
    struct lh_entry *e;
    lh_foreach(a->nodes, e) {
        struct sa_node *n = (struct sa_node *)lh_entry_v(e);
        if (n->id < 0)
            continue;
        for (int s = 0; s < n->n_gpus; s++) {
            struct sa_pod *cap = n->bins[s].cap;
            if (!cap || cap->deleting_sent || !victims_on(a, p, n, s, &c))
                continue;
            if (better(&c, &best))
                best = c;
        }
    }
    if (!best.node)
        return false;
    nominate(a, p, &best);
    return true;
}

/* Whether every victim of pr has left (gone, made again, or ended). */
static bool victims_gone(struct fg__sched_adapter *a, const struct sa_preemption *pr)
{
    for (size_t i = 0; i < pr->n; i++) {
        const struct sa_pod *v = sa_pod_get(a, pr->victims[i].key);
        if (v && !strcmp(v->uid, pr->victims[i].uid) && !v->info.terminal && v->on)
            return false;
    }
    return true;
}

void sa_preempt_tick(struct fg__sched_adapter *a)
{
    uint64_t now = fg_clock_mono_ns();
    struct lh_entry *e, *next;
    for (e = a->pods->head; e; e = next) {
        next = e->next;
        struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
        struct sa_preemption *pr = p->preempt;
        if (!pr || pr->pending || pr->dry_run)
            continue;
        if (victims_gone(a, pr)) {
            sa_preempt_free(pr);
            p->preempt = NULL;
            fg_counter_add(a->scheduled, 1);
            if (sa_bind_start(a, p, &p->pl) != FG_SCHED_SUCCESS)
                sa_pod_forget(a, p, "its nominated GPU could not be bound");
        } else if (now - pr->since_ns >= NOMINATION_TIMEOUT_NS) {
            sa_pod_forget(a, p, "the victims of its preemption did not leave in time");
        }
    }
}
