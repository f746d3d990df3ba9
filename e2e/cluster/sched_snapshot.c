/*
 * sched_snapshot — the default scheduler's picture of the cluster (kube-scheduler's cache and
 * NodeInfo): every node with its allocatable, labels, taints and unschedulable flag, and every pod
 * placed on it — bound, or assumed by this scheduler and not yet seen bound — counted in the node's
 * requested resources (fg_pod_requests, and the non-zero variant scoring uses) and pod count; the
 * pods nominated to nodes by preemption; the PodDisruptionBudgets.
 *
 * Nodes are decoded once, when their JSON arrives, into the C fields every cycle reads (pods in
 * sched_pod.c); the JSON stays for what the filters read from it (labels, taints). A pod
 * of any scheduler counts once bound: fracgpu's own scheduler's pods take room as well. Pods bound
 * to a node not (or no longer) known are kept on a placeholder, as kube keeps a NodeInfo without
 * its Node, so that they count again if it comes back.
 *
 * A node whose Ready condition is not True carries the taint kube's node lifecycle controller would
 * give it (node.kubernetes.io/not-ready or, when Unknown, node.kubernetes.io/unreachable, effect
 * NoSchedule), so such nodes are skipped by every pod that does not tolerate that, with kube's
 * message. See sched.h for ownership.
 */
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"

uint64_t fg_sim_sched_hash(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h * 1099511628211ull;   /* mark the end, so that "ab"+"c" differs from "a"+"bc" */
}

uint64_t fg_sim_sched_hash_json(uint64_t h, json_object *o)
{
    return fg_sim_sched_hash(h, o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "");
}

int64_t fg_sim_sched_bytes(int64_t milli)
{
    return milli / 1000 + (milli % 1000 != 0);
}

/* ---- nodes ---- */

static void node_free(struct fg_sim_sched_node *n)
{
    free(n->pods);
    json_object_put(n->obj);
    json_object_put(n->taints);
    free(n->name);
    free(n);
}

/* spec.taints, plus NoSchedule not-ready or unreachable when the Ready condition is not True. */
static json_object *effective_taints(json_object *node)
{
    json_object *taints = json_object_new_array();
    json_object *spec = fg_json_get(node, "spec", "taints", NULL);
    for (size_t i = 0; i < fg_json_array_len(spec); i++)
        json_object_array_add(taints, json_object_get(json_object_array_get_idx(spec, i)));
    const char *ready = NULL;
    json_object *conds = fg_json_get(node, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready"))
            ready = fg_json_get_str(c, "status", NULL);
    }
    if (!fg_str_eq(ready, "True")) {
        json_object *t = json_object_new_object();
        fg_json_set_str(t, "key", fg_str_eq(ready, "Unknown") ? "node.kubernetes.io/unreachable"
                                                              : "node.kubernetes.io/not-ready");
        fg_json_set_str(t, "effect", "NoSchedule");
        json_object_array_add(taints, t);
    }
    return taints;
}

static struct fg_sim_sched_node *node_placeholder(struct fg_sim_sched_snapshot *s, const char *name)
{
    struct fg_sim_sched_node *n = fg_sim_sched_node_get(s, name);
    if (n)
        return n;
    n = fg_calloc(1, sizeof *n);
    n->name = fg_strdup(name);
    lh_table_insert(s->by_name, n->name, n);
    return n;
}

static void node_list(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_node *n)
{
    if (s->nnodes == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->nodes = fg_realloc(s->nodes, s->cap * sizeof *s->nodes);
    }
    n->index = s->nnodes;
    s->nodes[s->nnodes++] = n;
    n->listed = true;
}

static void node_unlist(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_node *n)
{
    size_t last = --s->nnodes;
    s->nodes[n->index] = s->nodes[last];
    s->nodes[n->index]->index = n->index;
    n->listed = false;
}

/* Frees a placeholder that holds no pod any more. */
static void node_drop_if_empty(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_node *n)
{
    if (n->listed || n->npods)
        return;
    lh_table_delete(s->by_name, n->name);
    node_free(n);
}

enum fg_err fg_sim_sched_node_set(struct fg_sim_sched_snapshot *s, json_object *node, bool *changed, char *errmsg)
{
    const char *name = fg_json_get_str(node, "metadata", "name", NULL);
    struct fg_resources alloc;
    char why[FG_ERRMSG_MAX];
    enum fg_err err = name ? FG_OK : fg_errmsg(errmsg, FG_E_PARSE, "a node without metadata.name");
    if (!err && fg_resources_from_json(fg_json_get(node, "status", "allocatable", NULL), &alloc, why))
        err = fg_errmsg(errmsg, FG_E_PARSE, "node %s: allocatable: %s", name, why);
    if (err) {
        json_object_put(node);
        return err;
    }
    struct fg_sim_sched_node *n = node_placeholder(s, name);
    json_object *taints = effective_taints(node);
    json_object *unschedulable = fg_json_get(node, "spec", "unschedulable", NULL);
    bool cordoned = unschedulable && json_object_get_boolean(unschedulable);
    uint64_t h = fg_sim_sched_hash_json(fg_sim_sched_hash_json(fg_sim_sched_hash_json(FG_SIM_SCHED_HASH_SEED, fg_json_get(node, "metadata", "labels", NULL)),
                                   taints),
                          fg_json_get(node, "status", "allocatable", NULL));
    h = fg_sim_sched_hash(h, cordoned ? "cordoned" : "");
    if (changed)
        *changed = !n->listed || h != n->props_hash;
    json_object_put(n->obj);
    json_object_put(n->taints);
    n->obj = node;
    n->taints = taints;
    n->unschedulable = cordoned;
    n->hard_taints = n->soft_taints = false;
    for (size_t i = 0; i < fg_json_array_len(taints); i++) {
        const char *effect = fg_json_get_str(json_object_array_get_idx(taints, i), "effect", NULL);
        n->soft_taints |= fg_str_eq(effect, "PreferNoSchedule");
        n->hard_taints |= fg_str_eq(effect, "NoSchedule") || fg_str_eq(effect, "NoExecute");
    }
    n->allocatable = alloc;
    n->alloc_cpu = fg_resources_get(&alloc, "cpu");
    n->alloc_memory = fg_sim_sched_bytes(fg_resources_get(&alloc, "memory"));
    n->alloc_pods = fg_resources_get(&alloc, "pods") / 1000;
    n->props_hash = h;
    if (!n->listed)
        node_list(s, n);
    return FG_OK;
}

void fg_sim_sched_node_remove(struct fg_sim_sched_snapshot *s, const char *name)
{
    struct fg_sim_sched_node *n = fg_sim_sched_node_get(s, name);
    if (!n || !n->listed)
        return;
    node_unlist(s, n);
    node_drop_if_empty(s, n);
}

struct fg_sim_sched_node *fg_sim_sched_node_get(const struct fg_sim_sched_snapshot *s, const char *name)
{
    void *v = NULL;
    return name && lh_table_lookup_ex(s->by_name, name, &v) ? v : NULL;
}

void fg_sim_sched_node_add_pod(struct fg_sim_sched_node *n, struct fg_sim_sched_pod *pod)
{
    if (n->npods == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 8;
        n->pods = fg_realloc(n->pods, n->cap * sizeof *n->pods);
    }
    pod->slot = n->npods;
    n->pods[n->npods++] = pod;
    fg_resources_sum(&n->requested, &pod->requests);
    n->req_cpu += pod->cpu;
    n->req_memory += pod->memory;
    n->nonzero_cpu += pod->nonzero_cpu;
    n->nonzero_memory += pod->nonzero_memory;
    n->naffinity += fg_sim_sched_pod_has_affinity(pod);
}

void fg_sim_sched_node_remove_pod(struct fg_sim_sched_node *n, struct fg_sim_sched_pod *pod)
{
    fg_assert(pod->slot < n->npods && n->pods[pod->slot] == pod);
    n->pods[pod->slot] = n->pods[--n->npods];
    n->pods[pod->slot]->slot = pod->slot;
    fg_resources_sub(&n->requested, &pod->requests);
    n->req_cpu -= pod->cpu;
    n->req_memory -= pod->memory;
    n->nonzero_cpu -= pod->nonzero_cpu;
    n->nonzero_memory -= pod->nonzero_memory;
    n->naffinity -= fg_sim_sched_pod_has_affinity(pod);
}

/* ---- placed pods ---- */

void fg_sim_sched_place(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node)
{
    fg_sim_sched_pod_ref(pod);
    fg_sim_sched_unplace(s, pod->key);
    struct fg_sim_sched_node *n = node_placeholder(s, node);
    fg_sim_sched_node_add_pod(n, pod);
    pod->node = n;
    s->naffinity += fg_sim_sched_pod_has_affinity(pod);
    lh_table_insert(s->pods, pod->key, pod);
}

struct fg_sim_sched_pod *fg_sim_sched_placed(const struct fg_sim_sched_snapshot *s, const char *key)
{
    void *v = NULL;
    return lh_table_lookup_ex(s->pods, key, &v) ? v : NULL;
}

bool fg_sim_sched_unplace(struct fg_sim_sched_snapshot *s, const char *key)
{
    struct fg_sim_sched_pod *pod = fg_sim_sched_placed(s, key);
    if (!pod)
        return false;
    lh_table_delete(s->pods, key);
    struct fg_sim_sched_node *n = pod->node;
    fg_sim_sched_node_remove_pod(n, pod);
    s->naffinity -= fg_sim_sched_pod_has_affinity(pod);
    pod->node = NULL;
    node_drop_if_empty(s, n);
    fg_sim_sched_pod_unref(pod);
    return true;
}

/* ---- nominations ---- */

static struct fg_sim_sched_nomination *nomination(const struct fg_sim_sched_snapshot *s, const char *key)
{
    for (size_t i = 0; i < s->nnominated; i++)
        if (!strcmp(s->nominated[i].pod->key, key))
            return &s->nominated[i];
    return NULL;
}

void fg_sim_sched_nominate(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node)
{
    struct fg_sim_sched_nomination *nom = nomination(s, pod->key);
    if (nom) {
        fg_sim_sched_pod_unref(nom->pod);
        free(nom->node);
        *nom = s->nominated[--s->nnominated];
    }
    if (!node || !*node)
        return;
    if (s->nnominated == s->nom_cap) {
        s->nom_cap = s->nom_cap ? s->nom_cap * 2 : 8;
        s->nominated = fg_realloc(s->nominated, s->nom_cap * sizeof *s->nominated);
    }
    s->nominated[s->nnominated++] = (struct fg_sim_sched_nomination){ fg_sim_sched_pod_ref(pod), fg_strdup(node) };
}

const char *fg_sim_sched_nominated_node(const struct fg_sim_sched_snapshot *s, const char *key)
{
    struct fg_sim_sched_nomination *nom = nomination(s, key);
    return nom ? nom->node : NULL;
}

/* ---- budgets ---- */

void fg_sim_sched_pdb_set(struct fg_sim_sched_snapshot *s, json_object *pdb)
{
    char *key = fg_asprintf("%s/%s", fg_json_get_str(pdb, "metadata", "namespace", NULL),
                            fg_json_get_str(pdb, "metadata", "name", NULL));
    json_object_object_add(s->pdbs, key, pdb);
    free(key);
}

void fg_sim_sched_pdb_remove(struct fg_sim_sched_snapshot *s, const char *key)
{
    json_object_object_del(s->pdbs, key);
}

/* ---- life ---- */

void fg_sim_sched_snapshot_init(struct fg_sim_sched_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->by_name = lh_kchar_table_new(1024, NULL);
    s->pods = lh_kchar_table_new(4096, NULL);
    s->pdbs = json_object_new_object();
}

void fg_sim_sched_snapshot_cleanup(struct fg_sim_sched_snapshot *s)
{
    while (s->nnominated)
        fg_sim_sched_nominate(s, s->nominated[0].pod, NULL);
    free(s->nominated);
    struct lh_entry *e, *tmp;
    lh_foreach_safe(s->pods, e, tmp) fg_sim_sched_unplace(s, lh_entry_k(e));
    while (s->nnodes)
        fg_sim_sched_node_remove(s, s->nodes[0]->name);
    free(s->nodes);
    lh_table_free(s->pods);
    lh_table_free(s->by_name);
    json_object_put(s->pdbs);
    memset(s, 0, sizeof *s);
}
