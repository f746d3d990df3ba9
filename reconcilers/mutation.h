/*
 * mutation — the JSON Patch that turns a whole-GPU pod into one fracgpu schedules. No I/O.
 *
 * Kubernetes does not let a pod's schedulerName or extended-resource requests change after it is
 * created, so the webhook applies this patch at admission (docs/admission.md). For an eligible pod
 * (eligibility.h) the patch
 *   - replaces nvidia.com/gpu with fracgpu.io/gpu-share: "1" in that container's requests and limits
 *     (whichever it had), keeping the original values in annotation fracgpu.io/original-request;
 *   - sets spec.schedulerName to fracgpu-scheduler and label fracgpu.io/managed: "true";
 *   - writes the annotations fracgpu.io/workload, policy, compute-milli, memory-mib, sharing, isolation.
 *
 * The plan is computed as a difference: the pod's original form (the pod itself, or — when it already
 * carries fracgpu.io/original-request and a gpu-share request — what that annotation says it was) is
 * judged, the form it should have is built from it, and the patch holds only the members that differ.
 * So a second pass over an admitted pod (reinvocationPolicy: IfNeeded) changes nothing; a pass after
 * another webhook gave the pod, say, anti-affinity puts its whole GPU back; a pass under a new
 * allocation rewrites only the annotations. An original-request annotation that does not describe the
 * pod (malformed, or naming a container it lacks) is not trusted: the pod is judged as it stands.
 */
#ifndef FG_RECONCILERS_MUTATION_H
#define FG_RECONCILERS_MUTATION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "crds/gpupolicy.h"
#include "reconcilers/allocation.h"
#include "reconcilers/eligibility.h"

/* What an eligible pod of a workload gets. Strings borrowed. */
struct fg_mutation_target {
    const char *workload;       /* the GPUWorkload's name */
    const char *policy;         /* the GPUPolicy in force */
    enum fg_sharing sharing;
    enum fg_isolation isolation;
    struct fg_allocation allocation;
    enum fg_update_mode update_mode;    /* the workload's */
};

struct fg_mutation {
    struct fg_eligibility judged;   /* of the pod's original form */
    json_object *patch;             /* a JSON Patch (RFC 6902) array, owned; NULL: nothing to change */
};

/* Plans the mutation of `pod` (borrowed, unchanged); fg_mutation_cleanup frees out->patch. */
void fg_mutation_plan(json_object *pod, const struct fg_mutation_target *target, const struct fg_storage_view *storage,
                      struct fg_mutation *out);
void fg_mutation_cleanup(struct fg_mutation *m);

#endif
