/*
 * event — Kubernetes Events (core/v1), the record `kubectl describe` and `kubectl get events` show
 * of what a controller did and why.
 *
 * An event names the object it is about (involvedObject: apiVersion, kind, namespace, name, uid,
 * resourceVersion, taken from the object itself), a type (Normal or Warning), a CamelCase reason
 * and a message, and who reported it (source.component and host, reportingComponent and
 * reportingInstance). It lives in the object's namespace, or in `default` for cluster-scoped
 * objects such as nodes, named `<object>.<unix nanoseconds in hex>` as client-go's recorder names
 * them. Events are best effort: a failure to write one is logged by the caller at most, never a
 * reason to fail the work it describes. No aggregation of repeats is done.
 */
#ifndef FG_KUBE_EVENT_H
#define FG_KUBE_EVENT_H

#include <json-c/json.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/kube/client.h"

struct fg_kube_event {
    const char *type;        /* "Normal" or "Warning" */
    const char *reason;      /* "Scheduled", "FailedScheduling", ... */
    const char *message;
    const char *component;   /* "default-scheduler", "fracgpu-operator" */
    const char *host;        /* the reporting node or replica; NULL: none */
};

/* The Event object about `involved` at wall_ms (a new tree, owned by the caller). */
json_object *fg_kube_event_build(json_object *involved, const struct fg_kube_event *ev, int64_t wall_ms);
/* Builds the event for now and creates it. */
enum fg_err fg_kube_event_emit(struct fg_kube_client *c, json_object *involved, const struct fg_kube_event *ev) FG_MUST_USE;

#endif
