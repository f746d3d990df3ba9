/*
 * giveback — GPUs let go, on the adapter's tick: idle ones, those of nodes that leave, and tenants
 * whose GPU is no longer held.
 *
 * Idle. A capacity pod with no tenant on its GPU and no pod waiting for its signature for the idle
 * grace period is deleted, with its UID as a precondition.
 *
 * Leaving nodes. A node is leaving when it is cordoned (spec.unschedulable: `kubectl drain` and
 * `kubectl cordon`, node upgrades) or carries the taint an autoscaler puts on a node it removes
 * (ToBeDeletedByClusterAutoscaler, karpenter.sh/disrupted, karpenter.sh/disruption). Nothing new
 * is placed there (the core's filters). On a node an autoscaler removes, the tenants are evicted
 * through the Eviction API with their own grace periods; a PodDisruptionBudget that refuses is asked
 * again at a later tick, never overridden. A cordoned node's tenants are left to whoever drains it
 * (`kubectl drain` evicts them itself): cordoning alone stops nothing. On any leaving node a capacity
 * pod whose GPU has no tenant left is deleted at once, without the idle grace, and never before:
 * the budget fracgpu-capacity (manifests/capacity-holder/pdb.yaml) refuses every eviction of a
 * capacity pod, so a drain waits for this deletion, which comes once the tenants are gone.
 *
 * Consolidation. A capacity pod consolidation marked draining (consolidate.c) is treated as one on a
 * node being removed: its tenants are evicted, their budgets honoured, and it is deleted once they are
 * gone.
 *
 * Lost GPUs. A bound tenant whose capacity pod is gone, not live, or now holds another GPU is
 * evicted at once with a grace period of STRANDED_GRACE_S (Eviction API; deleted if a budget
 * refuses: the GPU under it is not held any more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/resource.h"
#include "scheduler/adapter/adapter_int.h"

/* A tenant whose GPU is no longer held stops now: its grace period is cut to this. */
#define STRANDED_GRACE_S 1
/* A tenant whose budget refused its eviction is asked again after this. */
#define BUDGET_RETRY_NS (5ull * FG_NS_PER_S)

/* How a pod is made to go. */
enum removal {
    REMOVE_DELETE,              /* a capacity pod: DELETE */
    REMOVE_EVICT,               /* a tenant of a leaving node: evicted, its budget honoured */
    REMOVE_EVICT_OR_DELETE,     /* a stranded tenant: evicted now, deleted if a budget refuses */
};


struct pod_call {
    struct fg__sched_adapter *a;
    char *key, *uid, *ns, *name;
    enum removal how;
    int grace_s;                /* the deletion's grace period, -1: the pod's own */
};

static void pod_call_free(struct pod_call *pc)
{
    free(pc->key);
    free(pc->uid);
    free(pc->ns);
    free(pc->name);
    free(pc);
}

static void send_delete(struct pod_call *pc);

static void pod_call_done(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct pod_call *pc = ud;
    struct fg__sched_adapter *a = pc->a;
    if (pc->how == REMOVE_EVICT_OR_DELETE && err && st && st->http_code == 429) {
        pc->how = REMOVE_DELETE;   /* a budget refuses: the GPU is gone all the same */
        send_delete(pc);
        return;
    }
    struct sa_pod *p = a->running ? sa_pod_get(a, pc->key) : NULL;
    if (p && strcmp(p->uid, pc->uid))
        p = NULL;
    if (p && err && st && st->http_code == 429)
        p->spared_until_ns = fg_clock_mono_ns() + BUDGET_RETRY_NS;   /* asked again later, as kubectl drain does */
    if (err && !(st && st->http_code == 404)) {
        fg_log(FG_LOG_WARN, SA_COMPONENT, "cannot remove pod %s: %s%s%s", pc->key, fg_err_str(err),
               st && st->message ? ": " : "", st && st->message ? st->message : "");
        if (p)
            p->deleting_sent = false;   /* tried again at a later tick */
    }
    pod_call_free(pc);
}

static void send_delete(struct pod_call *pc)
{
    char *path = fg_kube_path(&fg_kube_pods, pc->ns, pc->name, NULL, NULL);
    char grace[48] = "";
    if (pc->grace_s >= 0)
        snprintf(grace, sizeof(grace), "\"gracePeriodSeconds\":%d,", pc->grace_s);
    char *body = fg_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",%s\"preconditions\":{\"uid\":\"%s\"}}",
                             grace, pc->uid);
    fg_kube_loop_request(pc->a->loop, "DELETE", path, "application/json", body, strlen(body), pod_call_done, pc);
    free(body);
    free(path);
}

static void remove_pod(struct fg__sched_adapter *a, struct sa_pod *p, enum removal how)
{
    struct pod_call *pc = fg_calloc(1, sizeof(*pc));
    *pc = (struct pod_call){ a, fg_strdup(p->key), fg_strdup(p->uid), fg_strdup(p->ns), fg_strdup(p->name), how,
                             how == REMOVE_EVICT_OR_DELETE ? STRANDED_GRACE_S : -1 };
    p->deleting_sent = true;
    if (p->info.role == FG_SA_CAPACITY && p->on)
        p->on->dirty = true;   /* its GPU takes no new tenant from now on */
    if (how == REMOVE_DELETE) {
        send_delete(pc);
        return;
    }
    char grace[48] = "";
    if (pc->grace_s >= 0)
        snprintf(grace, sizeof(grace), "\"gracePeriodSeconds\":%d,", pc->grace_s);
    char *path = fg_kube_path(&fg_kube_pods, p->ns, p->name, "eviction", NULL);
    char *body = fg_asprintf("{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"%s\","
                             "\"namespace\":\"%s\"},\"deleteOptions\":{%s\"preconditions\":{\"uid\":\"%s\"}}}",
                             p->name, p->ns, grace, p->uid);
    fg_kube_loop_request(a->loop, "POST", path, "application/json", body, strlen(body), pod_call_done, pc);
    free(body);
    free(path);
}

/* Whether capacity pod c has a tenant, bound or on its way. */
static bool has_tenants(const struct sa_pod *c)
{
    if (!c->on)
        return false;
    int slot = sa_node_slot_of(c->on, c->name);
    for (size_t i = 0; i < c->on->n_pods; i++) {
        const struct sa_pod *t = c->on->pods[i];
        if ((slot >= 0 && t->charged_slot == slot) ||
            (t->info.role == FG_SA_FRACGPU && fg_str_eq(t->info.cap_name, c->name) && !t->info.terminal))
            return true;
    }
    return false;
}

/* The signatures some pod waits for a GPU of (keys borrowed from the pods' wants): one walk over the
 * pods per tick, not one per idle capacity pod. */
static lh_table *awaited_signatures(struct fg__sched_adapter *a)
{
    lh_table *t = lh_kchar_table_new(16, NULL);
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        const struct sa_pod *p = (const struct sa_pod *)lh_entry_v(e);
        if (p->waiting && p->want_ok && p->want.pod.n_gpus && !lh_table_lookup_entry(t, p->want.sig))
            lh_table_insert(t, p->want.sig, NULL);
    }
    return t;
}

static void tenant_check(struct fg__sched_adapter *a, struct sa_pod *t)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", a->o.ns, t->info.cap_name);
    const struct sa_pod *c = sa_pod_get(a, key);
    if (c && c->info.cap_live && fg_str_eq(c->info.node, t->info.node) && fg_str_eq(c->info.gpu_uuid, t->info.gpu_uuid))
        return;
    fg_log(FG_LOG_WARN, SA_COMPONENT, "pod %s evicted: its capacity pod %s %s", t->key, key,
           !c ? "is gone" : !c->info.cap_live ? "no longer holds its GPU" : "holds another GPU");
    fg_counter_add(a->tenants_evicted, 1);
    remove_pod(a, t, REMOVE_EVICT_OR_DELETE);
}

/* Evicts the tenants of capacity pod c (on a node an autoscaler removes, or draining) not already going. */
static void evict_tenants(struct fg__sched_adapter *a, const struct sa_pod *c)
{
    int slot = sa_node_slot_of(c->on, c->name);
    for (size_t i = 0; i < c->on->n_pods; i++) {
        struct sa_pod *t = c->on->pods[i];
        bool tenant = (slot >= 0 && t->charged_slot == slot) ||
                      (t->info.role == FG_SA_FRACGPU && fg_str_eq(t->info.cap_name, c->name));
        if (!tenant || !t->info.node || t->assumed || t->deleting_sent || t->info.deleting || t->info.terminal ||
            t->spared_until_ns > fg_clock_mono_ns())
            continue;
        if (sa_draining(c)) {
            fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s evicted: consolidation moves it off capacity pod %s", t->key, c->key);
            fg_counter_add(a->consolidation_moves, 1);
        } else {
            fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s evicted: its node %s is being removed", t->key, c->on->name);
            fg_counter_add(a->tenants_evicted, 1);
        }
        remove_pod(a, t, REMOVE_EVICT);
    }
}

void sa_giveback_tick(struct fg__sched_adapter *a)
{
    uint64_t now = fg_clock_mono_ns(), grace = a->o.idle_grace_ms * 1000000ull;
    lh_table *awaited = NULL;   /* made when first needed */
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
        if (p->info.role == FG_SA_FRACGPU && p->info.node && p->info.cap_name && p->info.has_gpu && !p->deleting_sent &&
            !p->info.deleting && !p->info.terminal)
            tenant_check(a, p);
    }
    lh_foreach(a->pods, e) {
        struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
        if (p->info.role != FG_SA_CAPACITY || !p->info.sig || p->deleting_sent || p->info.deleting || p->info.terminal)
            continue;
        enum sa_leaving leaving = p->on ? sa_node_leaving(p->on) : SA_STAYING;
        bool tenants = p->info.cap_live && has_tenants(p);
        if ((leaving == SA_REMOVED || sa_draining(p)) && tenants)
            evict_tenants(a, p);
        if (leaving != SA_STAYING || sa_draining(p)) {
            if (!tenants) {
                if (sa_draining(p))
                    fg_log(FG_LOG_INFO, SA_COMPONENT, "capacity pod %s given back: consolidation moved its tenants to "
                           "other GPUs", p->key);
                else
                    fg_log(FG_LOG_INFO, SA_COMPONENT, "capacity pod %s given back: its node %s is leaving and its GPU "
                           "has no tenant", p->key, p->on->name);
                fg_counter_add(a->capacity_deleted, 1);
                remove_pod(a, p, REMOVE_DELETE);
                a->epoch++;
            }
            continue;
        }
        if (!tenants && !awaited)
            awaited = awaited_signatures(a);
        if (tenants || lh_table_lookup_entry(awaited, p->info.sig)) {
            p->idle_since_ns = 0;
        } else if (!p->idle_since_ns) {
            p->idle_since_ns = now;
        } else if (now - p->idle_since_ns >= grace) {
            fg_log(FG_LOG_INFO, SA_COMPONENT, "capacity pod %s given back: no tenant for %llu ms", p->key,
                   (unsigned long long)a->o.idle_grace_ms);
            fg_counter_add(a->capacity_deleted, 1);
            remove_pod(a, p, REMOVE_DELETE);
            a->epoch++;
        }
    }
    if (awaited)
        lh_table_free(awaited);
}
