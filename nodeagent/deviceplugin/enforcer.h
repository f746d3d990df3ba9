/*
 * enforcer — what the device plugin tells the cluster, off the loop thread: a Warning Event on a pod
 * refused for want of a valid grant, and the removal of a pod found holding devices it was not
 * granted.
 *
 * The plugin decides on the loop thread (Allocate, the audit) and must never wait on the API there,
 * so each decision becomes a key of a controller with one worker, whose reconcile does the blocking
 * writes and retries them with the controller's backoff. Keys are "<action>/<namespace>/<name>/<uid>",
 * so a repeated decision about one pod is one write. Removal is a DELETE with grace period 0 and a UID
 * precondition — an impostor is not a workload to drain gently, and the precondition spares a pod of the
 * same name created since (an Eviction could be held back by a PodDisruptionBudget the impostor's
 * owner wrote); its Event (reason GrantViolation) says which device and whose grant.
 * Metrics: fracgpu_device_plugin_evictions_total.
 */
#ifndef FG_DEVICEPLUGIN_ENFORCER_H
#define FG_DEVICEPLUGIN_ENFORCER_H

#include <json-c/json.h>

#include "base/err.h"
#include "operator/manager/manager.h"

struct fg_dp_enforcer;

/* Declares the controller on m; host names the node in Events. The struct belongs to m. */
enum fg_err fg_dp_enforcer_setup(struct fg_manager *m, const char *host, struct fg_dp_enforcer **out,
                                 char *errmsg) FG_MUST_USE;
/* A Warning Event "GrantRefused" on pod (borrowed) saying why. Any thread. */
void fg_dp_enforcer_refused(struct fg_dp_enforcer *e, json_object *pod, const char *why);
/* Deletes pod (borrowed; by UID) at once, with a Warning Event "GrantViolation" saying why. Any thread. */
void fg_dp_enforcer_evict(struct fg_dp_enforcer *e, json_object *pod, const char *why);

#endif
