/*
 * share_fixture — what the end-to-end tests of GPU sharing on the simulated cluster ask of it, read
 * through the API: an app's live pods and how many run Ready, the capacity pods, the nodes, a bounded
 * wait for a condition, and a failure that shows the cluster.
 *
 * Each test keeps one struct fg_simcluster; these read it and never change it.
 */
#ifndef FG_E2E_SHARE_FIXTURE_H
#define FG_E2E_SHARE_FIXTURE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "e2e/tests/simcluster.h"
#include "operator/kube/resource.h"

#define SHARE_SYSTEM_NS "fracgpu-system"
#define SHARE_MAX_PODS 64

/* The list of res in ns (NULL: all) with the label selector (NULL: every object); NULL on error. */
json_object *share_list(struct fg_simcluster *c, const struct fg_kube_resource *res, const char *ns, const char *selector);
bool share_ready(json_object *pod);
/* Not being deleted, not Failed, not Succeeded. */
bool share_live(json_object *pod);
const char *share_ann(json_object *pod, const char *key);
/* Whether the pod's PodScheduled condition has this reason. */
bool share_sched_reason(json_object *pod, const char *reason);

/* The live pods of app (label app=<app>) in ns, and how many of them run Ready. */
struct share_app {
    json_object *l;
    json_object *pods[SHARE_MAX_PODS];
    size_t n, running;
};
void share_app(struct fg_simcluster *c, const char *ns, const char *app, struct share_app *v);
void share_app_cleanup(struct share_app *v);
/* Whether app in ns has exactly n live pods, all Running and Ready. */
bool share_app_running(struct fg_simcluster *c, const char *ns, const char *app, size_t n);
/* The distinct values of annotation key among v's pods (at most 16), into names; returns how many. */
size_t share_distinct(const struct share_app *v, const char *key, const char *names[16]);

/* Live capacity pods; with node non-NULL, those bound to it. */
size_t share_capacity_pods(struct fg_simcluster *c, const char *node);
size_t share_nodes(struct fg_simcluster *c);

/* Polls cond every 200 ms until it holds (true) or timeout_s pass (false). */
bool share_eventually(bool (*cond)(void *), void *ud, unsigned timeout_s);
/* Fails the running cmocka test with what, followed by `kubectl get pods,nodes -A -o wide`. */
void share_show_and_fail(struct fg_simcluster *c, const char *what);

#endif
