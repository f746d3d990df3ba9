/*
 * simcluster — a whole simulated cluster for an end-to-end test: `fracgpu-sim-cluster` started as
 * a process (its test API server, controllers, default scheduler, kubelets and autoscaler), waited
 * for until it says it is ready, and a kube client and a kubectl runner pointed at it.
 *
 * Everything lives in a fresh directory under /tmp (the kubeconfig, the cluster's working
 * directory with its logs and node directories, kubectl's cache); fg_simcluster_stop sends SIGTERM,
 * waits (SIGKILL after 30 s) and removes the directory, unless the caller asks to keep it or
 * $FG_KEEP_SIM is set; with $FG_AUDIT_DIR set it first keeps there, as <program>.audit, the distinct
 * requests fracgpu's own identities made (the API server's audit log), for test_rbac. Every wait is
 * bounded.
 */
#ifndef FG_E2E_SIMCLUSTER_H
#define FG_E2E_SIMCLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"
#include "e2e/tests/kubectl.h"
#include "operator/kube/client.h"

struct fg_simcluster {
    char dir[96];
    char kubeconfig[160];
    char work[160];              /* the cluster's working directory (logs/, nodes/) */
    pid_t pid;
    struct fg_kube_client *client;
    struct fg_kubectl k;
};

/* Starts the cluster with the YAML configuration at config (NULL: the default one) and waits up to
 * ready_s seconds for its ready line. extra: more command-line arguments (NULL-terminated, may be
 * NULL). errmsg says what failed; nothing is left running then. */
enum fg_err fg_simcluster_start(struct fg_simcluster *c, const char *config, const char *const *extra, unsigned ready_s,
                                char *errmsg) FG_MUST_USE;
/* Stops it and removes its directory (kept when keep is true or $FG_KEEP_SIM is set). */
void fg_simcluster_stop(struct fg_simcluster *c, bool keep);

/* Adds arg to the command line of the installed operator (`kubectl patch` of Deployment
 * fracgpu-system/fracgpu-operator) and waits for its rollout, as a user changes a flag. Returns 0, or
 * kubectl's exit status with its output in out. */
int fg_simcluster_operator_arg(struct fg_simcluster *c, const char *arg, struct fg_buf *out);

/* The pid of the running process of one component ("kubelets", ...), from the supervisor's log
 * (after a restart, the newest); 0 when it never started. */
pid_t fg_simcluster_component_pid(struct fg_simcluster *c, const char *component);

/* What the cluster's logs (the supervisor's, its components', every pod process's) and the /metrics
 * of fracgpu's running operator replicas and node agents hold that they must not: sanitizer reports
 * (logs), and secret material — any value of any Secret of the cluster (the grant key, the webhook's
 * private key, ...) as stored, decoded, a line of it, or as hex. Each is named on stderr (a secret by
 * its length only); returns how many. Call it while the cluster runs; 0 for a cluster that never
 * started. */
size_t fg_simcluster_log_problems(struct fg_simcluster *c);

/* The cluster's log of one component ("controllers", "kubelets", ...) into out (replacing it). */
enum fg_err fg_simcluster_log(struct fg_simcluster *c, const char *component, struct fg_buf *out) FG_MUST_USE;

#endif
