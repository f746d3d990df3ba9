/*
 * conditions — one status condition, as the Kubernetes API conventions have it.
 *
 * A condition keeps its lastTransitionTime while its status stays the same, so recomputing an
 * unchanged status yields an equal object and a reconciler writes nothing.
 */
#ifndef FG_RECONCILERS_CONDITIONS_H
#define FG_RECONCILERS_CONDITIONS_H

#include <json-c/json.h>
#include <stdint.h>

/* A new condition {type, status, reason, message, observedGeneration, lastTransitionTime} for obj
 * (borrowed: its current status.conditions give the transition time when the status is unchanged;
 * otherwise `now`, RFC 3339). */
json_object *fg_condition_build(json_object *obj, int64_t generation, const char *type, const char *status,
                                const char *reason, const char *message, const char *now);

#endif
