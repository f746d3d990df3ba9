/* Which pod an Allocate serves, and which pods hold devices they were not granted (admission.h). */
#include "nodeagent/deviceplugin/admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "reconcilers/podcontract.h"

static void entry_cleanup(struct fg_dp_entry *e)
{
    for (size_t i = 0; i < e->ndevices; i++)
        free(e->device_ids[i]);
    free(e->device_ids);
}

void fg_dp_ledger_cleanup(struct fg_dp_ledger *l)
{
    for (size_t i = 0; i < l->n; i++)
        entry_cleanup(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

const struct fg_dp_entry *fg_dp_ledger_get(const struct fg_dp_ledger *l, const char *uid)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].uid, uid) == 0)
            return &l->v[i];
    return NULL;
}

void fg_dp_ledger_drop(struct fg_dp_ledger *l, const char *uid)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].uid, uid) == 0) {
            entry_cleanup(&l->v[i]);
            l->v[i] = l->v[--l->n];
            return;
        }
}

/* Takes device id from every entry holding it; entries left with no device go. */
static void take_device(struct fg_dp_ledger *l, const char *id)
{
    for (size_t i = 0; i < l->n;) {
        struct fg_dp_entry *e = &l->v[i];
        for (size_t j = 0; j < e->ndevices; j++)
            if (strcmp(e->device_ids[j], id) == 0) {
                free(e->device_ids[j]);
                e->device_ids[j] = e->device_ids[--e->ndevices];
                break;
            }
        if (e->ndevices == 0) {
            entry_cleanup(e);
            l->v[i] = l->v[--l->n];
        } else {
            i++;
        }
    }
}

void fg_dp_ledger_put(struct fg_dp_ledger *l, const char *ns, const char *name, const struct fg_grant *g, bool mps,
                      const char *const *device_ids, size_t n)
{
    fg_dp_ledger_drop(l, g->pod_uid);
    for (size_t i = 0; i < n; i++)
        take_device(l, device_ids[i]);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = fg_realloc(l->v, l->cap * sizeof(*l->v));
    }
    struct fg_dp_entry *e = &l->v[l->n++];
    memset(e, 0, sizeof(*e));
    snprintf(e->uid, sizeof(e->uid), "%s", g->pod_uid);
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->gpu_uuid, sizeof(e->gpu_uuid), "%s", g->gpu_uuid);
    e->compute_milli = g->compute_milli;
    e->memory_mib = g->memory_mib;
    e->mps = mps;
    e->device_ids = fg_calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        e->device_ids[i] = fg_strdup(device_ids[i]);
    e->ndevices = n;
}

/* The ledger entry holding device id, or NULL. */
static struct fg_dp_entry *owner_of(struct fg_dp_ledger *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->v[i].ndevices; j++)
            if (strcmp(l->v[i].device_ids[j], id) == 0)
                return &l->v[i];
    return NULL;
}

static const struct fg_dp_entry *entry_named(const struct fg_dp_ledger *l, const char *ns, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].ns, ns) == 0 && strcmp(l->v[i].name, name) == 0)
            return &l->v[i];
    return NULL;
}

static bool has_share(json_object *list)
{
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        json_object *res = fg_json_get(json_object_array_get_idx(list, i), "resources", NULL);
        if (fg_json_get(res, "requests", FG_RES_GPU_SHARE, NULL) || fg_json_get(res, "limits", FG_RES_GPU_SHARE, NULL))
            return true;
    }
    return false;
}

bool fg_dp_pod_wants_share(json_object *pod)
{
    return has_share(fg_json_get(pod, "spec", "containers", NULL)) ||
           has_share(fg_json_get(pod, "spec", "initContainers", NULL));
}

static bool mps_of(json_object *pod)
{
    return fg_str_eq(fg_json_get_str(pod, "metadata", "annotations", FG_ANN_SHARING, NULL), "mps");
}

/* Whether pod waits for admission on this node: bound here, asks for a share, not terminating,
 * not started (phase Pending and no status.startTime, which the kubelet writes once it admitted the
 * pod), not yet allocated. */
static bool waits(const struct fg_dp_node_view *v, const struct fg_dp_ledger *l, json_object *pod)
{
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    return uid && fg_str_eq(fg_json_get_str(pod, "spec", "nodeName", NULL), v->node) &&
           !fg_json_get(pod, "metadata", "deletionTimestamp", NULL) && (!phase || strcmp(phase, "Pending") == 0) &&
           !fg_json_get(pod, "status", "startTime", NULL) && fg_dp_pod_wants_share(pod) && !fg_dp_ledger_get(l, uid);
}

/* Whether pod's grant verifies for a healthy GPU of this node; *g filled, why says otherwise. */
static bool granted(const struct fg_dp_node_view *v, json_object *pod, struct fg_grant *g, char *why, size_t why_size)
{
    if (has_share(fg_json_get(pod, "spec", "initContainers", NULL))) {
        snprintf(why, why_size, FG_RES_GPU_SHARE " in an init container is never granted");
        return false;
    }
    char msg[FG_ERRMSG_MAX] = "";
    const char *value = fg_grant_of_pod(pod, g, msg);
    if (!value) {
        snprintf(why, why_size, "%s", msg);
        return false;
    }
    enum fg_grant_verdict verdict = fg_grant_verify(g, value, v->keys);
    if (verdict != FG_GRANT_VALID && verdict != FG_GRANT_VALID_PREVIOUS) {
        snprintf(why, why_size, "grant %s", fg_grant_verdict_name(verdict));
        return false;
    }
    const struct fg_dp_gpu *gpu = fg_dp_gpus_find(v->gpus, v->ngpus, g->gpu_uuid);
    if (!gpu || !gpu->healthy) {
        snprintf(why, why_size, "GPU %s is %s", g->gpu_uuid, gpu ? "unhealthy" : "not on this node");
        return false;
    }
    return true;
}

/* Whether a comes before b in the kubelet's admission order. */
static bool earlier(const struct fg_dp_node_view *v, json_object *a, json_object *b)
{
    if (v->seq) {
        uint64_t sa = v->seq(v->seq_ud, a), sb = v->seq(v->seq_ud, b);
        if (sa != sb)
            return sa < sb;
    }
    int64_t ta = 0, tb = 0;
    fg_time_parse(fg_json_get_str(a, "metadata", "creationTimestamp", NULL), &ta);
    fg_time_parse(fg_json_get_str(b, "metadata", "creationTimestamp", NULL), &tb);
    if (ta != tb)
        return ta < tb;
    int c = strcmp(fg_json_get_str(a, "metadata", "namespace", NULL) ?: "",
                   fg_json_get_str(b, "metadata", "namespace", NULL) ?: "");
    if (c)
        return c < 0;
    return strcmp(fg_json_get_str(a, "metadata", "name", NULL) ?: "", fg_json_get_str(b, "metadata", "name", NULL) ?: "") <
           0;
}

void fg_dp_pick_pod(const struct fg_dp_node_view *v, const struct fg_dp_ledger *l, struct fg_dp_pick *out)
{
    memset(out, 0, sizeof(*out));
    out->outcome = FG_DP_PICK_NONE;
    for (size_t i = 0; i < v->npods; i++) {
        json_object *pod = v->pods[i];
        if (!waits(v, l, pod))
            continue;
        struct fg_grant g;
        char why[160];
        if (!granted(v, pod, &g, why, sizeof(why))) {
            if (out->nrefused < FG_DP_PICK_REFUSED_MAX) {
                snprintf(out->refused_why[out->nrefused], sizeof(out->refused_why[0]), "%s", why);
                out->refused[out->nrefused++] = pod;
            }
            if (out->outcome == FG_DP_PICK_NONE)
                out->outcome = FG_DP_PICK_REFUSED;
            continue;
        }
        if (out->outcome == FG_DP_PICK_GRANTED && !earlier(v, pod, out->pod))
            continue;
        out->outcome = FG_DP_PICK_GRANTED;
        out->pod = pod;
        out->grant = g;
        out->mps = mps_of(pod);
    }
}

static json_object *pod_named(const struct fg_dp_node_view *v, const char *ns, const char *name)
{
    for (size_t i = 0; i < v->npods; i++)
        if (fg_str_eq(fg_json_get_str(v->pods[i], "metadata", "namespace", NULL), ns) &&
            fg_str_eq(fg_json_get_str(v->pods[i], "metadata", "name", NULL), name))
            return v->pods[i];
    return NULL;
}

static void condemn(struct fg_dp_ledger *l, const char *uid)
{
    snprintf(l->condemned[l->ncondemned++ % FG_DP_CONDEMNED_MAX], sizeof(l->condemned[0]), "%s", uid);
}

static bool condemned(const struct fg_dp_ledger *l, const char *uid)
{
    size_t n = l->ncondemned < FG_DP_CONDEMNED_MAX ? l->ncondemned : FG_DP_CONDEMNED_MAX;
    for (size_t i = 0; uid && i < n; i++)
        if (strcmp(l->condemned[i], uid) == 0)
            return true;
    return false;
}

static void impostor(struct fg_dp_ledger *l, struct fg_dp_audit *out, size_t index, json_object *pod, const char *fmt,
                     const char *a, const char *b)
{
    if (pod)
        condemn(l, fg_json_get_str(pod, "metadata", "uid", NULL));
    if (out->nimpostors == FG_DP_AUDIT_MAX)
        return;
    snprintf(out->why[out->nimpostors], sizeof(out->why[0]), fmt, a, b);
    out->impostor_pods[out->nimpostors] = pod;
    out->impostors[out->nimpostors++] = index;
}

/* Whether the reply e carried is what pod's own grant asks for (same GPU, amounts and sharing). */
static bool same_reply(const struct fg_dp_entry *e, const struct fg_grant *g, json_object *pod)
{
    return strcmp(e->gpu_uuid, g->gpu_uuid) == 0 && e->compute_milli == g->compute_milli &&
           e->memory_mib == g->memory_mib && e->mps == mps_of(pod);
}

/* Whether every device of holding h is one the entry recorded: the pod holds what its own reply went
 * with. */
static bool holds_own(const struct fg_dp_entry *e, const struct fg_dp_holding *h)
{
    for (size_t i = 0; i < h->n; i++) {
        bool found = false;
        for (size_t j = 0; j < e->ndevices && !found; j++)
            found = strcmp(e->device_ids[j], h->device_ids[i]) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The first device of h that is not a slot of gpu_uuid ("<uuid>::<n>"), or NULL. The kubelet picks a
 * pod's slots by GetPreferredAllocation, which the plugin answers with slots of the GPU its reply
 * names: a pod holding another GPU's slot was given the reply computed for another pod. */
static const char *off_gpu(const struct fg_dp_holding *h, const char *gpu_uuid)
{
    size_t n = strlen(gpu_uuid);
    for (size_t i = 0; i < h->n; i++)
        if (strncmp(h->device_ids[i], gpu_uuid, n) != 0 || strncmp(h->device_ids[i] + n, "::", 2) != 0)
            return h->device_ids[i];
    return NULL;
}

/* Granted pods of one reply admitted in another order than served hold each other's devices, in any
 * permutation (a got b's, b got c's, c got a's): each holder whose grant verifies and whose every
 * device is recorded with its very reply takes those devices, and the entries that recorded them go.
 * Only the bookkeeping moves; what is left is judged one holder at a time. */
static void rekey_same_replies(struct fg_dp_ledger *l, const struct fg_dp_node_view *v, const struct fg_dp_holding *h,
                               size_t nh, struct fg_dp_audit *out)
{
    struct fg_grant *grants = fg_calloc(nh ? nh : 1, sizeof(*grants));
    json_object **pods = fg_calloc(nh ? nh : 1, sizeof(*pods));
    char (*drop)[64] = NULL;
    size_t ndrop = 0;
    for (size_t i = 0; i < nh; i++) {
        char why[160];
        json_object *pod = pod_named(v, h[i].ns, h[i].name);
        if (!pod || !h[i].n || !granted(v, pod, &grants[i], why, sizeof(why)))
            continue;
        bool theirs = true, moved = false;
        for (size_t j = 0; j < h[i].n && theirs; j++) {
            const struct fg_dp_entry *e = owner_of(l, h[i].device_ids[j]);
            theirs = e && same_reply(e, &grants[i], pod);
            moved = moved || (e && (strcmp(e->ns, h[i].ns) || strcmp(e->name, h[i].name)));
        }
        if (!theirs || !moved)
            continue;
        pods[i] = pod;
        for (size_t j = 0; j < h[i].n; j++) {
            drop = fg_realloc(drop, (ndrop + 1) * sizeof(*drop));
            snprintf(drop[ndrop++], sizeof(drop[0]), "%s", owner_of(l, h[i].device_ids[j])->uid);
        }
    }
    for (size_t k = 0; k < ndrop; k++)
        fg_dp_ledger_drop(l, drop[k]);
    for (size_t i = 0; i < nh; i++)
        if (pods[i]) {
            fg_dp_ledger_put(l, h[i].ns, h[i].name, &grants[i], mps_of(pods[i]), h[i].device_ids, h[i].n);
            out->rekeyed++;
        }
    free(drop);
    free(pods);
    free(grants);
}

void fg_dp_ledger_audit(struct fg_dp_ledger *l, const struct fg_dp_node_view *v, const struct fg_dp_holding *h,
                        size_t nh, struct fg_dp_audit *out)
{
    memset(out, 0, sizeof(*out));
    rekey_same_replies(l, v, h, nh, out);
    for (size_t i = 0; i < nh; i++) {
        json_object *pod = pod_named(v, h[i].ns, h[i].name);
        struct fg_grant g;
        char why[160];
        bool valid = pod && granted(v, pod, &g, why, sizeof(why));
        bool settled = false;
        for (size_t j = 0; j < h[i].n && !settled; j++) {
            struct fg_dp_entry *e = owner_of(l, h[i].device_ids[j]);
            if (!e || (strcmp(e->ns, h[i].ns) == 0 && strcmp(e->name, h[i].name) == 0))
                continue;
            settled = true;
            if (valid && same_reply(e, &g, pod)) { /* two granted pods admitted in another order: same reply */
                fg_dp_ledger_drop(l, e->uid);
                fg_dp_ledger_put(l, h[i].ns, h[i].name, &g, mps_of(pod), h[i].device_ids, h[i].n);
                out->rekeyed++;
                continue;
            }
            char owner[320];
            snprintf(owner, sizeof(owner), "%s/%s", e->ns, e->name);
            impostor(l, out, i, pod, "holds device %s, which was allocated to %s", h[i].device_ids[j], owner);
            fg_dp_ledger_drop(l, e->uid);
            out->robbed++;
        }
        if (settled || h[i].n == 0 || !pod)
            continue; /* (a pod not in the cache yet: the next audit decides) */
        const struct fg_dp_entry *own = entry_named(l, h[i].ns, h[i].name);
        if (own) {
            /* devices no entry records, while its own reply went with others: it got a reply whose
             * entry a later grant of the same pod replaced (a chain of robbed pods served again) */
            if (!holds_own(own, &h[i]))
                impostor(l, out, i, pod, "holds device %s, while the reply for it went with %s", h[i].device_ids[0],
                         own->ndevices ? own->device_ids[0] : "no device");
            continue;
        }
        const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
        char msg[FG_ERRMSG_MAX] = "";
        const char *value = fg_grant_of_pod(pod, &g, msg);
        enum fg_grant_verdict verdict = value ? fg_grant_verify(&g, value, v->keys) : FG_GRANT_MISSING;
        const char *elsewhere = value ? off_gpu(&h[i], g.gpu_uuid) : NULL;
        if (condemned(l, uid))
            impostor(l, out, i, pod, "holds %s devices it was not granted%s", FG_RES_GPU_SHARE,
                     " (an audit found it holding another pod's)");
        else if (verdict == FG_GRANT_MISSING || verdict == FG_GRANT_MALFORMED)
            impostor(l, out, i, pod, "holds %s devices without a grant: %s", FG_RES_GPU_SHARE,
                     value ? fg_grant_verdict_name(verdict) : msg);
        else if (elsewhere)
            impostor(l, out, i, pod, "holds device %s, not a slot of %s, the GPU of its grant", elsewhere, g.gpu_uuid);
        else {
            fg_dp_ledger_put(l, h[i].ns, h[i].name, &g, mps_of(pod), h[i].device_ids, h[i].n);
            out->adopted++;
        }
    }
}
