/*
 * kubectl_env — what an e2e test that drives the real kubectl against an in-process test API server
 * sets up: a scratch directory under /tmp, the server (port 0) with its kubeconfig in that
 * directory, and a kubectl runner (kubectl.h) pointed at it. The env owns the server and the
 * directory; fg_kubectl_env_stop frees the one and removes the other.
 */
#ifndef FG_E2E_KUBECTL_ENV_H
#define FG_E2E_KUBECTL_ENV_H

#include "base/err.h"
#include "e2e/apiserver/apiserver.h"
#include "e2e/tests/kubectl.h"

struct fg_kubectl_env {
    struct fg_apiserver *server;
    char dir[64];
    char kubeconfig[128];
    struct fg_kubectl k;
};

/* Creates /tmp/<prefix>-XXXXXX and starts the server there. FG_OK, or an error with the reason in
 * errmsg (and nothing left running). */
enum fg_err fg_kubectl_env_start(struct fg_kubectl_env *env, const char *prefix, char *errmsg) FG_MUST_USE;
/* Frees the server and removes the directory. 0, or -1 when the directory could not be removed (a
 * cmocka teardown's result). */
int fg_kubectl_env_stop(struct fg_kubectl_env *env);

#endif
