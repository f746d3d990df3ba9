/*
 * policy — the placement policies (Score plugins, core/framework.h) and the registry that builds one
 * by name.
 *
 * "Placement policy" here, never plain "policy": that word is the GPUPolicy resource elsewhere in the
 * product. Available by name (fg_sched_policy_new): the six of the FGD paper — random, dotprod,
 * clustering, packing, bestfit, fgd — and fracgpu's own, `fracgpu` (online: learns its reference mix
 * from the pods seen so far; the operator's default) and `fracgpu-offline` (given the whole trace's
 * mix). `fgd` and `fracgpu-offline` need a reference mix (mix.h); the others ignore it.
 */
#ifndef FG_SCHEDULER_POLICIES_POLICY_H
#define FG_SCHEDULER_POLICIES_POLICY_H

#include "scheduler/core/framework.h"

struct fg_sched_mix;

/* Creates placement policy `name`. It is not tied to a cluster's node count: it follows the nodes
 * of the cluster it is used with as they come, change and go (framework.h), one cluster for its
 * whole life. mix (borrowed, may be NULL unless the placement policy needs one) is the whole-trace
 * reference mix; seed drives `random`. FG_E_INVAL (errmsg) for an unknown name or a missing mix. */
enum fg_err fg_sched_policy_new(const char *name, const struct fg_sched_mix *mix, uint64_t seed,
                                struct fg_sched_policy **out, char *errmsg) FG_MUST_USE;
void fg_sched_policy_free(struct fg_sched_policy *pol);

/* Names accepted by fg_sched_policy_new, NULL-terminated. */
extern const char *const fg_sched_policy_names[];

#endif
