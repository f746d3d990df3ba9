/*
 * config — where the API server is and how to prove who we are to it.
 *
 * Two sources, as client-go has them: a kubeconfig file (parsed with libyaml; the current context or
 * a named one; server, certificate-authority[-data], client-certificate[-data], client-key[-data],
 * token, tokenFile, insecure-skip-tls-verify, namespace) and the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT, the mounted token, CA and namespace). File references are resolved
 * relative to the kubeconfig's directory and read at load time, so the result holds PEM bytes, never
 * paths — except `token_file`, which the client re-reads whenever the file changes (service-account
 * tokens rotate under a running pod). Every failure names the file and the field that is wrong.
 */
#ifndef FG_KUBE_CONFIG_H
#define FG_KUBE_CONFIG_H

#include <stdbool.h>

#include "base/err.h"

struct fg_kube_config {
    char *server;            /* "https://10.0.0.1:443", no trailing slash */
    char *ca_pem;            /* CA bundle (PEM); NULL = the system's */
    char *cert_pem;          /* client certificate (PEM), or NULL */
    char *key_pem;           /* client key (PEM), or NULL */
    char *token;             /* static bearer token, or NULL */
    char *token_file;        /* bearer token re-read on change, or NULL */
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
 * KUBERNETES_SERVICE_HOST is set, else ~/.kube/config. */
enum fg_err fg_kube_config_load_default(const char *path, struct fg_kube_config *cfg,
                                        char *errmsg) FG_MUST_USE;

void fg_kube_config_cleanup(struct fg_kube_config *cfg);

#endif
