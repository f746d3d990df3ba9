/*
 * defaults — what kube-apiserver's SetDefaults_* functions fill in on every create and update.
 *
 * kube-apiserver decodes every built-in object it is sent into its Go type and runs the type's
 * defaulting functions on it, so what it stores and answers holds fields nobody sent: a Pod's
 * schedulerName, restartPolicy, dnsPolicy, its containers' imagePullPolicy and probe timings, a
 * Deployment's replicas and rolling-update strategy, a Service's type and target ports. One function
 * per kind does the same here (defaults.c; the pod spec, shared by pods and every pod template, in
 * defaults_pod.c), only where a field is absent, null or, for strings, empty, as Go's zero values
 * are. Edits go through cow.h, so a member shared with the request body or the stored object is
 * copied before it changes, and an object that already holds every default is not copied at all.
 * Custom resources are defaulted from their schemas instead (schema.c).
 */
#ifndef FG_E2E_APISERVER_DEFAULTS_H
#define FG_E2E_APISERVER_DEFAULTS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "e2e/apiserver/cow.h"
#include "e2e/apiserver/registry.h"

/* Fills in the defaults of obj, an object of type whose root the caller owns (shared members are
 * copied before they change). Types without defaults are left alone. */
void fg__defaults_apply(const struct fg__type *type, json_object *obj);

/* defaults_pod.c: SetDefaults_PodSpec with its containers, ports, probes and handlers, on the spec
 * node (a Pod's spec or a template's); `pod` adds what only a Pod gets (SetDefaults_Pod: requests
 * from limits, enableServiceLinks, host ports under hostNetwork; the ServiceAccount admission
 * plugin's serviceAccountName "default"). */
void fg__defaults_pod_spec(struct fg__cow *c, struct fg__cow_node *spec, bool pod);

#endif
