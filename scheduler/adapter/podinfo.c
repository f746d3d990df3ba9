/* What fracgpu's scheduler reads of one pod (podinfo.h). */
#include "scheduler/adapter/podinfo.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "operator/kube/quantity.h"
#include "operator/kube/resources.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

static const char *annotation(json_object *pod, const char *key)
{
    return fg_json_get_str(pod, "metadata", "annotations", key, NULL);
}

/* A decimal annotation within [lo, hi]; def when absent or malformed. */
static int64_t annotation_int(json_object *pod, const char *key, int64_t lo, int64_t hi, int64_t def)
{
    const char *s = annotation(pod, key);
    char *end = NULL;
    if (!s || !*s)
        return def;
    long long v = strtoll(s, &end, 10);
    return *end || v < lo || v > hi ? def : v;
}

static const char *condition_reason(json_object *pod, const char *type)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), type))
            return fg_json_get_str(c, "reason", NULL);
    }
    return NULL;
}

static bool same_quantity(json_object *x, json_object *y)
{
    int64_t a = 0, b = 0;
    char why[FG_ERRMSG_MAX];
    return x && y && fg_quantity_json(x, &a, why) == FG_OK && fg_quantity_json(y, &b, why) == FG_OK && a == b;
}

/* Whether the kubelet reports the first container's CPU and memory requests as in the spec: an
 * in-place resize it has applied (Kubernetes 1.33's status.containerStatuses[].resources). */
static bool applied(json_object *pod)
{
    json_object *spec = fg_json_get(fg_json_at(fg_json_get(pod, "spec", "containers", NULL), 0),
                                    "resources", "requests", NULL);
    json_object *status = fg_json_get(fg_json_at(fg_json_get(pod, "status", "containerStatuses", NULL), 0),
                                      "resources", "requests", NULL);
    return same_quantity(fg_json_get(spec, "cpu", NULL), fg_json_get(status, "cpu", NULL)) &&
           same_quantity(fg_json_get(spec, "memory", NULL), fg_json_get(status, "memory", NULL));
}

static void read_allocation(json_object *pod, struct fg_sa_podinfo *pi, const struct fg_resources *req)
{
    pi->has_gpu = fg_resources_get(req, FG_RES_GPU_SHARE) > 0;
    if (!pi->has_gpu)
        return;
    struct fg_allocation a;
    char why[FG_ERRMSG_MAX] = "";
    if (fg_allocation_from_pod(pod, &a, why) != FG_OK) {
        snprintf(pi->problem, sizeof(pi->problem), "%s", why);
        return;
    }
    pi->milli = (int)a.compute_milli;
    pi->gpu_mem_mib = a.memory_mib;
    const char *sharing = annotation(pod, FG_ANN_SHARING), *isolation = annotation(pod, FG_ANN_ISOLATION);
    pi->sharing = fg_str_eq(sharing, "mps") ? FG_SCHED_SHARE_MPS : FG_SCHED_SHARE_TIMESLICE;
    /* exclusive: no other pod on the GPU, which is dedicated isolation with the pod as its owner */
    pi->exclusive = fg_str_eq(sharing, "exclusive");
    pi->isolation = fg_str_eq(isolation, "dedicated") || pi->exclusive ? FG_SCHED_ISO_DEDICATED : FG_SCHED_ISO_SHARED;
    pi->workload = annotation(pod, FG_ANN_WORKLOAD);
}

static void signature(char sig[FG_SA_SIG_LEN + 1], json_object *spec, enum fg_sched_sharing sharing, const char *owner);

/* Whether a controller (a ReplicaSet, a StatefulSet, a Job) owns pod: it makes the pod again if evicted. */
static bool controlled(json_object *pod)
{
    json_object *refs = fg_json_get(pod, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; i < fg_json_array_len(refs); i++) {
        json_object *c = fg_json_get(json_object_array_get_idx(refs, i), "controller", NULL);
        if (c && json_object_get_boolean(c))
            return true;
    }
    return false;
}

static void read_movable(json_object *pod, struct fg_sa_podinfo *pi)
{
    pi->movable = pi->has_gpu && !pi->problem[0] && !pi->group && !pi->exclusive &&
                  (pi->isolation == FG_SCHED_ISO_SHARED || pi->workload) &&
                  fg_str_eq(annotation(pod, FG_ANN_UPDATE_MODE), "Auto") && controlled(pod);
    if (pi->movable)
        signature(pi->signature, fg_json_get(pod, "spec", NULL), pi->sharing,
                  pi->isolation == FG_SCHED_ISO_DEDICATED ? pi->workload : NULL);
}

void fg_sa_podinfo_read(json_object *pod, const char *cap_ns, struct fg_sa_podinfo *out)
{
    struct fg_sa_podinfo *pi = out;
    memset(pi, 0, sizeof(*pi));
    pi->gpu_index = -1;
    pi->node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    if (pi->node && !*pi->node)
        pi->node = NULL;
    pi->phase = fg_json_get_str(pod, "status", "phase", NULL);
    if (!pi->phase)
        pi->phase = "";
    pi->terminal = !strcmp(pi->phase, "Succeeded") || !strcmp(pi->phase, "Failed");
    pi->deleting = fg_json_get(pod, "metadata", "deletionTimestamp", NULL) != NULL;
    pi->started = fg_json_get(pod, "status", "startTime", NULL) || (*pi->phase && strcmp(pi->phase, "Pending"));
    pi->gated = fg_json_array_len(fg_json_get(pod, "spec", "schedulingGates", NULL)) > 0;
    struct fg_resources req = { 0 };
    char why[FG_ERRMSG_MAX];
    if (fg_pod_requests(pod, &req, why) != FG_OK)
        snprintf(pi->problem, sizeof(pi->problem), "%s", why);
    pi->cpu_milli = fg_resources_get(&req, "cpu");
    pi->mem_mib = (fg_resources_get(&req, "memory") + FG_MIB_MILLI - 1) / FG_MIB_MILLI;

    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    if (fg_str_eq(ns, cap_ns) && fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_ROLE, NULL),
                                           FG_ROLE_CAPACITY)) {
        pi->role = FG_SA_CAPACITY;
        pi->gpu_uuid = annotation(pod, FG_ANN_GPU_UUID);
        pi->cap_gpu_mem_mib = annotation_int(pod, FG_ANN_GPU_MEMORY_MIB, 1, INT64_MAX / 2, 0);
        pi->cap_live = pi->node && !pi->deleting && !strcmp(pi->phase, "Running") && pi->gpu_uuid &&
                       *pi->gpu_uuid && pi->cap_gpu_mem_mib > 0;
        pi->reserved_cpu = pi->cpu_milli > FG_SA_HOLDER_CPU_MILLI ? pi->cpu_milli - FG_SA_HOLDER_CPU_MILLI : 0;
        pi->reserved_mem_mib = pi->mem_mib > FG_SA_HOLDER_MEM_MIB ? pi->mem_mib - FG_SA_HOLDER_MEM_MIB : 0;
        pi->sig = annotation(pod, FG_ANN_SIGNATURE);
        pi->container = fg_json_get_str(fg_json_at(fg_json_get(pod, "spec", "containers", NULL), 0), "name", NULL);
        pi->resized = applied(pod);
        return;
    }
    if (!fg_str_eq(fg_json_get_str(pod, "spec", "schedulerName", NULL), FG_SCHEDULER_NAME))
        return;
    pi->role = FG_SA_FRACGPU;
    int64_t prio = 0;
    if (fg_json_get_int64(pod, &prio, "spec", "priority", NULL) && prio >= INT32_MIN && prio <= INT32_MAX)
        pi->priority = (int)prio;
    pi->never_preempts = fg_str_eq(fg_json_get_str(pod, "spec", "preemptionPolicy", NULL), "Never");
    const char *created = fg_json_get_str(pod, "metadata", "creationTimestamp", NULL);
    if (!created || !fg_time_parse(created, &pi->created_ms))
        pi->created_ms = 0;
    read_allocation(pod, pi, &req);
    pi->group = annotation(pod, FG_ANN_POD_GROUP);
    if (pi->group && !*pi->group)
        pi->group = NULL;
    pi->group_min = (int)annotation_int(pod, FG_ANN_POD_GROUP_SIZE, 1, 100000, 1);
    pi->cap_name = annotation(pod, FG_ANN_CAPACITY_POD);
    pi->gpu_uuid = annotation(pod, FG_ANN_GPU_UUID);
    pi->gpu_index = (int)annotation_int(pod, FG_ANN_GPU_INDEX, 0, FG_SCHED_MAX_GPUS - 1, -1);
    pi->sched_reason = condition_reason(pod, "PodScheduled");
    read_movable(pod, pi);
}

/* ---- the core's view ---- */

static enum fg_err op_of(const char *s, enum fg_sched_op *op)
{
    static const struct { const char *name; enum fg_sched_op op; } ops[] = {
        { "In", FG_SCHED_OP_IN }, { "NotIn", FG_SCHED_OP_NOT_IN },
        { "Exists", FG_SCHED_OP_EXISTS }, { "DoesNotExist", FG_SCHED_OP_DOES_NOT_EXIST },
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
        if (fg_str_eq(s, ops[i].name)) {
            *op = ops[i].op;
            return FG_OK;
        }
    return FG_E_INVAL;
}

int fg_sa_effect(const char *s)
{
    if (fg_str_eq(s, "NoSchedule"))
        return FG_SCHED_NO_SCHEDULE;
    if (fg_str_eq(s, "PreferNoSchedule"))
        return FG_SCHED_PREFER_NO_SCHEDULE;
    if (fg_str_eq(s, "NoExecute"))
        return FG_SCHED_NO_EXECUTE;
    return 0;
}

static enum fg_err build_affinity(struct fg_sa_want *w, json_object *terms, char *errmsg)
{
    size_t nt = fg_json_array_len(terms), ne = 0, nv = 0;
    for (size_t i = 0; i < nt; i++) {
        json_object *t = json_object_array_get_idx(terms, i);
        if (fg_json_array_len(fg_json_get(t, "matchFields", NULL)))
            return fg_errmsg(errmsg, FG_E_INVAL, "node affinity by matchFields is not supported");
        json_object *exprs = fg_json_get(t, "matchExpressions", NULL);
        ne += fg_json_array_len(exprs);
        for (size_t j = 0; j < fg_json_array_len(exprs); j++)
            nv += fg_json_array_len(fg_json_get(json_object_array_get_idx(exprs, j), "values", NULL));
    }
    w->terms = fg_calloc(nt ? nt : 1, sizeof(*w->terms));
    w->exprs = fg_calloc(ne ? ne : 1, sizeof(*w->exprs));
    w->values = fg_calloc(nv ? nv : 1, sizeof(*w->values));
    size_t e = 0, v = 0;
    for (size_t i = 0; i < nt; i++) {
        json_object *exprs = fg_json_get(json_object_array_get_idx(terms, i), "matchExpressions", NULL);
        w->terms[i].exprs = &w->exprs[e];
        w->terms[i].n_exprs = fg_json_array_len(exprs);
        for (size_t j = 0; j < fg_json_array_len(exprs); j++, e++) {
            json_object *x = json_object_array_get_idx(exprs, j), *vals = fg_json_get(x, "values", NULL);
            const char *op = fg_json_get_str(x, "operator", NULL);
            if (op_of(op, &w->exprs[e].op) != FG_OK)
                return fg_errmsg(errmsg, FG_E_INVAL, "node affinity operator %s is not supported", op ? op : "(none)");
            w->exprs[e].key = fg_json_get_str(x, "key", NULL);
            w->exprs[e].values = &w->values[v];
            w->exprs[e].n_values = fg_json_array_len(vals);
            for (size_t k = 0; k < fg_json_array_len(vals); k++)
                w->values[v++] = json_object_get_string(json_object_array_get_idx(vals, k));
        }
    }
    w->pod.affinity = w->terms;
    w->pod.n_affinity = nt;
    return FG_OK;
}

static void build_selector(struct fg_sa_want *w, json_object *sel)
{
    size_t n = fg_json_object_len(sel), i = 0;
    w->selector = fg_calloc(n ? n : 1, sizeof(*w->selector));
    if (sel && json_object_is_type(sel, json_type_object)) {
        json_object_object_foreach(sel, k, v) {
            w->selector[i++] = (struct fg_sched_kv){ k, json_object_get_string(v) };
        }
    }
    w->pod.node_selector = w->selector;
    w->pod.n_node_selector = i;
}

static void build_tolerations(struct fg_sa_want *w, json_object *tols)
{
    size_t n = fg_json_array_len(tols);
    w->tolerations = fg_calloc(n ? n : 1, sizeof(*w->tolerations));
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(tols, i);
        const char *key = fg_json_get_str(t, "key", NULL);
        w->tolerations[i] = (struct fg_sched_toleration){
            .key = key && *key ? key : NULL,
            .value = fg_json_get_str(t, "value", NULL),
            .exists = fg_str_eq(fg_json_get_str(t, "operator", NULL), "Exists"),
            .effect = fg_sa_effect(fg_json_get_str(t, "effect", NULL)),
        };
    }
    w->pod.tolerations = w->tolerations;
    w->pod.n_tolerations = n;
}

/* The signature: SHA-256 over the node-level constraints, the sharing mode and the dedicated owner. */
static void signature(char sig[FG_SA_SIG_LEN + 1], json_object *spec, enum fg_sched_sharing sharing, const char *owner)
{
    const char *parts[] = {
        json_object_to_json_string_ext(fg_json_get(spec, "nodeSelector", NULL), JSON_C_TO_STRING_PLAIN),
        json_object_to_json_string_ext(fg_json_get(spec, "affinity", "nodeAffinity", NULL), JSON_C_TO_STRING_PLAIN),
        json_object_to_json_string_ext(fg_json_get(spec, "tolerations", NULL), JSON_C_TO_STRING_PLAIN),
        sharing == FG_SCHED_SHARE_MPS ? "mps" : "timeslice",
        owner ? owner : "",
    };
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (size_t i = 0; i < sizeof(parts) / sizeof(*parts); i++)
        EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1);
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < FG_SA_SIG_LEN / 2; i++)
        snprintf(&sig[2 * i], 3, "%02x", md[i]);
}

enum fg_err fg_sa_want_build(json_object *pod, const struct fg_sa_podinfo *pi, int64_t gpu_mem_whole,
                             struct fg_sa_want *w, char *errmsg)
{
    memset(w, 0, sizeof(*w));
    w->json = json_object_get(pod);
    w->name = fg_asprintf("%s/%s", fg_json_get_str(pod, "metadata", "namespace", NULL),
                          fg_json_get_str(pod, "metadata", "name", NULL));
    if (pi->problem[0])
        return fg_errmsg(errmsg, FG_E_INVAL, "%s", pi->problem);
    json_object *spec = fg_json_get(pod, "spec", NULL);
    w->pod = (struct fg_sched_pod){
        .name = w->name,
        .cpu_milli = pi->cpu_milli,
        .mem_mib = pi->mem_mib,
        .n_gpus = pi->has_gpu ? 1 : 0,
        .gpu_milli = pi->has_gpu ? pi->milli : 0,
        .gpu_mem_mib = pi->has_gpu ? (pi->gpu_mem_mib ? pi->gpu_mem_mib : gpu_mem_whole) : 0,
        .priority = pi->priority,
        .sharing = pi->has_gpu ? pi->sharing : FG_SCHED_SHARE_NONE,
        .isolation = pi->isolation,
        .group = pi->group,
        .group_min = pi->group ? pi->group_min : 0,
    };
    if (pi->isolation == FG_SCHED_ISO_DEDICATED)
        w->pod.owner = fg_str_eq(fg_json_get_str(pod, "metadata", "annotations", FG_ANN_SHARING, NULL), "exclusive") ||
                               !pi->workload
                           ? w->name
                           : pi->workload;
    build_selector(w, fg_json_get(spec, "nodeSelector", NULL));
    build_tolerations(w, fg_json_get(spec, "tolerations", NULL));
    enum fg_err err = build_affinity(
        w,
        fg_json_get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms", NULL),
        errmsg);
    if (err)
        return err;
    signature(w->sig, spec, w->pod.sharing, w->pod.owner);
    char why[FG_ERRMSG_MAX];
    if (fg_sched_pod_validate(&w->pod, why) != FG_OK)
        return fg_errmsg(errmsg, FG_E_INVAL, "%s", why);
    return FG_OK;
}

void fg_sa_want_cleanup(struct fg_sa_want *w)
{
    json_object_put(w->json);
    free(w->selector);
    free(w->tolerations);
    free(w->terms);
    free(w->exprs);
    free(w->values);
    free(w->name);
    memset(w, 0, sizeof(*w));
}
