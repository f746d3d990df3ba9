/*
 * gpuworkload — the GPUWorkload custom resource (fracgpu.io/v1alpha1, namespaced) as C values.
 *
 * One GPUWorkload stands for one automated workload. This module decodes its spec with the CRD
 * schema's rules (targetRef required, enums, unknown fields refused) and answers the question the
 * policy reconciler asks of every workload: which policy does it use? That is spec.policy when set,
 * else the policy the workload reconciler resolved (status.policy), else the built-in for the class
 * it detected (status.detectedClass).
 *
 * Ownership: a decoded spec owns its strings; fg_gpuworkload_spec_cleanup frees them.
 */
#ifndef FG_CRDS_GPUWORKLOAD_H
#define FG_CRDS_GPUWORKLOAD_H

#include <json-c/json.h>
#include <stdbool.h>

#include "base/err.h"
#include "crds/gpupolicy.h"

#define FG_NAME_MAX 253

struct fg_gpuworkload_spec {
    char *target_api_version;   /* "apps/v1" */
    char *target_kind;          /* "Deployment" */
    char *target_name;
    char *policy;               /* NULL: auto-detected */
    bool has_update_mode;       /* false: the policy's */
    enum fg_update_mode update_mode;
};

/* Decodes spec. FG_E_INVAL with errmsg naming the field for a missing targetRef member, a wrong type,
 * an over-long name, an unknown field or an update mode outside Off/Initial/Auto. On failure nothing
 * is left to clean up. */
enum fg_err fg_gpuworkload_decode(json_object *spec, struct fg_gpuworkload_spec *out, char *errmsg) FG_MUST_USE;
void fg_gpuworkload_spec_cleanup(struct fg_gpuworkload_spec *s);

/* The policy name the workload `obj` (a whole GPUWorkload, borrowed) uses, borrowed from obj or
 * static; NULL when it names none and has no detected class yet. */
const char *fg_gpuworkload_policy_get(json_object *obj);

/* Parses a class name ("training"); false for anything else. */
bool fg_workload_class_parse(const char *s, enum fg_workload_class *out);

#endif
