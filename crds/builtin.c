/*
 * builtin — the table of built-in policies and the rules for creating and upgrading them.
 */
#include "crds/builtin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

#define H(n) ((int64_t)(n) * 3600 * 1000)
#define M(n) ((int64_t)(n) * 60 * 1000)

const struct fg_builtin_policy fg_builtin_policies[] = {
    { "real-time", true, "latency-sensitive serving: long window, p95, high headroom",
      { FG_CLASS_INFERENCE, FG_SHARING_TIMESLICE, FG_ISOLATION_SHARED, H(168), H(4),
        { 95, 30, 100, 1000 }, { 100, 15, 512, 81920 }, FG_UPDATE_INITIAL, H(6), 15, 1000 } },
    { "real-time-mps", true, "low-latency, high-throughput serving on MPS, one dedicated GPU per workload",
      { FG_CLASS_INFERENCE, FG_SHARING_MPS, FG_ISOLATION_DEDICATED, H(168), H(4),
        { 95, 30, 100, 1000 }, { 100, 15, 512, 81920 }, FG_UPDATE_INITIAL, H(6), 15, 1000 } },
    { "near-real-time", true, "predictable serving: shorter window, p90, tighter headroom",
      { FG_CLASS_INFERENCE, FG_SHARING_TIMESLICE, FG_ISOLATION_SHARED, H(72), H(3),
        { 90, 15, 50, 1000 }, { 100, 15, 256, 81920 }, FG_UPDATE_INITIAL, H(3), 10, 500 } },
    { "batch", true, "offline scoring and batch inference: longest window, minimal headroom",
      { FG_CLASS_BATCH, FG_SHARING_TIMESLICE, FG_ISOLATION_SHARED, H(336), H(2),
        { 90, 5, 50, 1000 }, { 100, 0, 256, 81920 }, FG_UPDATE_AUTO, H(3), 10, 100 } },
    { "training", false, "training and fine-tuning, created when first detected",
      { FG_CLASS_TRAINING, FG_SHARING_TIMESLICE, FG_ISOLATION_SHARED, H(24), H(2),
        { 90, 10, 100, 1000 }, { 100, 10, 1024, 81920 }, FG_UPDATE_INITIAL, H(1), 10, 300 } },
    { "build", false, "notebooks and experiments, created when first detected",
      { FG_CLASS_BUILD, FG_SHARING_TIMESLICE, FG_ISOLATION_SHARED, H(24), H(1),
        { 75, 25, 50, 1000 }, { 100, 25, 512, 81920 }, FG_UPDATE_AUTO, M(30), 10, 0 } },
};
const size_t fg_builtin_policies_count = sizeof fg_builtin_policies / sizeof fg_builtin_policies[0];

const struct fg_builtin_policy *fg_builtin_policy_find(const char *name)
{
    for (size_t i = 0; name && i < fg_builtin_policies_count; i++)
        if (!strcmp(fg_builtin_policies[i].name, name))
            return &fg_builtin_policies[i];
    return NULL;
}

const char *fg_builtin_policy_for_class(enum fg_workload_class c)
{
    switch (c) {
    case FG_CLASS_TRAINING: return "training";
    case FG_CLASS_BATCH: return "batch";
    case FG_CLASS_BUILD: return "build";
    case FG_CLASS_INFERENCE: break;
    }
    return "real-time";
}

json_object *fg_builtin_policy_object(const struct fg_builtin_policy *b)
{
    char digest[17], version[16];
    fg_gpupolicy_digest(&b->spec, digest);
    snprintf(version, sizeof version, "%d", FG_BUILTIN_DEFAULTS_VERSION);

    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "apiVersion", json_object_new_string(FG_API_VERSION));
    json_object_object_add(obj, "kind", json_object_new_string("GPUPolicy"));
    json_object *meta = fg_json_ensure_obj(obj, "metadata");
    fg_json_set_str(meta, "name", b->name);
    fg_json_set_str(fg_json_ensure_obj(meta, "labels"), FG_LABEL_BUILTIN, "true");
    json_object *ann = fg_json_ensure_obj(meta, "annotations");
    fg_json_set_str(ann, FG_ANN_DEFAULTS_VERSION, version);
    fg_json_set_str(ann, FG_ANN_DEFAULTS_DIGEST, digest);
    fg_json_set_str(ann, "fracgpu.io/description", b->description);
    json_object_object_add(obj, "spec", fg_gpupolicy_encode(&b->spec));
    return obj;
}

enum fg_builtin_action fg_builtin_policy_check(json_object *existing)
{
    const char *version = fg_json_get_str(existing, "metadata", "annotations", FG_ANN_DEFAULTS_VERSION, NULL);
    const char *written = fg_json_get_str(existing, "metadata", "annotations", FG_ANN_DEFAULTS_DIGEST, NULL);
    if (!version || !written)
        return FG_BUILTIN_KEEP;
    char *end = NULL;
    long v = strtol(version, &end, 10);
    if (end == version || *end || v >= FG_BUILTIN_DEFAULTS_VERSION)
        return FG_BUILTIN_KEEP;
    struct fg_gpupolicy_spec spec;
    char digest[17];
    if (fg_gpupolicy_decode(fg_json_get(existing, "spec", NULL), &spec, NULL) != FG_OK)
        return FG_BUILTIN_KEEP;
    fg_gpupolicy_digest(&spec, digest);
    return strcmp(digest, written) ? FG_BUILTIN_KEEP : FG_BUILTIN_UPGRADE;
}
