/*
 * workload_reconciler — opting workloads in and out, part 1; leader-only.
 *
 * Keys are "<namespace>/<name>:<kind index>" of the workloads of the kind table (workload.h). Given
 * one, the reconciler reads the caches and converges:
 *   - automated (workload.h's rule) and its pods ask for nvidia.com/gpu →
 *       its GPUWorkload exists (named by workload.h's rule, targetRef the workload, an ownerReference
 *       to it with blockOwnerDeletion false, so it goes with the workload), created with Event
 *       "Automated";
 *       every pod template carries the label fracgpu.io/automate: "true" — which rolls it, so its new
 *       pods pass the webhook — added with a JSON Patch that tests the cached resourceVersion, and
 *       Event "TemplateLabelled"; a Job's template cannot change, so a Job created without the label
 *       says so in its status (lastAction "TemplateImmutable") — its CronJob, if it has one, is labelled;
 *   - not automated, yet its templates carry the label → the label is removed (its pods roll back to
 *     whole GPUs), Event "AutomationRemoved"; the GPUWorkload stays, with its history;
 *   - automated, labelled, and some of its pods missed the webhook (workload_pods.h: created while no
 *     replica answered) → a Deployment or StatefulSet is rolled by the template annotation
 *     fracgpu.io/restarted-at (as `kubectl rollout restart` does) when the newest such pod is as new
 *     as the last roll (an older one is being replaced by it), at most every 15 s (pods created before
 *     a replica is ready miss the webhook again); Event "RolledUnmutatedPods". Jobs and custom kinds
 *     cannot be rolled: their status counts the pods;
 *   - a GPUWorkload that exists gets its status (workload_status.h) whenever it differs.
 * A cache that lags behind a write shows up as a failed test or AlreadyExists and is settled on the
 * next event.
 *
 * It watches every workload kind, Namespaces (a label there concerns each workload of the namespace),
 * GPUWorkloads (mapped to their targets), GPUPolicies (mapped, through FG_POLICY_INDEX, to the
 * targets of the GPUWorkloads that use them, so PolicyFound follows a policy created late), and pods
 * and ReplicaSets (a pod maps to its workload up its owner chain).
 */
#ifndef FG_RECONCILERS_WORKLOAD_RECONCILER_H
#define FG_RECONCILERS_WORKLOAD_RECONCILER_H

#include "base/err.h"
#include "operator/manager/manager.h"
#include "reconcilers/workload.h"

/* Registers the controller on m, with `workers` reconcile threads. `kinds` must outlive m. */
enum fg_err fg_workload_reconciler_setup(struct fg_manager *m, const struct fg_workload_kinds *kinds, unsigned workers,
                                         char *errmsg) FG_MUST_USE;

#endif
