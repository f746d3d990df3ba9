/*
 * kubectl — running the machine's real kubectl from a test the way e2e/apiserver/README.md says it
 * must run ("Running the real kubectl"): its own kubeconfig and cache directory, a request timeout,
 * and the whole run under `timeout` (30 s, or timeout_s for commands that wait: rollout status,
 * wait, drain). Shared by every e2e suite that drives kubectl against a whole cluster.
 */
#ifndef FG_E2E_KUBECTL_H
#define FG_E2E_KUBECTL_H

#include "base/buf.h"

struct fg_kubectl {
    char dir[128];          /* scratch directory for stdin and output files */
    char kubeconfig[192];
    char cache[192];
    unsigned timeout_s;     /* the longest a run may take; 30 after init */
};

/* Everything goes under dir (which must exist); kubeconfig is copied. */
void fg_kubectl_init(struct fg_kubectl *k, const char *dir, const char *kubeconfig);

/* Runs kubectl with the arguments (NULL-terminated), stdin_text (may be NULL) on its stdin, and its
 * stdout and stderr together in out. Returns the exit status: 124 on timeout, -1 when it could not
 * be run. */
int fg_kubectl_run(struct fg_kubectl *k, struct fg_buf *out, const char *stdin_text, ...)
    __attribute__((sentinel));

#endif
