/* The device plugin's Allocate, GetPreferredAllocation and audit (plugin.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "nodeagent/deviceplugin/plugin_int.h"
#include "nodeagent/deviceplugin/reply.h"
#include "nodeagent/grpc/kubelet.h"
#include "nodeagent/grpc/podresources.pb-c.h"
#include "reconcilers/podcontract.h"

#define COMPONENT "device-plugin"
#define AUDIT_AFTER_GRANT_NS (300 * FG_NS_PER_MS)
#define AUDIT_TIMEOUT_MS 2000

/* ---- the answer ---- */

/* One container's response from a reply (strings borrowed from r, which must outlive the message). */
struct container_msg {
    V1beta1__ContainerAllocateResponse c;
    V1beta1__ContainerAllocateResponse__EnvsEntry env[FG_DP_REPLY_ENVS], *envp[FG_DP_REPLY_ENVS];
    V1beta1__Mount mount[FG_DP_REPLY_MOUNTS], *mountp[FG_DP_REPLY_MOUNTS];
    V1beta1__CDIDevice cdi, *cdip;
};

static void container_msg_fill(struct container_msg *m, struct fg_dp_reply *r)
{
    v1beta1__container_allocate_response__init(&m->c);
    for (size_t i = 0; i < r->nenvs; i++) {
        v1beta1__container_allocate_response__envs_entry__init(&m->env[i]);
        m->env[i].key = r->envs[i].name;
        m->env[i].value = r->envs[i].value;
        m->envp[i] = &m->env[i];
    }
    m->c.n_envs = r->nenvs;
    m->c.envs = m->envp;
    for (size_t i = 0; i < r->nmounts; i++) {
        v1beta1__mount__init(&m->mount[i]);
        m->mount[i].container_path = r->mounts[i].container_path;
        m->mount[i].host_path = r->mounts[i].host_path;
        m->mount[i].read_only = r->mounts[i].read_only;
        m->mountp[i] = &m->mount[i];
    }
    m->c.n_mounts = r->nmounts;
    m->c.mounts = m->mountp;
    if (r->cdi_device[0]) {
        v1beta1__cdidevice__init(&m->cdi);
        m->cdi.name = r->cdi_device;
        m->cdip = &m->cdi;
        m->c.n_cdi_devices = 1;
        m->c.cdi_devices = &m->cdip;
    }
}

static void held_free(struct fg__dp_pending *h)
{
    if (h->req)
        v1beta1__allocate_request__free_unpacked(h->req, NULL);
    if (h->pref)
        v1beta1__preferred_allocation_request__free_unpacked(h->pref, NULL);
}

static void forget(struct fg__dp *p, size_t i)
{
    held_free(&p->pending[i]);
    p->pending[i] = p->pending[--p->npending];
}

static void prefer(struct fg__dp *p, size_t i, const char *want);

static void answer(struct fg__dp *p, size_t i, const struct fg_dp_pick *pick)
{
    struct fg__dp_pending *h = &p->pending[i];
    const char *ns = fg_json_get_str(pick->pod, "metadata", "namespace", NULL);
    const char *name = fg_json_get_str(pick->pod, "metadata", "name", NULL);
    struct fg_dp_grant_view g = { pick->grant.gpu_uuid, pick->mps, pick->grant.compute_milli, pick->grant.memory_mib,
                                  p->o.mps_root };
    struct fg_dp_reply reply;
    char why[FG_ERRMSG_MAX] = "";
    if (fg_dp_reply_build(p->form, &g, &reply, why) != FG_OK) {
        fg_log(FG_LOG_ERROR, COMPONENT, "cannot answer for pod %s/%s: %s", ns, name, why);
        fg_grpc_call_finish(h->call, FG_GRPC_INTERNAL, why);
        fg_counter_add(p->invalid, 1);
        forget(p, i);
        return;
    }
    size_t n = h->req->n_container_requests;
    struct container_msg *msgs = fg_calloc(n ? n : 1, sizeof(*msgs));
    V1beta1__ContainerAllocateResponse **ptrs = fg_calloc(n ? n : 1, sizeof(*ptrs));
    size_t nids = 0;
    for (size_t c = 0; c < n; c++) {
        container_msg_fill(&msgs[c], &reply);
        ptrs[c] = &msgs[c].c;
        nids += h->req->container_requests[c]->n_devices_ids;
    }
    const char **ids = fg_calloc(nids ? nids : 1, sizeof(*ids));
    for (size_t c = 0, k = 0; c < n; c++)
        for (size_t d = 0; d < h->req->container_requests[c]->n_devices_ids; d++)
            ids[k++] = h->req->container_requests[c]->devices_ids[d];
    V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
    resp.n_container_responses = n;
    resp.container_responses = ptrs;
    enum fg_err err = fg_grpc_call_reply(h->call, &resp.base);
    if (!err) /* the kubelet has it: the pod holds these devices */
        fg_dp_ledger_put(&p->ledger, ns, name, &pick->grant, pick->mps, ids, nids);
    fg_counter_add(p->granted, 1);
    fg_histogram_observe(p->allocate_seconds, (double)(fg_clock_mono_ns() - h->start_ns) / 1e9);
    fg_log(FG_LOG_INFO, COMPONENT, "allocated GPU %s (%lld milli, %lld MiB%s) to pod %s/%s as %s%s", g.gpu_uuid,
           (long long)g.compute_milli, (long long)g.memory_mib, g.mps ? ", mps" : "", ns, name,
           fg_dp_form_name(p->form), err ? " (the kubelet was gone before the answer)" : "");
    free(ids);
    free(ptrs);
    free(msgs);
    forget(p, i);
    p->audit_at_ns = fg_clock_mono_ns() + AUDIT_AFTER_GRANT_NS;
}

/* ---- refusals made unseen ---- */

/* Notes a refusal whose pod the plugin could not name (the oldest goes when they are too many). */
static void unseen_push(struct fg__dp *p, uint64_t now)
{
    if (p->nunseen == FG_DP_UNSEEN_MAX) {
        memmove(p->unseen_ns, p->unseen_ns + 1, (FG_DP_UNSEEN_MAX - 1) * sizeof(*p->unseen_ns));
        p->nunseen--;
    }
    p->unseen_ns[p->nunseen++] = now;
}

static void unseen_pop(struct fg__dp *p)
{
    if (p->nunseen)
        memmove(p->unseen_ns, p->unseen_ns + 1, --p->nunseen * sizeof(*p->unseen_ns));
}

/* Refusals whose pod was never seen failed stop counting after the TTL (it went before its kubelet
 * wrote its status, say): they hold the node's admissions back, and must not do so for ever. */
static void unseen_expire(struct fg__dp *p, uint64_t now)
{
    while (p->nunseen && now - p->unseen_ns[0] >= FG_DP_UNSEEN_TTL_NS)
        unseen_pop(p);
}

void fg__dp_unseen_failed(struct fg__dp *p, json_object *pod)
{
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    const char *msg = fg_json_get_str(pod, "status", "message", NULL);
    if (!p->nunseen || !uid || !msg || !strstr(msg, FG_DP_UNSEEN_MARK))
        return;
    size_t kept = p->nunseen_failed < FG_DP_UNSEEN_MAX ? p->nunseen_failed : FG_DP_UNSEEN_MAX;
    for (size_t i = 0; i < kept; i++)
        if (strcmp(p->unseen_failed[i], uid) == 0)
            return;
    snprintf(p->unseen_failed[p->nunseen_failed++ % FG_DP_UNSEEN_MAX], sizeof(p->unseen_failed[0]), "%s", uid);
    unseen_pop(p);
    fg_log(FG_LOG_INFO, COMPONENT, "pod %s/%s failed on a refusal made unseen (%zu more to account for)",
           fg_json_get_str(pod, "metadata", "namespace", NULL), fg_json_get_str(pod, "metadata", "name", NULL),
           p->nunseen);
}

/* ---- refusals ---- */

/* Refuses held call i. A refusal with a waiting pod named (one whose grant failed) fails that pod; any
 * other fails a pod the plugin cannot name, and is noted as made unseen. */
static void refuse(struct fg__dp *p, size_t i, const struct fg_dp_pick *pick)
{
    struct fg__dp_pending *h = &p->pending[i];
    const char *keyless = fg_grant_watch_problem(p->keys);
    bool unseen = pick->outcome != FG_DP_PICK_REFUSED;
    struct fg_buf msg;
    fg_buf_init(&msg, 0);
    enum fg_err err = fg_buf_printf(&msg, "fracgpu: no pod waiting on node %s carries a valid " FG_ANN_GRANT, p->o.node);
    if (!err && keyless[0])
        err = fg_buf_printf(&msg, " (%s)", keyless);
    if (!err && unseen)
        err = fg_buf_printf(&msg, " (" FG_DP_UNSEEN_MARK ")");
    if (unseen)
        unseen_push(p, fg_clock_mono_ns());
    for (size_t r = 0; r < pick->nrefused; r++) {
        if (!err)
            err = fg_buf_printf(&msg, "%s %s/%s: %s", r ? ";" : ":",
                                fg_json_get_str(pick->refused[r], "metadata", "namespace", NULL),
                                fg_json_get_str(pick->refused[r], "metadata", "name", NULL), pick->refused_why[r]);
        char why[400];
        snprintf(why, sizeof(why), "fracgpu's device plugin refused the GPU: %s", pick->refused_why[r]);
        fg_dp_enforcer_refused(p->enforcer, pick->refused[r], why);
    }
    fg_grpc_call_finish(h->call, FG_GRPC_PERMISSION_DENIED, fg_buf_str(&msg));
    fg_counter_add(p->refused, 1);
    fg_histogram_observe(p->allocate_seconds, (double)(fg_clock_mono_ns() - h->start_ns) / 1e9);
    fg_log(FG_LOG_WARN, COMPONENT, "refused an allocation: %s", fg_buf_str(&msg));
    fg_buf_cleanup(&msg);
    forget(p, i);
}

/* Whether an audit can judge: this node's pods, the keys and the GPUs are all known. */
static bool audit_ready(const struct fg__dp *p)
{
    return p->running && fg_informer_has_synced(p->pods) && fg_grant_watch_synced(p->keys) && p->gpus_known;
}

void fg__dp_decide_pending(struct fg__dp *p)
{
    if (p->auditing || !p->npending)
        return;
    /* after a restart of the agent, pods the kubelet gave a slot while it was away may look waiting
     * still (their status not written or not seen yet): the first audit takes them into the ledger */
    if (!p->audited && audit_ready(p)) {
        fg__dp_audit(p);
        return;
    }
    uint64_t now = fg_clock_mono_ns();
    unseen_expire(p, now);
    for (size_t i = 0; i < p->npending;) {
        struct fg_dp_node_view v;
        fg__dp_view_waiting(p, &v);
        struct fg_dp_pick pick;
        fg_dp_pick_pod(&v, &p->ledger, &pick);
        size_t before = p->npending;
        /* while a refusal made unseen is not accounted for, the first pod waiting may be the one it
         * failed: nothing is served until it is (or the call's time runs out) */
        bool known = pick.outcome == FG_DP_PICK_GRANTED && !p->nunseen && p->audited;
        if (p->pending[i].pref && known)
            prefer(p, i, pick.grant.gpu_uuid);
        else if (known)
            answer(p, i, &pick);
        else if (now >= p->pending[i].deadline_ns)
            refuse(p, i, &pick);
        fg__dp_view_cleanup(&v);
        if (p->npending == before)
            i++;
    }
}

void fg__dp_pending_abort(struct fg__dp *p)
{
    while (p->npending) {
        fg_grpc_call_finish(p->pending[0].call, FG_GRPC_UNAVAILABLE, "fracgpu's device plugin is restarting");
        forget(p, 0);
    }
}

/* ---- Allocate ---- */

/* Holds call h (its request owned from now on) and decides it if it can be already. The common case
 * is decided at once. When no waiting pod verifies, an impostor may be holding the reply meant for a
 * pod the ledger thinks served: the audit finds out, then decides again. */
static void hold(struct fg__dp *p, struct fg__dp_pending h)
{
    if (p->npending == FG_DP_PENDING_MAX) {
        fg_grpc_call_finish(h.call, FG_GRPC_RESOURCE_EXHAUSTED, "too many calls waiting");
        held_free(&h);
        return;
    }
    p->pending[p->npending++] = h;
    fg__dp_decide_pending(p);
    for (size_t i = 0; i < p->npending; i++)
        if (p->pending[i].call == h.call) {
            fg__dp_audit(p);
            break;
        }
}

/* Whether every device of req is a slot this plugin advertises; bad names the first that is not. */
static bool known_devices(struct fg__dp *p, const V1beta1__AllocateRequest *req, char *bad, size_t bad_size)
{
    if (req->n_container_requests == 0) {
        snprintf(bad, bad_size, "an AllocateRequest for no container");
        return false;
    }
    for (size_t c = 0; c < req->n_container_requests; c++) {
        const V1beta1__ContainerAllocateRequest *cr = req->container_requests[c];
        if (cr->n_devices_ids == 0) {
            snprintf(bad, bad_size, "container request %zu names no device", c);
            return false;
        }
        for (size_t d = 0; d < cr->n_devices_ids; d++) {
            char uuid[FG_DP_UUID_MAX];
            if (!fg_dp_slot_gpu(cr->devices_ids[d], p->o.slots, uuid) || !fg_dp_gpus_find(p->gpus, p->ngpus, uuid)) {
                snprintf(bad, bad_size, "unknown device \"%.120s\": not a " FG_RES_GPU_SHARE " slot of this node",
                         cr->devices_ids[d]);
                return false;
            }
        }
    }
    return true;
}

void fg__dp_allocate(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    struct fg__dp *p = ud;
    uint64_t start = fg_clock_mono_ns();
    V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(NULL, len, req);
    char bad[256];
    if (!in || !known_devices(p, in, bad, sizeof(bad))) {
        if (!in)
            snprintf(bad, sizeof(bad), "not an AllocateRequest");
        fg_counter_add(p->invalid, 1);
        fg_log(FG_LOG_WARN, COMPONENT, "refused an Allocate: %s", bad);
        fg_grpc_call_finish(call, FG_GRPC_INVALID_ARGUMENT, bad);
        if (in)
            v1beta1__allocate_request__free_unpacked(in, NULL);
        return;
    }
    hold(p, (struct fg__dp_pending){ call, in, NULL, start, start + (uint64_t)p->o.hold_ms * FG_NS_PER_MS });
}

void fg__dp_held_gone(struct fg_grpc_call *call, void *ud)
{
    struct fg__dp *p = ud;
    for (size_t i = 0; i < p->npending; i++)
        if (p->pending[i].call == call) {
            forget(p, i);
            return;
        }
}

/* ---- GetPreferredAllocation ---- */

/* Answers held GetPreferredAllocation i: the must-include slots, then slots of GPU want (the GPU of
 * the pod being admitted), then any. */
static void prefer(struct fg__dp *p, size_t i, const char *want)
{
    const V1beta1__PreferredAllocationRequest *in = p->pending[i].pref;
    size_t n = in->n_container_requests;
    V1beta1__ContainerPreferredAllocationResponse *rs = fg_calloc(n ? n : 1, sizeof(*rs));
    V1beta1__ContainerPreferredAllocationResponse **rp = fg_calloc(n ? n : 1, sizeof(*rp));
    char ***chosen = fg_calloc(n ? n : 1, sizeof(*chosen));
    for (size_t c = 0; c < n; c++) {
        const V1beta1__ContainerPreferredAllocationRequest *cr = in->container_requests[c];
        /* no more than the slots named: what the kubelet says it wants does not size the allocation */
        size_t named = cr->n_must_include_device_ids + cr->n_available_device_ids;
        size_t size = cr->allocation_size > 0 ? (size_t)cr->allocation_size : 0, k = 0;
        if (size > named)
            size = named;
        chosen[c] = fg_calloc(size ? size : 1, sizeof(char *));
        for (size_t d = 0; d < cr->n_must_include_device_ids && k < size; d++)
            chosen[c][k++] = cr->must_include_device_ids[d];
        for (int pass = 0; pass < 2; pass++)
            for (size_t d = 0; d < cr->n_available_device_ids && k < size; d++) {
                const char *id = cr->available_device_ids[d];
                char uuid[FG_DP_UUID_MAX];
                bool on_gpu = fg_dp_slot_gpu(id, p->o.slots, uuid) && strcmp(uuid, want) == 0;
                bool taken = false;
                for (size_t j = 0; j < k && !taken; j++)
                    taken = strcmp(chosen[c][j], id) == 0;
                if (!taken && (pass == 1 || on_gpu))
                    chosen[c][k++] = (char *)id;
            }
        v1beta1__container_preferred_allocation_response__init(&rs[c]);
        rs[c].n_device_ids = k;
        rs[c].device_ids = chosen[c];
        rp[c] = &rs[c];
    }
    V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    resp.n_container_responses = n;
    resp.container_responses = rp;
    if (fg_grpc_call_reply(p->pending[i].call, &resp.base) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "cannot answer GetPreferredAllocation");
    for (size_t c = 0; c < n; c++)
        free(chosen[c]);
    free(chosen);
    free(rp);
    free(rs);
    forget(p, i);
}

void fg__dp_preferred(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    struct fg__dp *p = ud;
    uint64_t start = fg_clock_mono_ns();
    V1beta1__PreferredAllocationRequest *in = v1beta1__preferred_allocation_request__unpack(NULL, len, req);
    if (!in) {
        fg_grpc_call_finish(call, FG_GRPC_INVALID_ARGUMENT, "not a PreferredAllocationRequest");
        return;
    }
    hold(p, (struct fg__dp_pending){ call, NULL, in, start, start + (uint64_t)p->o.hold_ms * FG_NS_PER_MS });
}

/* ---- the audit ---- */

static void audit_done(struct fg__dp *p)
{
    p->auditing = false;
    p->audited = true;
    if (!p->running)
        return; /* the plugin stops: no new audit, nothing to decide */
    if (p->audit_again) {
        p->audit_again = false;
        fg__dp_audit(p);
        return;
    }
    fg__dp_decide_pending(p);
}

static void listed(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct fg__dp *p = ud;
    V1__ListPodResourcesResponse *r = status == FG_GRPC_OK ? v1__list_pod_resources_response__unpack(NULL, len, resp)
                                                           : NULL;
    if (!r) {
        if (!p->podres_warned)
            fg_log(FG_LOG_WARN, COMPONENT, "cannot read what pods hold from the kubelet (%s): %s%s%s",
                   p->o.pod_resources_socket, status == FG_GRPC_OK ? "a response that is not a ListPodResourcesResponse"
                                                                   : fg_grpc_status_name(status),
                   message[0] ? ": " : "", message);
        p->podres_warned = true;
        struct fg_grpc_client *c = p->podres;
        p->podres = NULL;
        fg_grpc_client_free(c); /* dialled afresh next time; allowed inside its own callback */
        audit_done(p);
        return;
    }
    p->podres_warned = false;
    struct fg_dp_holding *h = NULL;
    size_t nh = fg_dp_holdings_of(r, &h);
    struct fg_dp_node_view v;
    fg__dp_view_holders(p, h, nh, &v);
    struct fg_dp_audit a;
    fg_dp_ledger_audit(&p->ledger, &v, h, nh, &a);
    if (a.adopted)
        fg_log(FG_LOG_INFO, COMPONENT, "took %zu running pod%s with valid grants into the ledger", a.adopted,
               a.adopted == 1 ? "" : "s");
    for (size_t i = 0; i < a.nimpostors; i++) {
        const struct fg_dp_holding *x = &h[a.impostors[i]];
        json_object *pod = a.impostor_pods[i];
        fg_log(FG_LOG_WARN, COMPONENT, "pod %s/%s %s: removing it", x->ns, x->name, a.why[i]);
        if (pod) {
            char why[700];
            snprintf(why, sizeof(why), "pod %s", a.why[i]);
            fg_dp_enforcer_evict(p->enforcer, pod, why);
        }
    }
    fg__dp_view_cleanup(&v);
    fg_dp_holdings_free(h, nh);
    v1__list_pod_resources_response__free_unpacked(r, NULL);
    audit_done(p);
}

void fg__dp_audit(struct fg__dp *p)
{
    if (p->auditing) {
        p->audit_again = true;
        return;
    }
    /* an audit judges by the pods, the keys and the GPUs: not before all three are known */
    if (!audit_ready(p)) {
        fg__dp_decide_pending(p);
        return;
    }
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_grpc_client_opts co = { .socket_path = p->o.pod_resources_socket };
    if (!p->podres && fg_grpc_client_new(p->base, &co, &p->podres, msg) != FG_OK) {
        fg_log(FG_LOG_WARN, COMPONENT, "cannot reach the kubelet's PodResources API: %s", msg);
        p->audited = true;   /* the decision goes on without the audit */
        fg__dp_decide_pending(p);
        return;
    }
    V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
    p->auditing = true;
    if (fg_grpc_client_unary(p->podres, FG_POD_RESOURCES_LIST, &req.base, AUDIT_TIMEOUT_MS, listed, p, NULL) != FG_OK) {
        p->auditing = false;
        p->audited = true;
        fg__dp_decide_pending(p);
    }
}
