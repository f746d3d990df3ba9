/*
 * admit — the webhook's answer to one AdmissionReview, from the operator's caches.
 *
 * For the CREATE of a pod that asks for nvidia.com/gpu (or carries an earlier pass's
 * fracgpu.io/original-request, on reinvocation): its workload is found up the owner chain; if the
 * workload is automated, the policy in force is resolved — the workload's fracgpu.io/policy
 * annotation, else its GPUWorkload's (spec, then the resolved status.policy, then its detected
 * class's), else the built-in for the class detected from the workload — and read from the GPUPolicy
 * cache (a built-in not yet cached is taken from the built-in table); the allocation follows from
 * the workload's own fractions, the GPUWorkload's status.recommendation and the update mode
 * (GPUWorkload spec.updateMode over the policy's); mutation.h plans the patch.
 *
 * Every review is allowed — fracgpu never blocks a pod, and nothing here can fail: a workload or policy
 * the caches lack leaves the pod unchanged, with the reason. What happened is the outcome, for the
 * metrics and the log: not a pod's CREATE, no GPU, not automated, left whole (with the reason), or
 * mutated.
 */
#ifndef FG_WEBHOOK_ADMIT_H
#define FG_WEBHOOK_ADMIT_H

#include <json-c/json.h>

#include "base/err.h"
#include "operator/webhook/review.h"
#include "reconcilers/eligibility.h"
#include "reconcilers/workload.h"

/* Where the webhook reads the cluster. Every object returned is borrowed until `done`. */
struct fg_admit_sources {
    const struct fg_workload_kinds *kinds;
    /* An object of namespace ns: group "" for core; NULL when not cached. */
    json_object *(*lookup)(void *ctx, const char *ns, const char *group, const char *kind, const char *name);
    json_object *(*name_space)(void *ctx, const char *ns);
    json_object *(*gpuworkload)(void *ctx, const char *ns, const char *name);
    json_object *(*policy)(void *ctx, const char *name);
    /* StorageClass answers for namespace ns (NULL: nothing waits). */
    const struct fg_storage_view *(*storage)(void *ctx, const char *ns);
    /* Called once the answer is built: what the lookups returned may go (NULL: nothing to do). */
    void (*done)(void *ctx);
    void *ctx;
};

enum fg_admit_outcome {
    FG_ADMIT_NOT_POD_CREATE,
    FG_ADMIT_NO_GPU,
    FG_ADMIT_NOT_AUTOMATED,
    FG_ADMIT_WHOLE,
    FG_ADMIT_MUTATED,
    FG_ADMIT_OUTCOMES
};

/* The outcome's name, a metric label value: "not-pod-create", "no-gpu", ... */
const char *fg_admit_outcome_name(enum fg_admit_outcome o);

struct fg_admit_result {
    enum fg_admit_outcome outcome;
    char *response;                 /* the AdmissionReview to send back, owned */
    const char *reason;             /* WHOLE: eligibility's reason, or "policyNotFound" (static) */
    char detail[FG_ERRMSG_MAX];     /* WHOLE: what happened, for the log */
};

/* Answers review r (its request parsed and accepted). */
void fg_admit(const struct fg_review *r, const struct fg_admit_sources *s, struct fg_admit_result *out);
void fg_admit_result_cleanup(struct fg_admit_result *res);

#endif
