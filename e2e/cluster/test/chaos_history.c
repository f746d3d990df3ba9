/* chaos_history — a workload's GPUCheckpoint and GPUWorkload read and compared (chaos_history.h). */
#include "e2e/cluster/test/chaos_history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json.h"

#define API "/apis/fracgpu.io/v1alpha1/namespaces/"

/* GET of path: the object, NULL with *missing set on 404, NULL otherwise. */
static json_object *get(struct fg_simcluster *c, const char *path, bool *missing)
{
    json_object *o = NULL;
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_get(c->client, path, &o, &st);
    *missing = err && st.http_code == 404;
    if (err)
        fg_kube_status_cleanup(&st);
    return err ? NULL : o;
}

bool chaos_history_read(struct fg_simcluster *c, const char *ns, const char *deployment, struct chaos_history *out)
{
    char path[512];
    bool missing = false;
    *out = (struct chaos_history){ .usage_samples = -1 };
    snprintf(path, sizeof path, API "%s/gpucheckpoints/deployment-%s", ns, deployment);
    json_object *ck = get(c, path, &missing);
    if (!ck && !missing)
        return false;
    out->found = ck && fg_json_get_int64(ck, &out->samples, "status", "samples", NULL) &&
                 fg_json_get_int64(ck, &out->first_ms, "status", "state", "firstSample", NULL);
    json_object_put(ck);
    snprintf(path, sizeof path, API "%s/gpuworkloads/deployment-%s", ns, deployment);
    json_object *gw = get(c, path, &missing);
    if (!gw && !missing)
        return false;
    if (!fg_json_get_int64(gw, &out->usage_samples, "status", "usage", "samples", NULL))
        out->usage_samples = -1;
    json_object_put(gw);
    return true;
}

bool chaos_history_kept(const struct chaos_history *before, const struct chaos_history *after, char *why, size_t n)
{
    if (!after->found)
        snprintf(why, n, "its GPUCheckpoint is gone");
    else if (after->samples < before->samples)
        snprintf(why, n, "its GPUCheckpoint holds %" PRId64 " samples, %" PRId64 " before the faults", after->samples,
                 before->samples);
    else if (after->first_ms > before->first_ms)
        snprintf(why, n, "its history now starts at %" PRId64 " ms, not %" PRId64 " (started afresh)", after->first_ms,
                 before->first_ms);
    else if (after->usage_samples < before->samples)
        snprintf(why, n, "its GPUWorkload counts %" PRId64 " samples, its checkpoint held %" PRId64 " before the faults",
                 after->usage_samples, before->samples);
    else
        return true;
    return false;
}
