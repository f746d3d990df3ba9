/*
 * exec_proto — the ExecCredential protocol of client.authentication.k8s.io, both directions.
 *
 * In: the KUBERNETES_EXEC_INFO value, an ExecCredential whose spec says the plugin has no terminal
 * and, when the kubeconfig asks for it, describes the cluster (the field names are the ones of the
 * API's Cluster type: server, tls-server-name, insecure-skip-tls-verify, certificate-authority-data).
 * Out: the plugin's stdout, checked as client-go checks it — kind ExecCredential in the requested
 * apiVersion, a status with a token or a certificate and key — with the expiry read from RFC 3339
 * (what metav1.Time accepts: a 'T', optional fractional seconds, Z or a numeric offset).
 */
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/timefmt.h"
#include "base/mem.h"
#include "operator/kube/exec_internal.h"

static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void fg__kube_cred_cleanup(struct fg__kube_cred *cred)
{
    free_secret(cred->token);
    free_secret(cred->cert_pem);
    free_secret(cred->key_pem);
    memset(cred, 0, sizeof *cred);
}

static char *dup_opt(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

void fg__kube_cred_copy(struct fg__kube_cred *dst, const struct fg__kube_cred *src)
{
    *dst = (struct fg__kube_cred){ .token = dup_opt(src->token), .cert_pem = dup_opt(src->cert_pem),
                                   .key_pem = dup_opt(src->key_pem), .expiry_ms = src->expiry_ms };
}

char *fg__kube_exec_info(const struct fg_kube_config *cfg)
{
    json_object *info = json_object_new_object(), *spec = json_object_new_object();
    json_object_object_add(info, "apiVersion", json_object_new_string(cfg->exec->api_version));
    json_object_object_add(info, "kind", json_object_new_string("ExecCredential"));
    json_object_object_add(info, "spec", spec);
    json_object_object_add(spec, "interactive", json_object_new_boolean(0));
    if (cfg->exec->provide_cluster_info) {
        json_object *cluster = json_object_new_object();
        json_object_object_add(spec, "cluster", cluster);
        json_object_object_add(cluster, "server", json_object_new_string(cfg->server));
        if (cfg->tls_server_name)
            json_object_object_add(cluster, "tls-server-name", json_object_new_string(cfg->tls_server_name));
        if (cfg->insecure_skip_tls_verify)
            json_object_object_add(cluster, "insecure-skip-tls-verify", json_object_new_boolean(1));
        if (cfg->ca_pem) {
            char *b64 = fg_base64_encode(cfg->ca_pem, strlen(cfg->ca_pem));
            json_object_object_add(cluster, "certificate-authority-data", json_object_new_string(b64));
            free(b64);
        }
    }
    char *text = fg_strdup(fg_json_text(info, NULL));
    json_object_put(info);
    return text;
}

/* status[key] as a string into *out: absent, null or "" leave it NULL. */
static enum fg_err status_str(json_object *status, const char *key, char **out, char *errmsg)
{
    json_object *v = fg_json_get(status, key, NULL);
    if (!v)
        return FG_OK;
    if (!json_object_is_type(v, json_type_string))
        return fg_errmsg(errmsg, FG_E_PARSE, "output: status.%s is not a string", key);
    if (json_object_get_string_len(v) > 0)
        *out = fg_strdup(json_object_get_string(v));
    return FG_OK;
}

static enum fg_err parse_status(json_object *status, struct fg__kube_cred *cred, char *errmsg)
{
    enum fg_err err;
    if ((err = status_str(status, "token", &cred->token, errmsg)) ||
        (err = status_str(status, "clientCertificateData", &cred->cert_pem, errmsg)) ||
        (err = status_str(status, "clientKeyData", &cred->key_pem, errmsg)))
        return err;
    if (!cred->cert_pem != !cred->key_pem)
        return fg_errmsg(errmsg, FG_E_PARSE, "output: status has %s but no %s",
                         cred->cert_pem ? "clientCertificateData" : "clientKeyData",
                         cred->cert_pem ? "clientKeyData" : "clientCertificateData");
    if (!cred->token && !cred->cert_pem)
        return fg_errmsg(errmsg, FG_E_PARSE, "output: status has neither a token nor clientCertificateData and "
                         "clientKeyData");
    json_object *exp = fg_json_get(status, "expirationTimestamp", NULL);
    if (!exp)
        return FG_OK;
    const char *text = json_object_is_type(exp, json_type_string) ? json_object_get_string(exp) : NULL;
    if (!text || !fg_time_parse(text, &cred->expiry_ms))
        return fg_errmsg(errmsg, FG_E_PARSE, "output: status.expirationTimestamp \"%.40s\" is not an RFC 3339 time",
                         text ? text : "(not a string)");
    return FG_OK;
}

enum fg_err fg__kube_exec_parse(const char *api_version, const char *out, size_t len, struct fg__kube_cred *cred,
                                char *errmsg)
{
    memset(cred, 0, sizeof *cred);
    json_object *o = NULL;
    char why[FG_ERRMSG_MAX];
    if (fg_json_parse(out, len, FG__KUBE_EXEC_OUTPUT_MAX, &o, why))
        return fg_errmsg(errmsg, FG_E_PARSE, "output is not an ExecCredential: %s", why);
    enum fg_err err = FG_OK;
    const char *kind = fg_json_get_str(o, "kind", NULL), *api = fg_json_get_str(o, "apiVersion", NULL);
    json_object *status = fg_json_get(o, "status", NULL);
    if (!json_object_is_type(o, json_type_object) || !fg_str_eq(kind, "ExecCredential"))
        err = fg_errmsg(errmsg, FG_E_PARSE, "output is not an ExecCredential (kind \"%.40s\")", kind ? kind : "");
    else if (!fg_str_eq(api, api_version))
        err = fg_errmsg(errmsg, FG_E_PARSE, "output has apiVersion \"%.80s\", but the kubeconfig asks for %s",
                        api ? api : "", api_version);
    else if (!json_object_is_type(status, json_type_object))
        err = fg_errmsg(errmsg, FG_E_PARSE, "output has no status");
    else
        err = parse_status(status, cred, errmsg);
    json_object_put(o);
    if (err)
        fg__kube_cred_cleanup(cred);
    return err;
}
