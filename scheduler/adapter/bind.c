/*
 * bind — carrying out a placement: at most a few resizes, then the one Binding.
 *
 * The cycle has charged the pod to its node and GPU. When the node's CPU or memory is held by
 * capacity pods' reservations for tenants (their requests beyond the holder's own), or when the
 * GPU's own capacity pod still reserves for tenants, reservations are shrunk through pods/resize:
 * the GPU's own capacity pod by what the pod asks (its reservation was made for pods like it), or
 * more when the node needs more, then others by what the node still lacks. The Binding is sent once
 * every resize was accepted and the kubelet reports it applied (the capacity pod's
 * status.containerStatuses[].resources, Kubernetes 1.33), so the kubelet admitting the tenant counts
 * the shrunk reservation (resize.c sends them, one at a time per capacity pod); a shrink not applied
 * within 15 s, or a capacity pod gone meanwhile, forgets the placement. The Binding
 * (pods/binding, the pod's UID as precondition) carries the GPU's UUID, its index on the node, the
 * capacity pod and the grant signed with the current key. Any failure
 * forgets the placement and the pod backs off; a pod already bound (409) is the watch's to confirm.
 *
 * The node's admission gate. The kubelet asks the device plugin for a tenant's GPU without naming the
 * tenant, so the plugin takes the pod being admitted to be the first of the node's waiting tenants in
 * the order it saw them bound — a guess that the kubelet's restarts, the agent's and pods the kubelet
 * fails before asking can all make wrong. So a tenant's Binding goes only when every tenant of its
 * node that the kubelet has yet to admit (bound, or its Binding sent, and no status.startTime yet)
 * would get the very same reply — GPU, compute, memory and sharing: whichever of them the kubelet
 * admits first, the plugin's answer is right (docs/device-plugin.md). Pods bound together onto one GPU
 * with one allocation, the common burst of a scale-up, go at once; tenants of different GPUs of one
 * node go one admission apart, in the order placed: none overtakes one the gate holds (a Binding still
 * waiting for shrinks holds back nobody). A Binding the gate holds for 30 s (the node's kubelet is
 * down) forgets the placement.
 *
 * Writes are asynchronous on the loop; their callbacks find the pod again by key and UID, since it
 * may have gone meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "base/clock.h"
#include "operator/kube/resource.h"
#include "reconcilers/grant.h"
#include "reconcilers/podcontract.h"
#include "scheduler/adapter/adapter_int.h"

#define MAX_SHRINKS 8
#define APPLY_TIMEOUT_NS (15ull * FG_NS_PER_S)
#define ADMIT_TIMEOUT_NS (30ull * FG_NS_PER_S)

struct bind_op {
    struct fg__sched_adapter *a;
    char *key, *uid, *ns, *name;
    char *node;                 /* where it binds */
    char *body;                 /* the Binding */
    char *caps[MAX_SHRINKS];    /* keys of the capacity pods it waits to see shrunk */
    int n_caps;
    uint64_t since_ns;          /* when it was placed */
    bool gate_held;             /* ready, held by its node's admission gate: counted in gate_waiters */
};

/* Notes whether op is held by its node's gate (false: it leaves the queue, or waits for shrinks). */
static void set_gate_held(struct fg__sched_adapter *a, struct bind_op *op, bool held)
{
    if (op->gate_held == held)
        return;
    op->gate_held = held;
    struct sa_node *n = sa_node_get(a, op->node, false);
    if (n && held)
        n->gate_waiters++;
    else if (n && n->gate_waiters)   /* (a node made again meanwhile counts from 0) */
        n->gate_waiters--;
}

static void op_free(struct bind_op *op)
{
    for (int i = 0; i < op->n_caps; i++)
        free(op->caps[i]);
    free(op->key);
    free(op->uid);
    free(op->ns);
    free(op->name);
    free(op->node);
    free(op->body);
    free(op);
}

/* The pod of op, or NULL when it went (or was made again) meanwhile. */
static struct sa_pod *op_pod(struct bind_op *op)
{
    struct sa_pod *p = op->a->running ? sa_pod_get(op->a, op->key) : NULL;
    return p && !strcmp(p->uid, op->uid) ? p : NULL;
}

static void status_text(char *out, size_t size, enum fg_err err, const struct fg_kube_status *st)
{
    snprintf(out, size, "%s%s%s", fg_err_str(err), st && st->message ? ": " : "", st && st->message ? st->message : "");
}

static void bound(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct bind_op *op = ud;
    struct fg__sched_adapter *a = op->a;
    struct sa_pod *p = op_pod(op);
    if (p) {
        p->binding = false;
        if (err && !(st && st->http_code == 409 && p->info.node)) {
            char why[FG_ERRMSG_MAX];
            status_text(why, sizeof(why), err, st);
            fg_counter_add(a->bind_errors, 1);
            sa_pod_forget(a, p, why);
        }
    }
    op_free(op);
}

static void send_binding(struct bind_op *op, struct sa_pod *p)
{
    struct fg__sched_adapter *a = op->a;
    p->bind_sent_ns = fg_clock_mono_ns();
    fg_histogram_observe(a->binding_wait, (double)(p->bind_sent_ns - op->since_ns) / 1e9);
    char *path = fg_kube_path(&fg_kube_pods, op->ns, op->name, "binding", NULL);
    fg_kube_loop_request(a->loop, "POST", path, "application/json", op->body, strlen(op->body), bound, op);
    free(path);
}

/* Whether the kubelet applied every shrink op waits for; *gone when one of its capacity pods went. */
static bool applied(struct fg__sched_adapter *a, struct bind_op *op, bool *gone)
{
    *gone = false;
    for (int i = 0; i < op->n_caps; i++) {
        const struct sa_pod *cap = sa_pod_get(a, op->caps[i]);
        if (!cap || cap->deleting_sent || cap->info.deleting) {
            *gone = true;
            return false;
        }
        if (!sa_resize_applied(cap))
            return false;
    }
    return true;
}

/* What the device plugin answers for a tenant: its GPU, amounts and sharing. */
struct reply {
    const char *gpu;
    int milli;
    int64_t mem_mib;
    enum fg_sched_sharing sharing;
};

static bool same_reply(const struct reply *x, const struct reply *y)
{
    return !strcmp(x->gpu, y->gpu) && x->milli == y->milli && x->mem_mib == y->mem_mib && x->sharing == y->sharing;
}

/* Whether q is a tenant of node n that the kubelet has yet to admit, with the reply it is to get. */
static bool unadmitted(const struct sa_pod *q, const struct sa_node *n, struct reply *r)
{
    if (q->info.role != FG_SA_FRACGPU || !q->info.has_gpu || q->info.terminal)
        return false;
    const char *gpu = NULL;
    if (q->info.node && !strcmp(q->info.node, n->name) && !q->info.started)
        gpu = q->info.gpu_uuid;   /* bound: its Binding's annotation */
    else if (!q->info.node && q->assumed && q->bind_sent_ns && q->on == n)
        gpu = q->bound_gpu;       /* its Binding sent, not yet seen */
    if (!gpu)
        return false;
    *r = (struct reply){ gpu, q->info.milli, q->info.gpu_mem_mib, q->info.sharing };
    return true;
}

/* Why p's Binding to node n may not go yet (the essay: the gate holds an earlier Binding to n, when
 * behind), naming in why what it waits on; "" when it may. */
static void admission_wait(const struct sa_node *n, const struct sa_pod *p, bool behind, char *why, size_t size)
{
    why[0] = '\0';
    if (!n || !p->info.has_gpu)
        return;
    if (behind) {
        snprintf(why, size, "the node's admission gate holds an earlier Binding to it");
        return;
    }
    struct reply mine = { p->bound_gpu, p->info.milli, p->info.gpu_mem_mib, p->info.sharing }, theirs;
    for (size_t i = 0; i < n->n_pods; i++) {
        const struct sa_pod *q = n->pods[i];
        if (q != p && unadmitted(q, n, &theirs) && !same_reply(&mine, &theirs)) {
            if (q->info.node)
                snprintf(why, size, "the kubelet has not admitted %s, whose GPU or allocation differs", q->key);
            else
                snprintf(why, size, "the Binding of %s, whose GPU or allocation differs, was sent %.1f s ago and "
                         "is not seen yet", q->key, (double)(fg_clock_mono_ns() - q->bind_sent_ns) / 1e9);
            return;
        }
    }
}

void sa_bind_resume(struct fg__sched_adapter *a, const char *node)
{
    uint64_t now = fg_clock_mono_ns(), pass = ++a->bind_pass;
    size_t k = 0;
    for (size_t i = 0; i < a->n_awaiting; i++) {
        struct bind_op *op = a->awaiting[i];
        if (node && strcmp(node, op->node)) {
            a->awaiting[k++] = op;   /* another node's: nothing changed for it (the tick looks at all) */
            continue;
        }
        struct sa_pod *p = op_pod(op);
        struct sa_node *n = sa_node_get(a, op->node, false);
        bool gone = false;
        char held[FG_ERRMSG_MAX] = "";
        bool ready = p && applied(a, op, &gone);
        if (ready)
            admission_wait(n, p, n && n->held_pass == pass, held, sizeof(held));
        set_gate_held(a, op, ready && held[0]);
        if (ready && !held[0]) {
            send_binding(op, p);
        } else if (!p || gone || now - op->since_ns >= (held[0] ? ADMIT_TIMEOUT_NS : APPLY_TIMEOUT_NS)) {
            if (p) {
                char why[FG_ERRMSG_MAX + 64] = "a capacity pod it needed shrunk went away";
                if (held[0])
                    snprintf(why, sizeof(why), "its Binding to %s was held %llu s: %s", op->node,
                             (unsigned long long)(ADMIT_TIMEOUT_NS / FG_NS_PER_S), held);
                for (int c = 0; !gone && !held[0] && c < op->n_caps; c++) {
                    const struct sa_pod *cap = sa_pod_get(a, op->caps[c]);
                    if (cap && !sa_resize_applied(cap))
                        snprintf(why, sizeof(why),
                                 "the kubelet did not apply the shrink of %s in time (requests %lldm, %lld MiB; "
                                 "asked %lldm, %lld MiB%s; applied: %s)", cap->key, (long long)cap->info.cpu_milli,
                                 (long long)cap->info.mem_mib, (long long)cap->target_cpu, (long long)cap->target_mem,
                                 cap->resize_inflight ? ", in flight" : "", cap->info.resized ? "yes" : "no");
                }
                p->binding = false;
                sa_pod_forget(a, p, why);
            }
            set_gate_held(a, op, false);
            op_free(op);
        } else {
            if (n && op->gate_held)
                n->held_pass = pass;   /* the ready ops behind it wait too (not those behind a shrink) */
            a->awaiting[k++] = op;
        }
    }
    a->n_awaiting = k;
}

void sa_bind_fail_waiting_on(struct fg__sched_adapter *a, const char *cap_key, const char *why)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_awaiting; i++) {
        struct bind_op *op = a->awaiting[i];
        bool listed = false;
        for (int j = 0; j < op->n_caps && !listed; j++)
            listed = !strcmp(op->caps[j], cap_key);
        if (!listed) {
            a->awaiting[k++] = op;
            continue;
        }
        struct sa_pod *p = op_pod(op);
        if (p) {
            char text[FG_ERRMSG_MAX + 64];
            snprintf(text, sizeof(text), "the capacity pod's reservation could not be shrunk: %s", why);
            p->binding = false;
            sa_pod_forget(a, p, text);
        }
        set_gate_held(a, op, false);
        op_free(op);
    }
    a->n_awaiting = k;
}

void sa_bind_drop_awaiting(struct fg__sched_adapter *a)
{
    for (size_t i = 0; i < a->n_awaiting; i++) {
        set_gate_held(a, a->awaiting[i], false);
        op_free(a->awaiting[i]);
    }
    free(a->awaiting);
    a->awaiting = NULL;
    a->n_awaiting = a->cap_awaiting = 0;
}

/* Plans the shrinks that hand a pod asking cpu and mem on node n its share of the reservations:
 * lowers the capacity pods' targets (resize.c) and lists them in op. */
static void plan_shrinks(struct fg__sched_adapter *a, struct sa_node *n, int slot, int64_t cpu, int64_t mem,
                         struct bind_op *op)
{
    const struct fg_sched_node *sn = &a->cluster.nodes[n->id];
    int64_t res_cpu = 0, res_mem = 0;
    for (size_t i = 0; i < n->n_pods; i++) {
        struct sa_pod *q = n->pods[i];
        int64_t c, m;
        if (q->info.role == FG_SA_CAPACITY) {
            sa_resize_reserved(q, &c, &m);
            res_cpu += c;
            res_mem += m;
        }
    }
    int64_t need_cpu = res_cpu - sn->free_cpu, need_mem = res_mem - sn->free_mem;
    struct sa_pod *first = slot >= 0 ? n->bins[slot].cap : NULL;
    for (size_t i = 0; i <= n->n_pods && op->n_caps < MAX_SHRINKS; i++) {
        struct sa_pod *q = i == 0 ? first : n->pods[i - 1];
        if (!q || q->info.role != FG_SA_CAPACITY || (i > 0 && q == first))
            continue;
        int64_t want_cpu = i == 0 && cpu > need_cpu ? cpu : need_cpu, want_mem = i == 0 && mem > need_mem ? mem : need_mem;
        if (want_cpu <= 0 && want_mem <= 0)
            break;
        int64_t avail_cpu, avail_mem;
        sa_resize_reserved(q, &avail_cpu, &avail_mem);
        int64_t take_cpu = want_cpu > 0 ? (want_cpu < avail_cpu ? want_cpu : avail_cpu) : 0;
        int64_t take_mem = want_mem > 0 ? (want_mem < avail_mem ? want_mem : avail_mem) : 0;
        if (take_cpu <= 0 && take_mem <= 0)
            continue;
        sa_resize_shrink(q, take_cpu, take_mem);
        need_cpu -= take_cpu;
        need_mem -= take_mem;
        op->caps[op->n_caps++] = fg_strdup(q->key);
    }
}

static char *binding_body(struct sa_pod *p, const char *node, struct sa_pod *cap, int slot, const char *grant)
{
    json_object *b = json_object_new_object(), *meta = json_object_new_object(), *target = json_object_new_object();
    fg_json_set_str(b, "apiVersion", "v1");
    fg_json_set_str(b, "kind", "Binding");
    fg_json_set_str(meta, "name", p->name);
    fg_json_set_str(meta, "namespace", p->ns);
    fg_json_set_str(meta, "uid", p->uid);
    if (cap) {
        json_object *ann = json_object_new_object();
        char index[16];
        snprintf(index, sizeof(index), "%d", slot);
        fg_json_set_str(ann, FG_ANN_GPU_UUID, cap->info.gpu_uuid);
        fg_json_set_str(ann, FG_ANN_GPU_INDEX, index);
        fg_json_set_str(ann, FG_ANN_CAPACITY_POD, cap->name);
        fg_json_set_str(ann, FG_ANN_GRANT, grant);
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(b, "metadata", meta);
    fg_json_set_str(target, "apiVersion", "v1");
    fg_json_set_str(target, "kind", "Node");
    fg_json_set_str(target, "name", node);
    json_object_object_add(b, "target", target);
    char *text = fg_strdup(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
    json_object_put(b);
    return text;
}

enum fg_sched_code sa_bind_start(struct fg__sched_adapter *a, struct sa_pod *p, const struct fg_sched_placement *pl)
{
    struct sa_node *n = sa_node_get(a, p->assumed_node, false);
    struct sa_pod *cap = p->assumed_slot >= 0 ? n->bins[p->assumed_slot].cap : NULL;
    char grant[FG_GRANT_MAX] = "";
    if (pl->n_gpus) {
        const struct fg_grant_keys *keys = fg_grant_watch_get(a->keys);
        const char *why = !cap ? "no capacity pod holds its GPU slot any more" : !keys->current_len ? "no grant key" : NULL;
        struct fg_grant g = { p->uid, n->name, cap ? cap->info.gpu_uuid : NULL, p->info.milli, p->info.gpu_mem_mib };
        if (!why && fg_grant_sign(&g, keys->current, keys->current_len, grant) != FG_OK)
            why = "its grant could not be signed";
        if (why) {
            bool keyless = cap && !keys->current_len;
            fg_log(FG_LOG_WARN, SA_COMPONENT, "pod %s not bound on %s GPU %d: %s%s%s", p->key, n->name, p->assumed_slot,
                   why, keyless ? ": " : "", keyless ? fg_grant_watch_problem(a->keys) : "");
            fg_counter_add(a->bind_errors, 1);
            return FG_SCHED_ERROR;
        }
    }
    struct bind_op *op = fg_calloc(1, sizeof(*op));
    *op = (struct bind_op){ .a = a, .key = fg_strdup(p->key), .uid = fg_strdup(p->uid), .ns = fg_strdup(p->ns),
                            .name = fg_strdup(p->name), .node = fg_strdup(n->name), .since_ns = fg_clock_mono_ns() };
    op->body = binding_body(p, n->name, cap, p->assumed_slot, grant);
    plan_shrinks(a, n, p->assumed_slot, p->want.pod.cpu_milli, p->want.pod.mem_mib, op);
    p->binding = true;
    p->bind_sent_ns = 0;
    snprintf(p->bound_gpu, sizeof(p->bound_gpu), "%s", cap ? cap->info.gpu_uuid : "");
    char held[FG_ERRMSG_MAX] = "";
    if (!op->n_caps)
        admission_wait(n, p, n->gate_waiters > 0, held, sizeof(held));
    if (!op->n_caps && !held[0]) {
        send_binding(op, p);
        return FG_SCHED_SUCCESS;
    }
    if (a->n_awaiting == a->cap_awaiting) {
        a->cap_awaiting = a->cap_awaiting ? 2 * a->cap_awaiting : 8;
        a->awaiting = fg_realloc(a->awaiting, a->cap_awaiting * sizeof(*a->awaiting));
    }
    a->awaiting[a->n_awaiting++] = op;
    set_gate_held(a, op, !op->n_caps);   /* held[0] here: the gate holds it */
    for (int i = 0; i < op->n_caps; i++)
        sa_resize_send(a, sa_pod_get(a, op->caps[i]));
    return FG_SCHED_SUCCESS;
}

static void condition_written(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    char *key = ud;
    if (err && !(st && st->http_code == 404)) {
        char why[FG_ERRMSG_MAX];
        status_text(why, sizeof(why), err, st);
        fg_log(FG_LOG_WARN, SA_COMPONENT, "pod %s: cannot write its PodScheduled condition: %s", key, why);
    }
    free(key);
}

void sa_set_unscheduled(struct fg__sched_adapter *a, struct sa_pod *p, const char *reason, const char *message)
{
    if (p->last_reason == reason && fg_str_eq(p->info.sched_reason, reason))
        return;
    p->last_reason = reason;
    char now[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    json_object *cond = json_object_new_object();
    fg_json_set_str(cond, "type", "PodScheduled");
    fg_json_set_str(cond, "status", "False");
    fg_json_set_str(cond, "reason", reason);
    fg_json_set_str(cond, "message", message);
    fg_json_set_str(cond, "lastTransitionTime", now);
    json_object *conds = json_object_new_array(), *status = json_object_new_object(), *patch = json_object_new_object();
    json_object_array_add(conds, cond);
    json_object_object_add(status, "conditions", conds);
    json_object_object_add(patch, "status", status);
    const char *body = json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN);
    char *path = fg_kube_path(&fg_kube_pods, p->ns, p->name, "status", NULL);
    fg_kube_loop_request(a->loop, "PATCH", path, "application/strategic-merge-patch+json", body, strlen(body),
                         condition_written, fg_strdup(p->key));
    free(path);
    json_object_put(patch);
    fg_log(FG_LOG_INFO, SA_COMPONENT, "pod %s: %s: %s", p->key, reason, message);
}
