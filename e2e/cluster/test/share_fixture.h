/*
 * share_fixture — what the end-to-end tests of GPU sharing on the simulated cluster share: the
 * cluster started from a testdata file with the independent checker (e2e/checker) watching it, and
 * stopped with the checker's verdict; and what they read through the API: an app's live pods and how
 * many run Ready, the capacity pods, the nodes, the node agents, a bounded wait for a condition, and
 * a failure that shows the cluster.
 */
#ifndef FG_E2E_SHARE_FIXTURE_H
#define FG_E2E_SHARE_FIXTURE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2e/checker/checker.h"
#include "e2e/tests/simcluster.h"
#include "operator/kube/resource.h"

#define SHARE_SYSTEM_NS "fracgpu-system"
#define SHARE_MAX_PODS 64

/* A test's cluster and its checker. */
struct share_env {
    struct fg_simcluster sim;
    struct fg_checker *checker;
    uint64_t start_ns;
    const char *name;           /* the test's, for its last line */
    unsigned grace_ms;          /* the checker's grace for a tenant without its capacity pod; 0: 10 s */
};

/* Starts the cluster of e2e/cluster/testdata/<config> and the checker (grace e->grace_ms, else
 * 10 s); 0, or -1 with the reason on stderr (a cmocka group setup). */
int share_setup(struct share_env *e, const char *config, const char *name);
/* Stops both: -1 when the checker saw a violation (its messages on stderr) or a pod's log holds a
 * sanitizer report or secret material (fg_simcluster_log_problems); the cluster is kept then. */
int share_teardown(struct share_env *e);

/* Runs kubectl on env's cluster and fails the test, showing its output, unless it exits 0. */
#define SHARE_OK(env, out, stdin_text, ...)                                                          \
    do {                                                                                             \
        int rc_ = fg_kubectl_run(&(env)->sim.k, out, stdin_text, __VA_ARGS__, NULL);                 \
        if (rc_ != 0)                                                                                \
            fail_msg("kubectl %s: exit %d\n%s", #__VA_ARGS__, rc_, fg_buf_str(out));                \
    } while (0)

/* Installs fracgpu as a user does: `kubectl apply -k manifests/`, then each of operator_args
 * (NULL-terminated) added to the operator's command line, then waits for `agents` node agents to run
 * Ready and creates namespace ns. Fails the test otherwise. */
void share_install(struct share_env *e, const char *const *operator_args, size_t agents, const char *ns);

/* The list of res in ns (NULL: all) with the label selector (NULL: every object); NULL on error. */
json_object *share_list(struct fg_simcluster *c, const struct fg_kube_resource *res, const char *ns, const char *selector);
bool share_ready(json_object *pod);
/* Not being deleted, not Failed, not Succeeded. */
bool share_live(json_object *pod);
const char *share_ann(json_object *pod, const char *key);
/* Field (status, reason, ...) of the pod's condition of this type, or NULL. */
const char *share_condition(json_object *pod, const char *type, const char *field);
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
/* For share_eventually: app in ns has n live pods, all Running and Ready. */
struct share_want_running {
    struct fg_simcluster *c;
    const char *ns, *app;
    size_t n;
};
bool share_all_running(void *want_running);

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
