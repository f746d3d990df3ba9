/*
 * kubectl_env — an in-process test API server and a kubectl runner for it; see kubectl_env.h.
 */
#include "base/fs.h"
#include "e2e/tests/kubectl_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum fg_err fg_kubectl_env_start(struct fg_kubectl_env *env, const char *prefix, char *errmsg)
{
    memset(env, 0, sizeof(*env));
    snprintf(env->dir, sizeof env->dir, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(env->dir)) {
        snprintf(errmsg, FG_ERRMSG_MAX, "mkdtemp %s: %s", env->dir, strerror(errno));
        return FG_E_IO;
    }
    snprintf(env->kubeconfig, sizeof env->kubeconfig, "%s/kubeconfig", env->dir);
    fg_kubectl_init(&env->k, env->dir, env->kubeconfig);
    struct fg_apiserver_opts opts = { 0 };
    enum fg_err err = fg_apiserver_new(&opts, &env->server, errmsg);
    if (!err)
        err = fg_apiserver_start(env->server, errmsg);
    if (!err)
        err = fg_apiserver_write_kubeconfig(env->server, env->kubeconfig, errmsg);
    if (err)
        fg_kubectl_env_stop(env);
    return err;
}

int fg_kubectl_env_stop(struct fg_kubectl_env *env)
{
    if (env->server)
        fg_apiserver_free(env->server);
    env->server = NULL;
    return fg_remove_tree(env->dir);
}
