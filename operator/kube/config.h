/*
 * config — where the API server is and how to prove who we are to it.
 *
 * Two sources, as client-go has them: a kubeconfig file (parsed with libyaml; the current context or
 * a named one; server, certificate-authority[-data], client-certificate[-data], client-key[-data],
 * token, tokenFile, exec, insecure-skip-tls-verify, namespace) and the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT, the mounted token, CA and namespace). File references are resolved
 * relative to the kubeconfig's directory and read at load time, so the result holds PEM bytes, never
 * paths — except `token_file`, which the client re-reads whenever the file changes (service-account
 * tokens rotate under a running pod), and an exec plugin's command. Every failure names the file and
 * the field that is wrong.
 *
 * Exec credentials (`users[].user.exec`, what EKS, GKE and AKS write) work as in client-go: the
 * client runs `command` with `args`, the process environment plus `env`, stdin /dev/null, and
 * KUBERNETES_EXEC_INFO holding {"apiVersion":…, "kind":"ExecCredential", "spec":{"interactive":false}}
 * — with spec.cluster (server, tls-server-name, insecure-skip-tls-verify, certificate-authority-data)
 * when `provideClusterInfo` is true. A command with a slash is a path, relative ones taken against the
 * kubeconfig's directory; one without is looked up on PATH. `apiVersion` is required and must be
 * client.authentication.k8s.io/v1 or v1beta1. fracgpu never gives a plugin a terminal: interactiveMode
 * Never and IfAvailable (also the default when it is left out) run it without one, Always is refused
 * at load time. The plugin's reply must carry the same apiVersion and a status with a token and/or
 * clientCertificateData + clientKeyData (PEM); an expirationTimestamp (RFC 3339) bounds how long the
 * client caches it (client.h says when the plugin runs again). A static token or tokenFile in the
 * same user wins over exec, as in client-go. The legacy `auth-provider` stanza (gcp, azure, oidc) is
 * refused with the fix: install the cloud's exec plugin and regenerate the kubeconfig.
 */
#ifndef FG_KUBE_CONFIG_H
#define FG_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* One variable an exec plugin gets on top of the process environment. */
struct fg_kube_exec_env {
    char *name;
    char *value;
};

/* users[].user.exec: a credential plugin speaking client.authentication.k8s.io ExecCredential. */
struct fg_kube_exec {
    char *command;           /* a path when it has a slash (made absolute at load), else a name on PATH */
    char **args;             /* nargs arguments after the command */
    size_t nargs;
    struct fg_kube_exec_env *env;
    size_t nenv;
    char *api_version;       /* "client.authentication.k8s.io/v1" or ".../v1beta1" */
    char *install_hint;      /* shown when the command cannot be found, or NULL */
    bool provide_cluster_info;
};

struct fg_kube_config {
    char *server;            /* "https://10.0.0.1:443", no trailing slash */
    char *ca_pem;            /* CA bundle (PEM); NULL = the system's */
    char *cert_pem;          /* client certificate (PEM), or NULL */
    char *key_pem;           /* client key (PEM), or NULL */
    char *token;             /* static bearer token, or NULL */
    char *token_file;        /* bearer token re-read on change, or NULL */
    struct fg_kube_exec *exec;   /* credential plugin, or NULL */
    char *tls_server_name;   /* SNI / verification name override, or NULL */
    bool insecure_skip_tls_verify;
    char *namespace;         /* context namespace; "default" when unset */
};

/* Loads `path`; `context` NULL means the file's current-context. */
enum fg_err fg_kube_config_load_file(const char *path, const char *context, struct fg_kube_config *cfg,
                                     char *errmsg) FG_MUST_USE;

/* In-cluster config; `sa_dir` NULL means /var/run/secrets/kubernetes.io/serviceaccount. */
enum fg_err fg_kube_config_load_in_cluster(const char *sa_dir, struct fg_kube_config *cfg,
                                           char *errmsg) FG_MUST_USE;

/* What every fracgpu command does: `path` if given, else $KUBECONFIG, else in-cluster when
 * KUBERNETES_SERVICE_HOST is set (and no context is named: the service account has none), else
 * ~/.kube/config; of a kubeconfig, `context`, NULL meaning its current-context. */
enum fg_err fg_kube_config_load_default(const char *path, const char *context, struct fg_kube_config *cfg,
                                        char *errmsg) FG_MUST_USE;

void fg_kube_config_cleanup(struct fg_kube_config *cfg);

/* A deep copy of x (NULL for NULL), and its release. */
struct fg_kube_exec *fg_kube_exec_dup(const struct fg_kube_exec *x);
void fg_kube_exec_free(struct fg_kube_exec *x);

#endif
