/*
 * operator_proc — the real `fracgpu operator` binary run as a process against a harness's test API
 * server, with its admission webhook in the path of every pod create.
 *
 * What `kubectl apply -k manifests/` and the cluster would provide is installed first: fracgpu's
 * CRDs, namespace fracgpu-system, every object of manifests/operator/webhook.yaml (the webhook's
 * Secret, Service, MutatingWebhookConfiguration and disruption budget, as shipped) and the
 * EndpointSlice an endpoints controller would write for that Service: one ready endpoint,
 * 127.0.0.1 on the port the operator's webhook listens on here. The API server then calls the
 * webhook as kube-apiserver does, through the Service, checking the certificate against
 * fracgpu-webhook.fracgpu-system.svc.
 *
 * The operator runs from $FG_BIN_DIR/fracgpu with POD_NAMESPACE=fracgpu-system, leader election off
 * (it leads at once), its health and webhook ports picked free on 127.0.0.1, and the caller's extra
 * flags; its output goes to a log file. $FG_OPERATOR_WRAPPER, when set, holds the words it runs under
 * (valgrind and its options). Start returns once /readyz passes (the webhook serves its
 * certificate) and the webhook configuration trusts the operator's CA, so pods created from then on
 * are admitted by it. Stop sends SIGTERM, waits up to 10 s (120 s wrapped; then SIGKILL) and removes
 * the log unless asked to keep it. Every wait is bounded; a test process that dies takes the
 * operator with it.
 */
#ifndef FG_E2E_OPERATOR_PROC_H
#define FG_E2E_OPERATOR_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"
#include "e2e/tests/harness.h"

struct fg_operator_proc {
    pid_t pid;
    char log[160];              /* its stdout and stderr */
    unsigned listen_port;       /* /healthz, /readyz, /metrics */
    unsigned webhook_port;
};

/* Installs what the operator expects (above), starts it with extra flags (NULL-terminated, may be
 * NULL) and waits up to ready_s seconds for it. On failure nothing is left running and errmsg says
 * why (the log is kept then). */
enum fg_err fg_operator_proc_start(struct fg_harness *h, struct fg_operator_proc *op, const char *const *extra,
                                   unsigned ready_s, char *errmsg) FG_MUST_USE;
/* Stops it; returns its exit status (-1 when it had to be killed or died of a signal). */
int fg_operator_proc_stop(struct fg_operator_proc *op, bool keep_log);

#endif
