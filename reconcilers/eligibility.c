/* Which pods fracgpu takes on, and why it leaves the others whole (eligibility.h). */
#include "reconcilers/eligibility.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "operator/kube/quantity.h"
#include "reconcilers/podcontract.h"

#define ONE_GPU 1000 /* milli-units */

enum fg_err fg_container_ask(json_object *c, const char *resource, int64_t *milli, char *errmsg)
{
    const char *name = fg_json_get_str(c, "name", NULL);
    json_object *req = fg_json_get(c, "resources", "requests", resource, NULL);
    json_object *lim = fg_json_get(c, "resources", "limits", resource, NULL);
    int64_t r = 0, l = 0;
    char why[FG_ERRMSG_MAX];
    if ((req && fg_quantity_json(req, &r, why) != FG_OK) || (lim && fg_quantity_json(lim, &l, why) != FG_OK))
        return fg_errmsg(errmsg, FG_E_PARSE, "container %s: %s: %s", name ? name : "(unnamed)", resource, why);
    if (req && lim && r != l)
        return fg_errmsg(errmsg, FG_E_INVAL, "container %s: %s requests (%s) and limits (%s) differ",
                         name ? name : "(unnamed)", resource, json_object_get_string(req),
                         json_object_get_string(lim));
    *milli = req ? r : l;
    return FG_OK;
}

static void whole(struct fg_eligibility *out, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void whole(struct fg_eligibility *out, const char *reason, const char *fmt, ...)
{
    out->ask = FG_GPU_WHOLE;
    out->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

static const char *name_of(json_object *c)
{
    const char *n = fg_json_get_str(c, "name", NULL);
    return n ? n : "(unnamed)";
}

/* What container c asks for into *milli; false, with the pod judged WHOLE, for a malformed ask. */
static bool read_ask(json_object *c, int64_t *milli, struct fg_eligibility *out)
{
    char why[FG_ERRMSG_MAX];
    enum fg_err err = fg_container_ask(c, FG_RES_NVIDIA_GPU, milli, why);
    if (err != FG_OK)
        whole(out, err == FG_E_PARSE ? "badGPUQuantity" : "gpuRequestMismatch", "%s", why);
    return err == FG_OK;
}

/* The GPU half: which container asks for what. False when the pod was judged (NONE or WHOLE). */
static bool judge_gpu_ask(json_object *spec, struct fg_eligibility *out)
{
    json_object *inits = fg_json_get(spec, "initContainers", NULL);
    json_object *containers = fg_json_get(spec, "containers", NULL);
    int64_t milli;
    for (size_t i = 0; i < fg_json_array_len(inits); i++) {
        json_object *c = json_object_array_get_idx(inits, i);
        if (!read_ask(c, &milli, out))
            return false;
        if (milli != 0) {
            whole(out, "gpuInInitContainer", "init container %s asks for " FG_RES_NVIDIA_GPU, name_of(c));
            return false;
        }
    }
    size_t askers = 0;
    int64_t amount = 0;
    for (size_t i = 0; i < fg_json_array_len(containers); i++) {
        json_object *c = json_object_array_get_idx(containers, i);
        if (!read_ask(c, &milli, out))
            return false;
        if (milli != 0) {
            askers++;
            out->index = i;
            amount = milli;
        }
    }
    if (askers == 0) {
        out->ask = FG_GPU_NONE;
        return false;
    }
    if (askers > 1) {
        whole(out, "gpuInSeveralContainers", "%zu containers ask for " FG_RES_NVIDIA_GPU, askers);
        return false;
    }
    json_object *c = json_object_array_get_idx(containers, out->index);
    if (amount % ONE_GPU != 0 || amount < 0) {
        char q[FG_QUANTITY_MAX];
        fg_quantity_format(amount, q);
        whole(out, "badGPUQuantity", "container %s asks for %s " FG_RES_NVIDIA_GPU ", not a whole number", name_of(c),
              q);
        return false;
    }
    if (amount != ONE_GPU) {
        whole(out, "multipleGPUs", "container %s asks for %" PRId64 " " FG_RES_NVIDIA_GPU, name_of(c),
              amount / ONE_GPU);
        return false;
    }
    return true;
}

static bool has_terms(json_object *affinity, const char *kind)
{
    json_object *a = fg_json_get(affinity, kind, NULL);
    return fg_json_array_len(fg_json_get(a, "requiredDuringSchedulingIgnoredDuringExecution", NULL)) > 0 ||
           fg_json_array_len(fg_json_get(a, "preferredDuringSchedulingIgnoredDuringExecution", NULL)) > 0;
}

/* A container of spec[list] with a host port, or with a DRA claim; false when none. */
static bool container_uses(json_object *spec, const char *list, bool claims, struct fg_eligibility *out)
{
    json_object *cs = fg_json_get(spec, list, NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        if (claims) {
            if (fg_json_array_len(fg_json_get(c, "resources", "claims", NULL)) > 0) {
                whole(out, "resourceClaims", "container %s uses a DRA resource claim", name_of(c));
                return true;
            }
            continue;
        }
        json_object *ports = fg_json_get(c, "ports", NULL);
        for (size_t j = 0; j < fg_json_array_len(ports); j++) {
            int64_t port = 0;
            if (fg_json_get_int64(json_object_array_get_idx(ports, j), &port, "hostPort", NULL) && port != 0) {
                whole(out, "hostPort", "container %s asks for host port %" PRId64, name_of(c), port);
                return true;
            }
        }
    }
    return false;
}

static bool volume_waits(json_object *spec, const struct fg_storage_view *storage, struct fg_eligibility *out)
{
    json_object *volumes = fg_json_get(spec, "volumes", NULL);
    for (size_t i = 0; storage && i < fg_json_array_len(volumes); i++) {
        json_object *v = json_object_array_get_idx(volumes, i);
        const char *claim = fg_json_get_str(v, "persistentVolumeClaim", "claimName", NULL);
        if (claim && storage->claim_waits && storage->claim_waits(storage->ctx, claim)) {
            whole(out, "WaitForFirstConsumer", "volume %s: claim %s binds when the pod is scheduled",
                  name_of(v), claim);
            return true;
        }
        json_object *tmpl = fg_json_get(v, "ephemeral", "volumeClaimTemplate", NULL);
        const char *cls = fg_json_get_str(tmpl, "spec", "storageClassName", NULL);
        if (tmpl && storage->class_waits && storage->class_waits(storage->ctx, cls)) {
            whole(out, "WaitForFirstConsumer", "volume %s: StorageClass %s binds when the pod is scheduled",
                  name_of(v), cls ? cls : "(the default)");
            return true;
        }
    }
    return false;
}

void fg_eligibility_check(json_object *pod, const struct fg_storage_view *storage, struct fg_eligibility *out)
{
    memset(out, 0, sizeof(*out));
    json_object *spec = fg_json_get(pod, "spec", NULL);
    if (!judge_gpu_ask(spec, out))
        return;
    const char *node = fg_json_get_str(spec, "nodeName", NULL);
    const char *scheduler = fg_json_get_str(spec, "schedulerName", NULL);
    json_object *affinity = fg_json_get(spec, "affinity", NULL);
    out->ask = FG_GPU_ELIGIBLE;
    if (node && *node)
        whole(out, "nodeName", "the pod names its node (%s): there is nothing to schedule", node);
    else if (scheduler && *scheduler && strcmp(scheduler, FG_DEFAULT_SCHEDULER) && strcmp(scheduler, FG_SCHEDULER_NAME))
        whole(out, "schedulerName", "the pod asks for scheduler %s", scheduler);
    else if (has_terms(affinity, "podAffinity"))
        whole(out, "podAffinity", "the pod uses inter-pod affinity");
    else if (has_terms(affinity, "podAntiAffinity"))
        whole(out, "podAntiAffinity", "the pod uses inter-pod anti-affinity");
    else if (fg_json_array_len(fg_json_get(spec, "topologySpreadConstraints", NULL)) > 0)
        whole(out, "topologySpreadConstraints", "the pod uses topology spread constraints");
    else if (container_uses(spec, "containers", false, out) || container_uses(spec, "initContainers", false, out))
        return;
    else if (fg_json_array_len(fg_json_get(spec, "resourceClaims", NULL)) > 0)
        whole(out, "resourceClaims", "the pod uses DRA resource claims");
    else if (container_uses(spec, "containers", true, out) || container_uses(spec, "initContainers", true, out))
        return;
    else if (fg_json_array_len(fg_json_get(spec, "schedulingGates", NULL)) > 0)
        whole(out, "schedulingGates", "the pod has scheduling gates");
    else
        volume_waits(spec, storage, out);
}
