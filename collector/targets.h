/*
 * targets — which node agents the collector scrapes, found in the shared pod informer's cache.
 *
 * The node agents are the pods whose labels match the collector's selector (by default the
 * DaemonSet's own, app.kubernetes.io/name=fracgpu,app.kubernetes.io/component=node-agent). An index
 * on the shared pod informer (FG_COLLECTOR_AGENT_INDEX) keeps them apart, so a round reads those few
 * pods instead of every pod in the cluster, and no second watch of pods is opened. A matching pod is
 * a target while it is Running, bound to a node, has a pod IP and is not being deleted; its URL is
 * http://<podIP>:<port>/metrics, the port being its container port named "metrics" when it has one,
 * else the configured default. An agent that restarts with another IP is simply another target at
 * the next round.
 */
#ifndef FG_COLLECTOR_TARGETS_H
#define FG_COLLECTOR_TARGETS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "operator/cache/store.h"

#define FG_COLLECTOR_AGENT_INDEX "fracgpu-collector-agents"

struct fg_target {
    char key[320];       /* the agent pod's "namespace/name" */
    char node[256];
    char url[128];
};

/* An fg_index_fn: "agent" for a pod whose labels match ud (a struct fg_selector *), nothing otherwise. */
size_t fg_collector_agent_index(void *ud, json_object *pod, const char **values, size_t max);

/* Whether pod is a target now, *out filled when it is. */
bool fg_target_of_pod(json_object *pod, unsigned default_port, struct fg_target *out);

/* The targets among the agent pods of store (indexed by FG_COLLECTOR_AGENT_INDEX): *out (the caller
 * frees) gets them, in key order; returns how many. */
size_t fg_targets_list(struct fg_store *pods, unsigned default_port, struct fg_target **out);

#endif
