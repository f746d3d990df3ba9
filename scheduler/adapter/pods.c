/*
 * pods — the scheduler's table of every pod, fed by the pod informer's events.
 *
 * Each event re-reads the pod (podinfo.h) and brings its charge in step (charges.c). A fracgpu pod
 * without a node, gates or deletion waits for the pass; once the watch shows it bound, an assumed
 * placement is confirmed. A capacity pod that becomes live or stops being live, or a tenant that
 * leaves, may let waiting pods fit: the cluster's epoch moves and a pass is asked for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "scheduler/adapter/adapter_int.h"

#define BACKOFF_FIRST_NS (1ull * FG_NS_PER_S)
#define BACKOFF_MAX_NS (10ull * FG_NS_PER_S)   /* kube-scheduler's podMaxBackoffSeconds */

struct sa_pod *sa_pod_get(struct fg__sched_adapter *a, const char *key)
{
    struct sa_pod *p = NULL;
    return lh_table_lookup_ex(a->pods, key, (void **)&p) ? p : NULL;
}

static void pod_free(struct fg__sched_adapter *a, struct sa_pod *p)
{
    if (p->info.role == FG_SA_CAPACITY)
        sa_nodes_forget_cap(a, p);   /* no bin may point at it once it is freed */
    sa_uncharge(a, p);
    a->n_group_wait -= p->group_wait;
    sa_preempt_free(p->preempt);
    fg_sa_want_cleanup(&p->want);
    json_object_put(p->json);
    free(p->strings);
    free(p->key);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p);
}

void sa_pod_backoff(struct fg__sched_adapter *a, struct sa_pod *p)
{
    p->backoff_ns = p->backoff_ns ? p->backoff_ns * 2 : BACKOFF_FIRST_NS;
    if (p->backoff_ns > BACKOFF_MAX_NS)
        p->backoff_ns = BACKOFF_MAX_NS;
    p->next_try_ns = fg_clock_mono_ns() + p->backoff_ns;
    p->failed_epoch = a->epoch;
}

void sa_pod_forget(struct fg__sched_adapter *a, struct sa_pod *p, const char *why)
{
    if (!p->assumed)
        return;
    fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s: placement on %s forgotten: %s", p->key, p->assumed_node, why);
    a->n_group_wait -= p->group_wait;
    p->assumed = p->group_wait = p->binding = false;
    p->bind_sent_ns = 0;
    sa_preempt_free(p->preempt);
    p->preempt = NULL;
    sa_charge_sync(a, p);
    p->waiting = !p->info.node && !p->info.terminal && !p->info.deleting;
    sa_pod_backoff(a, p);
    a->epoch++;
    sa_pass_soon(a);
}

/* Whether the scheduler may read more of p than its info: a pod it may still place (its want is built
 * from the tree) and the operator's own pod (its image, for capacity pods). Every other pod — nearly
 * all of them: bound tenants, capacity pods, everyone else's pods — keeps only info, whose strings are
 * then copied: json-c makes a tree of about ten times the pod's text. */
static bool kept_whole(const struct fg__sched_adapter *a, const struct sa_pod *p)
{
    return (p->info.role == FG_SA_FRACGPU && (!p->info.node || p->assumed)) || fg_str_eq(p->key, a->self_key);
}

/* Repoints info's strings at one owned copy of them, in p->strings. */
static void own_strings(struct sa_pod *p)
{
    const char **s[] = { &p->info.node, &p->info.phase, &p->info.workload, &p->info.group, &p->info.cap_name,
                         &p->info.gpu_uuid, &p->info.sched_reason, &p->info.sig, &p->info.container };
    size_t n = sizeof(s) / sizeof(*s), len = 0;
    for (size_t i = 0; i < n; i++)
        len += *s[i] ? strlen(*s[i]) + 1 : 0;
    char *buf = fg_malloc(len ? len : 1), *at = buf;
    for (size_t i = 0; i < n; i++) {
        if (!*s[i])
            continue;
        size_t l = strlen(*s[i]) + 1;
        memcpy(at, *s[i], l);
        *s[i] = at;
        at += l;
    }
    p->strings = buf;
}

static bool may_free_room(const struct fg_sa_podinfo *was, const struct fg_sa_podinfo *now, bool gone)
{
    if (gone)
        return was->node != NULL;
    return was->node && (now->terminal != was->terminal || !fg_str_eq(was->node, now->node));
}

void sa_pod_seen(struct fg__sched_adapter *a, json_object *pod)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL), *name = fg_json_get_str(pod, "metadata", "name", NULL);
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    if (!ns || !name)
        return;
    char *key = fg_asprintf("%s/%s", ns, name);
    struct sa_pod *p = sa_pod_get(a, key);
    if (p && !fg_str_eq(p->uid, uid ? uid : "")) {   /* deleted and made again under the same name */
        sa_pod_gone(a, key);
        p = NULL;
    }
    bool fresh = !p;
    if (fresh) {
        p = fg_calloc(1, sizeof(*p));
        p->key = key;
        p->ns = fg_strdup(ns);
        p->name = fg_strdup(name);
        p->uid = fg_strdup(uid ? uid : "");
        p->charged_slot = p->assumed_slot = -1;
        lh_table_insert(a->pods, p->key, p);
    } else {
        free(key);
    }
    struct fg_sa_podinfo was = p->info;
    bool was_live = p->info.cap_live;
    const char *was_node = p->info.node, *was_uuid = p->info.gpu_uuid;
    json_object *old = p->json;   /* was's strings live in it, or in old_strings, until the end */
    char *old_strings = p->strings;
    p->json = json_object_get(pod);
    p->strings = NULL;
    fg_sa_podinfo_read(pod, a->o.ns, &p->info);

    if (p->assumed && !p->group_wait && p->info.node) {
        p->assumed = false;   /* confirmed by the watch */
        p->backoff_ns = 0;
    }
    if (!kept_whole(a, p)) {   /* before anything borrows from the tree */
        own_strings(p);
        json_object_put(p->json);
        p->json = NULL;
    }
    bool wants = p->info.role == FG_SA_FRACGPU && !p->info.node && !p->info.terminal && !p->info.deleting &&
                 !p->info.gated && !p->assumed;
    if (!p->assumed) {
        fg_sa_want_cleanup(&p->want);   /* rebuilt from this revision when it is next tried */
        p->want_ok = false;
        p->want_error[0] = '\0';
    }
    p->waiting = wants;
    sa_charge_sync(a, p);

    struct lh_entry *made = p->info.role == FG_SA_CAPACITY ? lh_table_lookup_entry(a->creating, p->name) : NULL;
    if (made) {   /* a create of ours, now seen: counted as a pod from here on */
        char *k = (char *)lh_entry_k(made);
        free(lh_entry_v(made));
        lh_table_delete_entry(a->creating, made);
        free(k);
    }
    if (p->info.role == FG_SA_CAPACITY &&
        (fresh || was_live != p->info.cap_live || !fg_str_eq(was_node, p->info.node) ||
         !fg_str_eq(was_uuid, p->info.gpu_uuid) || was.cap_gpu_mem_mib != p->info.cap_gpu_mem_mib)) {
        if (p->on)
            p->on->dirty = true;
        a->epoch++;
    }
    if (!fresh && p->info.role != FG_SA_CAPACITY && may_free_room(&was, &p->info, false))
        a->epoch++;
    json_object_put(old);
    free(old_strings);
    if (a->n_awaiting && (p->info.role == FG_SA_CAPACITY || (p->info.has_gpu && p->info.node)))
        sa_bind_resume(a, p->info.node);   /* a shrink applied, or a tenant admitted */
    sa_pass_soon(a);
}

void sa_pod_gone(struct fg__sched_adapter *a, const char *key)
{
    struct lh_entry *e = lh_table_lookup_entry(a->pods, key);
    if (!e)
        return;
    struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
    if (p->info.role == FG_SA_CAPACITY && p->on)
        p->on->dirty = true;
    if (may_free_room(&p->info, NULL, true) || p->info.role == FG_SA_CAPACITY)
        a->epoch++;
    /* a tenant that goes opens its node's admission gate, and a capacity pod fails the binds
     * waiting on its shrink */
    const char *on = p->info.node ? p->info.node : p->on ? p->on->name : NULL;
    char *node = a->n_awaiting && on ? fg_strdup(on) : NULL;
    lh_table_delete_entry(a->pods, e);
    pod_free(a, p);
    if (node)
        sa_bind_resume(a, node);
    free(node);
    sa_pass_soon(a);
}

void sa_pods_free(struct fg__sched_adapter *a)
{
    struct lh_entry *e;
    lh_foreach(a->pods, e) pod_free(a, (struct sa_pod *)lh_entry_v(e));
    lh_table_free(a->pods);
    a->pods = NULL;
}
