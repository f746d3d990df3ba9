/* The rightsizer's status members and what it reads of pods, computed without I/O (rightsizer_int.h). */
#include <math.h>
#include <stdio.h>

#include "base/duration.h"
#include "base/json.h"
#include "base/timefmt.h"
#include "operator/kube/quantity.h"
#include "reconcilers/allocation.h"
#include "reconcilers/rightsizer_int.h"

static void set_i64(json_object *o, const char *key, int64_t v)
{
    json_object_object_add(o, key, json_object_new_int64(v));
}

/* "228m/20Gi": the allocation as Kubernetes quantities. */
static void quantities(int64_t milli, int64_t mib, char *out, size_t size)
{
    char c[FG_QUANTITY_MAX], m[FG_QUANTITY_MAX];
    fg_quantity_format(milli, c);
    fg_quantity_format(mib * FG_MIB_MILLI, m);
    snprintf(out, size, "%s/%s", c, m);
}

json_object *fg_rs_usage_json(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms)
{
    struct fg_rec_usage u;
    fg_rec_usage(s, o, now_ms, &u);
    json_object *j = json_object_new_object();
    set_i64(j, "samples", (int64_t)u.samples);
    char covered[32];
    fg_duration_format(u.covered_ms, covered, sizeof covered);
    fg_json_set_str(j, "windowCovered", covered);
    set_i64(j, "computeP50Milli", (int64_t)ceil(u.compute_p50));
    set_i64(j, "computeP90Milli", (int64_t)ceil(u.compute_p90));
    set_i64(j, "computeP95Milli", (int64_t)ceil(u.compute_p95));
    set_i64(j, "memoryPeakMiB", (int64_t)ceil(u.memory_peak_mib));
    uint64_t refused = 0;
    for (int i = 1; i < FG_REC_REFUSALS; i++)
        refused += s->refused[i];
    set_i64(j, "refusedSamples", (int64_t)refused);
    set_i64(j, "outOfMemoryKills", (int64_t)s->ooms);
    return j;
}

static json_object *pair(int64_t milli, int64_t mib)
{
    json_object *j = json_object_new_object();
    set_i64(j, "computeMilli", milli);
    set_i64(j, "memoryMiB", mib);
    return j;
}

json_object *fg_rs_recommendation_json(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms,
                                       const char *reason)
{
    json_object *j = json_object_new_object();
    struct fg_rec_result r;
    fg_rec_recommend(s, o, now_ms, &r);
    char text[96];
    if (!s->applied.set) {
        /* nothing the webhook could apply: every member it reads is absent (null in a merge patch) */
        char have[32], need[32];
        int64_t covered = s->samples ? s->last_ms - s->first_ms : 0;
        fg_duration_format(covered, have, sizeof have);
        fg_duration_format(o->policy.min_history_ms, need, sizeof need);
        snprintf(text, sizeof text, "waiting for history (%s of %s)", have, need);
        fg_json_set_str(j, "summary", text);
        json_object_object_add(j, "computeMilli", NULL);
        json_object_object_add(j, "memoryMiB", NULL);
        json_object_object_add(j, "target", NULL);
        json_object_object_add(j, "lowerBound", NULL);
        json_object_object_add(j, "upperBound", NULL);
        json_object_object_add(j, "since", NULL);
        fg_json_set_str(j, "reason", reason ? reason : "InsufficientHistory");
        return j;
    }
    quantities(s->applied.compute_milli, s->applied.memory_mib, text, sizeof text);
    fg_json_set_str(j, "summary", text);
    set_i64(j, "computeMilli", s->applied.compute_milli);
    set_i64(j, "memoryMiB", s->applied.memory_mib);
    json_object_object_add(j, "target", pair(r.compute_milli, r.memory_mib));
    json_object_object_add(j, "lowerBound", pair(r.compute_lower, r.memory_lower));
    json_object_object_add(j, "upperBound", pair(r.compute_upper, r.memory_upper));
    char since[FG_TIME_MAX];
    fg_time_format(s->applied.since_ms, since);
    fg_json_set_str(j, "since", since);
    fg_json_set_str(j, "reason", reason ? reason : "Unchanged");
    return j;
}

bool fg_rs_checkpoint_expired(const char *updated, int64_t now_ms, int64_t ttl_ms)
{
    int64_t at = 0;
    if (!updated || !fg_time_parse(updated, &at))
        return true;   /* written by nothing this operator knows: nothing to keep it for */
    return now_ms - at >= ttl_ms;
}

bool fg_rs_pod_ready(json_object *pod)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready"))
            return fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    return false;
}

int64_t fg_rs_pod_restarts(json_object *pod, bool *oom_killed)
{
    int64_t sum = 0;
    *oom_killed = false;
    json_object *cs = fg_json_get(pod, "status", "containerStatuses", NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        int64_t n = 0;
        if (fg_json_get_int64(c, &n, "restartCount", NULL) && n > 0)
            sum += n;
        if (fg_str_eq(fg_json_get_str(c, "lastState", "terminated", "reason", NULL), "OOMKilled"))
            *oom_killed = true;
    }
    return sum;
}
