/*
 * workload_status — what a GPUWorkload's status should say, computed without I/O.
 *
 * From the workload, its kind, the policy resolved for it and what the reconciler just did:
 *   target            "Deployment/llm"
 *   detectedClass     workload.h's detection
 *   policy            the policy in force
 *   originalRequest   what the pod template asks for ("1 nvidia.com/gpu")
 *   allocation        what its next pod gets (allocation.h): compute ("300m", "1" for a whole GPU) and
 *                     memory ("20Gi", or "whole")
 *   eligibility       {eligible, reason, message} of the pod template (eligibility.h; volumes are
 *                     judged at admission, where the claims are known)
 *   conditions        Eligible, and PolicyFound (False, reason PolicyNotFound, for a policy that
 *                     exists neither as a GPUPolicy nor as a built-in); transition times kept while a
 *                     condition holds
 *   pods, unmutatedPods   its live pods, and those that missed the webhook (workload_pods.h)
 *   gpusBefore, gpusAfter, gpusSaved   GPUs as decimals ("9", "2.7", "6.3"): what its live pods would
 *                     hold as the template asks, what they hold now, and the difference
 *   lastAction, lastActionReason   the reconciler's last write and why (kept when it did nothing)
 *   usage, recommendation   the rightsizer's (rightsizer.h), kept as it wrote them
 * Recomputing an unchanged status yields an equal object, so the reconciler writes only changes.
 */
#ifndef FG_RECONCILERS_WORKLOAD_STATUS_H
#define FG_RECONCILERS_WORKLOAD_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "crds/gpupolicy.h"
#include "reconcilers/terms.h"
#include "reconcilers/workload.h"

struct fg_workload_view {
    json_object *workload;                  /* the Deployment, Job, ... (borrowed) */
    const struct fg_workload_kind *kind;
    json_object *gpuworkload;               /* the current GPUWorkload, or NULL */
    const struct fg_terms *terms;           /* its policy, update mode and recommendation (terms.h) */
    const char *last_action, *last_action_reason;   /* NULL: keep the current ones */
    size_t pods, unmutated_pods;            /* live pods, and those that missed the webhook */
    int64_t gpu_milli;                      /* what the live pods hold (workload_pods.h) */
};

/* A new status object; `now` is RFC 3339. */
json_object *fg_workload_status_build(const struct fg_workload_view *v, const char *now);

#endif
