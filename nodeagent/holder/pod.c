/* pod — the capacity pod's asks and the holder's report; see pod.h. */
#include "nodeagent/holder/pod.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "crds/gpupolicy.h"
#include "reconcilers/podcontract.h"

static const char *annotation(json_object *pod, const char *key)
{
    return fg_json_get_str(pod, "metadata", "annotations", key, NULL);
}

/* A whole decimal number in [lo, hi]. */
static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 19)
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

enum fg_err fg_holder_pod_want(json_object *pod, struct fg_holder_want *want, char *errmsg)
{
    memset(want, 0, sizeof *want);
    const char *sharing = annotation(pod, FG_ANN_SHARING);
    if (!sharing || strcmp(sharing, fg_sharing_name(FG_SHARING_MPS)) != 0)
        return FG_OK;
    want->mps = true;
    const char *milli = annotation(pod, FG_ANN_COMPUTE_MILLI);
    if (!parse_u64(milli, 1, FG_POLICY_MILLI_MAX, &want->compute_milli))
        return fg_errmsg(errmsg, FG_E_INVAL, "an mps capacity pod needs %s from 1 to %d, got %s%s%s",
                         FG_ANN_COMPUTE_MILLI, FG_POLICY_MILLI_MAX, milli ? "\"" : "", milli ? milli : "none",
                         milli ? "\"" : "");
    const char *mib = annotation(pod, FG_ANN_MEMORY_MIB);
    if (!parse_u64(mib, 1, UINT64_MAX / 2, &want->memory_mib))
        return fg_errmsg(errmsg, FG_E_INVAL, "an mps capacity pod needs a positive %s, got %s%s%s",
                         FG_ANN_MEMORY_MIB, mib ? "\"" : "", mib ? mib : "none", mib ? "\"" : "");
    return FG_OK;
}

bool fg_holder_pod_reported(json_object *pod, const char *uuid, uint64_t memory_mib)
{
    char mib[32];
    snprintf(mib, sizeof mib, "%llu", (unsigned long long)memory_mib);
    return fg_str_eq(annotation(pod, FG_ANN_GPU_UUID), uuid) && fg_str_eq(annotation(pod, FG_ANN_GPU_MEMORY_MIB), mib);
}

char *fg_holder_pod_patch(const char *uuid, uint64_t memory_mib)
{
    char mib[32];
    snprintf(mib, sizeof mib, "%llu", (unsigned long long)memory_mib);
    json_object *patch = json_object_new_object();
    json_object *ann = fg_json_ensure_obj(fg_json_ensure_obj(patch, "metadata"), "annotations");
    fg_json_set_str(ann, FG_ANN_GPU_UUID, uuid);
    fg_json_set_str(ann, FG_ANN_GPU_MEMORY_MIB, mib);
    char *text = fg_strdup(fg_json_text(patch, NULL));
    json_object_put(patch);
    return text;
}
