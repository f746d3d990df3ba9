/*
 * policy_status — what a GPUPolicy's status should say, computed without I/O.
 *
 * The status holds the generation it describes, how many GPUWorkloads use the policy, and
 * conditions: Ready=True (reason Valid) for a policy that decodes and passes the cross-field rules;
 * otherwise Ready=False plus Invalid=True, both with the same reason ("ComputeMinAboveMax",
 * "InvalidField", ...) and a message that says what to change. A condition keeps its
 * lastTransitionTime while its status stays the same, so recomputing an unchanged status yields an
 * equal object and the reconciler writes nothing.
 */
#ifndef FG_RECONCILERS_POLICY_STATUS_H
#define FG_RECONCILERS_POLICY_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* A new status object for `policy` (a whole GPUPolicy, borrowed) used by `workloads` workloads;
 * `now` is the RFC 3339 time stamped on conditions that change. *valid tells whether the policy
 * passed every rule. */
json_object *fg_policy_status_build(json_object *policy, int64_t workloads, const char *now, bool *valid);

/* True when policy's current .status differs from `desired`. */
bool fg_policy_status_changed(json_object *policy, json_object *desired);

#endif
