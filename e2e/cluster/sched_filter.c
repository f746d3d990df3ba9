/*
 * sched_filter — kube-scheduler's Filter plugins on one node, in the default profile's order, each
 * stopping the node's evaluation at its first failure as kube's framework does:
 *   NodeUnschedulable  spec.unschedulable, unless the pod tolerates node.kubernetes.io/unschedulable
 *                      NoSchedule                              (UnschedulableAndUnresolvable)
 *   NodeName           spec.nodeName names another node        (UnschedulableAndUnresolvable)
 *   TaintToleration    an untolerated NoSchedule/NoExecute taint, named with its key and value
 *                                                              (UnschedulableAndUnresolvable)
 *   NodeAffinity       nodeSelector and required node affinity (UnschedulableAndUnresolvable)
 *   NodePorts          a hostPort already taken on the node (same protocol and port, and the same
 *                      hostIP or either one 0.0.0.0)          (Unschedulable)
 *   NodeResourcesFit   "Too many pods" against allocatable pods, then every requested resource
 *                      beyond allocatable minus requested, each a reason of its own
 *                                                              (Unschedulable; UnschedulableAndUnresolvable
 *                                                               when the request exceeds allocatable itself)
 *   PodTopologySpread and InterPodAffinity (sched_spread.c, sched_affinity.c).
 * Only Unschedulable nodes are candidates for preemption.
 *
 * The diagnosis counts each reason over the nodes, and the FitError message is kube's: "0/N nodes
 * are available: " and the "count reason" strings sorted as strings (so "10 x" sorts before "2 y"),
 * joined by ", ", ending in "."; then the PostFilter's message after a space.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"
#include "operator/kube/nodematch.h"

void fg_sim_sched_status_add(struct fg_sim_sched_status *st, const char *fmt, ...)
{
    if (st->n == FG_SIM_SCHED_MAX_REASONS || st->used >= sizeof st->buf)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(st->buf + st->used, sizeof st->buf - st->used, fmt, ap);
    va_end(ap);
    st->reasons[st->n++] = st->buf + st->used;
    st->used += len < 0 ? 0 : (size_t)len + 1;
    if (st->used > sizeof st->buf)
        st->used = sizeof st->buf;
}

static void fail(struct fg_sim_sched_status *st, enum fg_sim_sched_code code, unsigned plugin, const char *reason)
{
    st->code = code;
    st->plugin = plugin;
    fg_sim_sched_status_add(st, "%s", reason);
}

static void node_unschedulable(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n,
                               struct fg_sim_sched_status *st)
{
    if (!n->unschedulable)
        return;
    json_object *taint = json_object_new_object();
    fg_json_set_str(taint, "key", "node.kubernetes.io/unschedulable");
    fg_json_set_str(taint, "effect", "NoSchedule");
    json_object *taints = json_object_new_array();
    json_object_array_add(taints, taint);
    if (fg_untolerated_taint(taints, pod->tolerations, false))
        fail(st, FG_SIM_SCHED_UNRESOLVABLE, FG_SIM_SCHED_NODE_UNSCHEDULABLE, "node(s) were unschedulable");
    json_object_put(taints);
}

static void node_name(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n, struct fg_sim_sched_status *st)
{
    if (pod->node_name && *pod->node_name && strcmp(pod->node_name, n->name))
        fail(st, FG_SIM_SCHED_UNRESOLVABLE, FG_SIM_SCHED_NODE_NAME, "node(s) didn't match the requested node name");
}

static void taint_toleration(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n,
                             struct fg_sim_sched_status *st)
{
    json_object *taint = n->hard_taints ? fg_untolerated_taint(n->taints, pod->tolerations, false) : NULL;
    if (!taint)
        return;
    const char *value = fg_json_get_str(taint, "value", NULL);
    st->code = FG_SIM_SCHED_UNRESOLVABLE;
    st->plugin = FG_SIM_SCHED_TAINTS;
    fg_sim_sched_status_add(st, "node(s) had untolerated taint {%s: %s}", fg_json_get_str(taint, "key", NULL),
                            value ? value : "");
}

static void node_affinity(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n,
                          struct fg_sim_sched_status *st)
{
    if (pod->node_constraints && !fg_node_matches_pod(pod->obj, n->obj))
        fail(st, FG_SIM_SCHED_UNRESOLVABLE, FG_SIM_SCHED_NODE_AFFINITY, "node(s) didn't match Pod's node affinity/selector");
}

static bool ports_conflict(const struct fg_sim_sched_port *want, const struct fg_sim_sched_port *used)
{
    if (want->port != used->port || strcmp(want->protocol, used->protocol))
        return false;
    return !strcmp(want->ip, "0.0.0.0") || !strcmp(used->ip, "0.0.0.0") || !strcmp(want->ip, used->ip);
}

static void node_ports(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n, struct fg_sim_sched_status *st)
{
    for (size_t i = 0; i < pod->nports; i++)
        for (size_t j = 0; j < n->npods; j++)
            for (size_t k = 0; k < n->pods[j]->nports; k++)
                if (ports_conflict(&pod->ports[i], &n->pods[j]->ports[k])) {
                    fail(st, FG_SIM_SCHED_UNSCHEDULABLE, FG_SIM_SCHED_NODE_PORTS,
                         "node(s) didn't have free ports for the requested pod ports");
                    return;
                }
}

/* One resource short: a reason, and UnschedulableAndUnresolvable when even an empty node lacks it. */
static void insufficient(struct fg_sim_sched_status *st, const char *name, int64_t want, int64_t alloc)
{
    if (st->code != FG_SIM_SCHED_UNRESOLVABLE)
        st->code = want > alloc ? FG_SIM_SCHED_UNRESOLVABLE : FG_SIM_SCHED_UNSCHEDULABLE;
    st->plugin = FG_SIM_SCHED_RESOURCES;
    fg_sim_sched_status_add(st, "Insufficient %s", name);
}

static void resources_fit(const struct fg_sim_sched_pod *pod, const struct fg_sim_sched_node *n,
                          struct fg_sim_sched_status *st)
{
    if ((int64_t)n->npods + 1 > n->alloc_pods) {
        st->code = FG_SIM_SCHED_UNSCHEDULABLE;
        st->plugin = FG_SIM_SCHED_RESOURCES;
        fg_sim_sched_status_add(st, "Too many pods");
    }
    if (pod->cpu > 0 && pod->cpu > n->alloc_cpu - n->req_cpu)
        insufficient(st, "cpu", pod->cpu, n->alloc_cpu);
    if (pod->memory > 0 && pod->memory > n->alloc_memory - n->req_memory)
        insufficient(st, "memory", pod->memory, n->alloc_memory);
    int64_t storage_alloc = pod->storage > 0 ? fg_resources_get(&n->allocatable, "ephemeral-storage") : 0;
    if (pod->storage > 0 && pod->storage > storage_alloc - fg_resources_get(&n->requested, "ephemeral-storage"))
        insufficient(st, "ephemeral-storage", pod->storage, storage_alloc);
    for (size_t i = 0; pod->extended && i < pod->requests.n; i++) {
        const struct fg_resource_amount *r = &pod->requests.v[i];
        if (r->milli <= 0 || !strcmp(r->name, "cpu") || !strcmp(r->name, "memory") ||
            !strcmp(r->name, "ephemeral-storage") || !strcmp(r->name, "pods"))
            continue;
        int64_t alloc = fg_resources_get(&n->allocatable, r->name);
        if (r->milli > alloc - fg_resources_get(&n->requested, r->name))
            insufficient(st, r->name, r->milli, alloc);
    }
}

void fg_sim_sched_filter_node(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n,
                              struct fg_sim_sched_status *st)
{
    static void (*const filters[])(const struct fg_sim_sched_pod *, const struct fg_sim_sched_node *,
                                   struct fg_sim_sched_status *) = {
        node_unschedulable, node_name, taint_toleration, node_affinity, node_ports, resources_fit,
    };
    st->code = FG_SIM_SCHED_SUCCESS;
    st->plugin = 0;
    st->n = 0;
    st->used = 0;
    for (size_t i = 0; i < sizeof filters / sizeof *filters && !st->code; i++)
        filters[i](c->pod, n, st);
    if (!st->code && c->spread)
        fg_sim_sched_spread_filter(c->spread, n, st);
    if (!st->code && c->affinity)
        fg_sim_sched_affinity_filter(c->affinity, n, st);
}

/* Counts the pods nominated to n with at least the cycle pod's priority on n (sign 1), or takes
 * them off again (-1); returns how many. */
static size_t nominated_on(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n, int sign)
{
    const struct fg_sim_sched_snapshot *s = c->s;
    size_t count = 0;
    for (size_t i = 0; i < s->nnominated; i++) {
        struct fg_sim_sched_pod *p = s->nominated[i].pod;
        if (strcmp(s->nominated[i].node, n->name) || p->priority < c->pod->priority || !strcmp(p->key, c->pod->key) ||
            fg_sim_sched_placed(s, p->key))
            continue;
        if (sign > 0)
            fg_sim_sched_node_add_pod(n, p);
        else
            fg_sim_sched_node_remove_pod(n, p);
        if (c->affinity)
            fg_sim_sched_affinity_update(c->affinity, p, n, sign);
        if (c->spread)
            fg_sim_sched_spread_update(c->spread, p, n, sign);
        count++;
    }
    return count;
}

void fg_sim_sched_filter_with_nominated(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n,
                                        struct fg_sim_sched_status *st)
{
    size_t added = c->s->nnominated ? nominated_on(c, n, 1) : 0;
    fg_sim_sched_filter_node(c, n, st);
    if (!added)
        return;
    nominated_on(c, n, -1);
    if (!st->code)
        fg_sim_sched_filter_node(c, n, st);   /* and without them, as kube's second pass */
}

/* ---- the diagnosis and kube's FitError message ---- */

void fg_sim_sched_diagnosis_count(struct fg_sim_sched_diagnosis *d, const char *text, size_t count)
{
    if (!count)
        return;
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->v[i].text, text)) {
            d->v[i].count += count;
            return;
        }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->v = fg_realloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = (struct fg_sim_sched_reason){ fg_strdup(text), count };
}

void fg_sim_sched_diagnosis_add(struct fg_sim_sched_diagnosis *d, const struct fg_sim_sched_status *st)
{
    for (size_t i = 0; i < st->n; i++)
        fg_sim_sched_diagnosis_count(d, st->reasons[i], 1);
    d->plugins |= st->plugin;
}

void fg_sim_sched_diagnosis_cleanup(struct fg_sim_sched_diagnosis *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i].text);
    free(d->v);
    memset(d, 0, sizeof *d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *fg_sim_sched_fit_message(size_t nnodes, const struct fg_sim_sched_diagnosis *d, const char *postfilter)
{
    char **parts = fg_calloc(d->n ? d->n : 1, sizeof *parts);
    for (size_t i = 0; i < d->n; i++)
        parts[i] = fg_asprintf("%zu %s", d->v[i].count, d->v[i].text);
    qsort(parts, d->n, sizeof *parts, cmp_str);
    struct fg_buf b = FG_BUF_INIT;
    char head[64];
    snprintf(head, sizeof head, "0/%zu nodes are available:", nnodes);
    fg_buf_put_str(&b, head);
    for (size_t i = 0; i < d->n; i++) {
        fg_buf_put_str(&b, i ? ", " : " ");
        fg_buf_put_str(&b, parts[i]);
        free(parts[i]);
    }
    if (d->n)
        fg_buf_put_str(&b, ".");
    if (postfilter) {
        fg_buf_put_str(&b, " ");
        fg_buf_put_str(&b, postfilter);
    }
    free(parts);
    char *out = fg_strndup(b.data, b.len);
    fg_buf_cleanup(&b);
    return out;
}
