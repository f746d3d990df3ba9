/*
 * terms — what governs an automated workload's pods, read without I/O: the GPUPolicy in force, its
 * spec, the update mode and the recommender's figures. The webhook (for the pod it admits) and the
 * workload reconciler (for the GPUWorkload's status) both ask, and must get the same answer:
 *   policy          the workload's fracgpu.io/policy annotation, else its GPUWorkload's
 *                   (fg_gpuworkload_policy_get), else the built-in for the class detected from the
 *                   workload;
 *   its spec        the cached GPUPolicy decoded, else the built-in of that name (one the caches have
 *                   not seen yet); neither is "not found";
 *   update mode     the GPUWorkload's spec.updateMode, else the policy's; Off without a policy;
 *   recommendation  the GPUWorkload's status.recommendation.computeMilli and .memoryMiB, each only
 *                   within the bounds of one GPU.
 */
#ifndef FG_RECONCILERS_TERMS_H
#define FG_RECONCILERS_TERMS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "crds/gpupolicy.h"
#include "reconcilers/allocation.h"
#include "reconcilers/workload.h"

struct fg_terms {
    const char *policy;                 /* borrowed from the workload, the GPUWorkload or static */
    bool policy_found;
    struct fg_gpupolicy_spec spec;      /* when policy_found */
    enum fg_update_mode update_mode;
    struct fg_recommendation rec;
};

/* The name of the policy in force for workload of kind, whose GPUWorkload is gw (NULL: none yet). */
const char *fg_terms_policy_name(const struct fg_workload_kind *kind, json_object *workload, json_object *gw);

/* The terms under `policy` (fg_terms_policy_name's answer), whose cached GPUPolicy is policy_obj (NULL:
 * not cached). errmsg (may be NULL) says why when the policy is not found. */
void fg_terms_resolve(const char *policy, json_object *policy_obj, json_object *gw, struct fg_terms *out,
                      char *errmsg);

#endif
