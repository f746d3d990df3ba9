/*
 * capacity — GPUs asked for when nothing fits (the framework's PostFilter hands this file the pods;
 * giveback.c lets them go).
 *
 * Asking. After a pass, the GPU pods no node could take are grouped by node-level signature
 * (podinfo.h). Each group is packed by the same core — the same filters and placement policy, on a
 * scratch cluster of empty one-GPU nodes added one at a time — into the fewest GPUs; the capacity
 * pods already on their way for that signature (created, not yet live, or created and not yet seen
 * by the watch) count first, and a capacity pod is created for each GPU still missing. Names are
 * fracgpu-capacity-<signature>-<n> with the lowest n not in use, so a create retried before the
 * watch showed the first finds it there (409) instead of making two. A pod that would not fit even
 * an empty GPU is reported Unschedulable; the others wait with WaitingForCapacity, and those that
 * wait past the preemption delay may make room by preemption instead (preempt.c).
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
#include "reconcilers/podcontract.h"
#include "scheduler/adapter/adapter_int.h"
#include "scheduler/plugins/plugins.h"
#include "scheduler/policies/policy.h"

#define MPS_ROOT "/run/fracgpu/mps"

static int by_signature(const void *x, const void *y)
{
    const struct sa_pod *p = *(struct sa_pod *const *)x, *q = *(struct sa_pod *const *)y;
    int c = strcmp(p->want.sig, q->want.sig);
    return c ? c : sa_pod_order(p, q);
}

static bool on_its_way(const struct sa_pod *c, const char *sig)
{
    return c->info.role == FG_SA_CAPACITY && !c->info.cap_live && !c->info.deleting && !c->info.terminal &&
           !c->deleting_sent && fg_str_eq(c->info.sig, sig);
}

/* Capacity pods of sig on their way, counting creates the watch has not shown yet. */
static int coming(struct fg__sched_adapter *a, const char *sig)
{
    int k = 0;
    struct lh_entry *e;
    lh_foreach(a->pods, e) k += on_its_way((struct sa_pod *)lh_entry_v(e), sig);
    lh_foreach(a->creating, e) k += !strcmp((const char *)lh_entry_v(e), sig);
    return k;
}

static void name_for(struct fg__sched_adapter *a, const char *sig, char *out, size_t size)
{
    for (int n = 0;; n++) {
        snprintf(out, size, "fracgpu-capacity-%s-%d", sig, n);
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", a->o.ns, out);
        if (!sa_pod_get(a, key) && !lh_table_lookup_entry(a->creating, out))
            return;
    }
}

struct create_call {
    struct fg__sched_adapter *a;
    char *name;
    uint64_t asked_ns;
};

static void created(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct create_call *cc = ud;
    struct fg__sched_adapter *a = cc->a;
    if (err && a->running) {
        struct lh_entry *e = lh_table_lookup_entry(a->creating, cc->name);
        if (e && !(st && st->http_code == 409)) {
            free(lh_entry_v(e));
            char *k = (char *)lh_entry_k(e);
            lh_table_delete_entry(a->creating, e);
            free(k);
        }
        fg_log(st && st->http_code == 409 ? FG_LOG_INFO : FG_LOG_WARN, SA_COMPONENT, "cannot create capacity pod %s: %s%s%s",
               cc->name, fg_err_str(err), st && st->message ? ": " : "", st && st->message ? st->message : "");
    } else if (!err) {
        fg_counter_add(a->capacity_created, 1);
        fg_log(FG_LOG_INFO, SA_COMPONENT, "capacity pod %s/%s created in %llu ms", a->o.ns, cc->name,
               (unsigned long long)((fg_clock_mono_ns() - cc->asked_ns) / 1000000));
    }
    free(cc->name);
    free(cc);
}

static void copy_member(json_object *to, const char *key, json_object *from)
{
    if (from)
        json_object_object_add(to, key, json_object_get(from));
}

static json_object *capacity_pod(struct fg__sched_adapter *a, const char *name, struct sa_pod *first, int64_t cpu,
                                 int64_t mem)
{
    json_object *spec_src = fg_json_get(first->json, "spec", NULL);
    char buf[64];
    json_object *pod = json_object_new_object(), *meta = json_object_new_object(), *labels = json_object_new_object(),
                *ann = json_object_new_object(), *spec = json_object_new_object();
    fg_json_set_str(pod, "apiVersion", "v1");
    fg_json_set_str(pod, "kind", "Pod");
    fg_json_set_str(meta, "name", name);
    fg_json_set_str(meta, "namespace", a->o.ns);
    fg_json_set_str(labels, FG_LABEL_ROLE, FG_ROLE_CAPACITY);
    fg_json_set_str(labels, "app.kubernetes.io/name", "fracgpu");
    fg_json_set_str(labels, "app.kubernetes.io/component", "capacity-holder");
    fg_json_set_str(ann, FG_ANN_SIGNATURE, first->want.sig);
    /* consolidation stays away from a node whose GPU holds tenants (drains are handled apart) */
    fg_json_set_str(ann, "cluster-autoscaler.kubernetes.io/safe-to-evict", "false");
    fg_json_set_str(ann, "karpenter.sh/do-not-disrupt", "true");
    if (first->want.pod.sharing == FG_SCHED_SHARE_MPS) {
        fg_json_set_str(ann, FG_ANN_SHARING, "mps");
        snprintf(buf, sizeof(buf), "%d", first->info.milli);
        fg_json_set_str(ann, FG_ANN_COMPUTE_MILLI, buf);
        snprintf(buf, sizeof(buf), "%lld", (long long)first->want.pod.gpu_mem_mib);
        fg_json_set_str(ann, FG_ANN_MEMORY_MIB, buf);
    }
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(meta, "annotations", ann);
    if (a->owner_uid[0]) {
        json_object *refs = json_object_new_array(), *ref = json_object_new_object();
        fg_json_set_str(ref, "apiVersion", "apps/v1");
        fg_json_set_str(ref, "kind", "Deployment");
        fg_json_set_str(ref, "name", a->owner_name);
        fg_json_set_str(ref, "uid", a->owner_uid);
        json_object_object_add(ref, "controller", json_object_new_boolean(1));
        json_object_object_add(ref, "blockOwnerDeletion", json_object_new_boolean(0));
        json_object_array_add(refs, ref);
        json_object_object_add(meta, "ownerReferences", refs);
    }
    json_object_object_add(pod, "metadata", meta);

    fg_json_set_str(spec, "serviceAccountName", "fracgpu-capacity-holder");
    fg_json_set_str(spec, "priorityClassName", a->o.priority_class);
    copy_member(spec, "nodeSelector", fg_json_get(spec_src, "nodeSelector", NULL));
    /* the pod's node affinity, and a preference for nodes that hold GPUs already: held GPUs gather on
     * few nodes, so that an autoscaler can take the others away */
    json_object *aff = json_object_new_object();
    copy_member(aff, "nodeAffinity", fg_json_get(spec_src, "affinity", "nodeAffinity", NULL));
    json_object *gather = json_tokener_parse(
        "{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,\"podAffinityTerm\":{"
        "\"labelSelector\":{\"matchLabels\":{\"" FG_LABEL_ROLE "\":\"" FG_ROLE_CAPACITY "\"}},"
        "\"topologyKey\":\"kubernetes.io/hostname\"}}]}");
    json_object_object_add(aff, "podAffinity", gather);
    json_object_object_add(spec, "affinity", aff);
    copy_member(spec, "tolerations", fg_json_get(spec_src, "tolerations", NULL));
    char *containers = fg_asprintf(
        "[{\"name\":\"holder\",\"image\":\"%s\",\"args\":[\"capacity-holder\",\"--mps-root=" MPS_ROOT "\"],"
        "\"env\":[{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        "{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
        "{\"name\":\"NVIDIA_DRIVER_CAPABILITIES\",\"value\":\"compute,utility\"}],"
        "\"securityContext\":{\"privileged\":true},"
        "\"resources\":{\"requests\":{\"cpu\":\"%lldm\",\"memory\":\"%lldMi\"},\"limits\":{\"" FG_RES_NVIDIA_GPU "\":\"1\"}},"
        "\"resizePolicy\":[{\"resourceName\":\"cpu\",\"restartPolicy\":\"NotRequired\"},"
        "{\"resourceName\":\"memory\",\"restartPolicy\":\"NotRequired\"}],"
        "\"volumeMounts\":[{\"name\":\"mps\",\"mountPath\":\"" MPS_ROOT "\"}]}]",
        a->image, (long long)cpu, (long long)mem);
    json_object_object_add(spec, "containers", json_tokener_parse(containers));
    free(containers);
    json_object_object_add(spec, "volumes",
                           json_tokener_parse("[{\"name\":\"mps\",\"hostPath\":{\"path\":\"" MPS_ROOT "\","
                                              "\"type\":\"DirectoryOrCreate\"}}]"));
    json_object_object_add(pod, "spec", spec);
    return pod;
}

static void create(struct fg__sched_adapter *a, struct sa_pod *first, int64_t cpu, int64_t mem)
{
    char name[128];
    name_for(a, first->want.sig, name, sizeof(name));
    json_object *pod = capacity_pod(a, name, first, cpu + FG_SA_HOLDER_CPU_MILLI, mem + FG_SA_HOLDER_MEM_MIB);
    const char *body = json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN);
    char *path = fg_kube_path(&fg_kube_pods, a->o.ns, NULL, NULL, NULL);
    struct create_call *cc = fg_calloc(1, sizeof(*cc));
    *cc = (struct create_call){ a, fg_strdup(name), fg_clock_mono_ns() };
    char *k = fg_strdup(name);
    lh_table_insert(a->creating, k, fg_strdup(first->want.sig));
    fg_kube_loop_request(a->loop, "POST", path, "application/json", body, strlen(body), created, cc);
    fg_log(FG_LOG_INFO, SA_COMPONENT, "capacity pod %s/%s asked for %s (reserving %lldm CPU, %lld MiB)", a->o.ns, name,
           first->key, (long long)cpu, (long long)mem);
    free(path);
    json_object_put(pod);
}

/* The tenant memory of a new GPU: the largest a capacity pod reported; before any, the largest
 * nvidia.com/gpu.memory label (MiB, from GPU feature discovery) of a node; without either, memory is
 * left out of the packing — a guess too small would ask for GPUs that stay idle, one too large only
 * leaves a pod to the next round once the GPUs are there. */
static int64_t gpu_memory_guess(struct fg__sched_adapter *a)
{
    if (a->gpu_mem_max)
        return a->gpu_mem_max;
    int64_t best = 0;
    struct lh_entry *e;
    lh_foreach(a->nodes, e) {
        const struct sa_node *n = (const struct sa_node *)lh_entry_v(e);
        const char *v = fg_json_get_str(n->json, "metadata", "labels", "nvidia.com/gpu.memory", NULL);
        long long mib = v ? atoll(v) : 0;
        if (mib > best)
            best = mib;
    }
    return best ? best : (int64_t)1 << 40;
}

/* Packs pods[0..k) (one signature) into GPUs and asks for those still missing. */
static void plan_group(struct fg__sched_adapter *a, struct sa_pod **pods, size_t k)
{
    struct fg_sched_cluster c;
    struct fg_sched_framework fw;
    struct fg_sched_policy *pol;
    char why[FG_ERRMSG_MAX];
    if (fg_sched_policy_new(a->o.policy, NULL, 1, &pol, why) != FG_OK)
        return;
    fg_sched_cluster_init(&c);
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    int64_t mem = gpu_memory_guess(a);
    int *bin_of = fg_calloc(k, sizeof(*bin_of));
    int bins = 0;
    for (size_t i = 0; i < k; i++) {
        struct fg_sched_pod v = pods[i]->want.pod;   /* the GPU's view: node-level needs are the same for all */
        v.cpu_milli = v.mem_mib = 0;
        v.node_selector = NULL, v.n_node_selector = 0;
        v.affinity = NULL, v.n_affinity = 0;
        v.tolerations = NULL, v.n_tolerations = 0;
        v.group = NULL, v.group_min = 0;
        struct fg_sched_placement pl = { .code = FG_SCHED_UNSCHEDULABLE };
        for (int attempt = 0; attempt < 2 && pl.code != FG_SCHED_SUCCESS; attempt++) {
            if (attempt) {
                char nm[32];
                snprintf(nm, sizeof(nm), "new-gpu-%d", bins);
                struct fg_sched_node_spec spec = { .name = nm, .cpu_milli = 1, .mem_mib = 1, .max_pods = 1 << 20,
                                                   .model = "gpu", .n_gpus = 1, .gpu_mem_mib = mem };
                if (fg_sched_cluster_add_node(&c, &spec, NULL, why) != FG_OK)
                    break;
                bins++;
            }
            if (fg_sched_schedule(&fw, &c, &v, &pl, why) != FG_OK)
                break;
        }
        bin_of[i] = pl.code == FG_SCHED_SUCCESS ? pl.node : -1;
    }
    int have = coming(a, pods[0]->want.sig);
    for (int b = have; b < bins; b++) {
        struct sa_pod *first = NULL;
        int64_t cpu = 0, m = 0;
        for (size_t i = 0; i < k; i++)
            if (bin_of[i] == b) {
                first = first ? first : pods[i];
                cpu += pods[i]->info.cpu_milli;
                m += pods[i]->info.mem_mib;
            }
        if (first)
            create(a, first, cpu, m);
    }
    for (size_t i = 0; i < k; i++) {
        char msg[256];
        if (bin_of[i] < 0) {
            snprintf(msg, sizeof(msg), "asks for more than one empty GPU (%lld MiB for tenants) offers",
                     (long long)mem);
            sa_set_unscheduled(a, pods[i], "Unschedulable", msg);
        } else {
            snprintf(msg, sizeof(msg), "no GPU has room; %d new GPU%s on the way for pods like it", bins,
                     bins == 1 ? "" : "s");
            sa_set_unscheduled(a, pods[i], "WaitingForCapacity", msg);
            if (!pods[i]->capacity_since_ns)
                pods[i]->capacity_since_ns = fg_clock_mono_ns();
            /* waiting for a GPU is not a failure: tried again as soon as the cluster changes */
            pods[i]->backoff_ns = 0;
            pods[i]->next_try_ns = 0;
        }
    }
    free(bin_of);
    fg_sched_framework_cleanup(&fw);
    fg_sched_cluster_cleanup(&c);
    fg_sched_policy_free(pol);
}

/* Lets the pods that waited for capacity past the preemption delay preempt; keeps the others. */
static void preempt_overdue(struct fg__sched_adapter *a)
{
    uint64_t now = fg_clock_mono_ns(), delay = a->o.preemption_delay_ms * 1000000ull;
    size_t k = 0;
    for (size_t i = 0; i < a->n_unschedulable; i++) {
        struct sa_pod *p = a->unschedulable[i];
        if (!p->capacity_since_ns || now - p->capacity_since_ns < delay || !sa_preempt_try(a, p))
            a->unschedulable[k++] = p;
    }
    a->n_unschedulable = k;
}

void sa_capacity_plan(struct fg__sched_adapter *a)
{
    if (!a->n_unschedulable || !a->owner_checked)
        return;
    preempt_overdue(a);
    qsort(a->unschedulable, a->n_unschedulable, sizeof(*a->unschedulable), by_signature);
    size_t i = 0;
    while (i < a->n_unschedulable) {
        size_t j = i + 1;
        while (j < a->n_unschedulable && !strcmp(a->unschedulable[j]->want.sig, a->unschedulable[i]->want.sig))
            j++;
        plan_group(a, &a->unschedulable[i], j - i);
        i = j;
    }
    a->n_unschedulable = 0;
}
