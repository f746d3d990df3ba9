/*
 * config_incluster — the service-account configuration a pod gets from Kubernetes.
 *
 * The API server address comes from KUBERNETES_SERVICE_HOST/PORT (an IPv6 host is bracketed); the
 * CA and namespace are read from the mounted service-account directory now, while the token file
 * is kept as a path because the kubelet rotates it under a running pod.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "operator/kube/config.h"
#include "operator/kube/internal.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static char *trimmed(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && strchr(" \t\r\n", s[n - 1]))
        s[--n] = '\0';
    return s;
}

enum fg_err fg_kube_config_load_in_cluster(const char *sa_dir, struct fg_kube_config *cfg, char *errmsg)
{
    memset(cfg, 0, sizeof *cfg);
    if (!sa_dir)
        sa_dir = SA_DIR;
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !host[0] || !port || !port[0])
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL,
                         "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
    if (strspn(port, "0123456789") != strlen(port))
        return fg_errmsg(errmsg, FG_E_PARSE, "in-cluster config: KUBERNETES_SERVICE_PORT \"%.20s\" is not a port",
                         port);
    enum fg_err err;
    char *token_path = fg_asprintf("%s/token", sa_dir);
    char *ca_path = fg_asprintf("%s/ca.crt", sa_dir);
    char *ns_path = fg_asprintf("%s/namespace", sa_dir);
    char *ns = NULL;
    if (access(token_path, R_OK) != 0) {
        err = fg_errmsg(errmsg, FG_E_IO, "in-cluster config: service-account token %s: %s", token_path,
                        strerror(errno));
        goto out_free_paths;
    }
    if ((err = fg__kube_read_small_file(ca_path, "in-cluster config: service-account CA", &cfg->ca_pem, errmsg)))
        goto out_free_paths;
    cfg->server = strchr(host, ':') ? fg_asprintf("https://[%s]:%s", host, port)
                                    : fg_asprintf("https://%s:%s", host, port);
    cfg->token_file = token_path;
    token_path = NULL;
    if (fg__kube_read_small_file(ns_path, "namespace", &ns, NULL) == FG_OK && trimmed(ns)[0]) {
        cfg->namespace = ns;
    } else {
        free(ns);
        cfg->namespace = fg_strdup("default");
    }
out_free_paths:
    free(token_path);
    free(ca_path);
    free(ns_path);
    if (err)
        fg_kube_config_cleanup(cfg);
    return err;
}
