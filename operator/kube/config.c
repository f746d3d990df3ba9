/*
 * config — kubeconfig loading (libyaml document API) and the default-source chain.
 *
 * The file is loaded as one YAML document; the context (current-context or the named one) selects
 * a cluster and a user by name from the `clusters`, `users` and `contexts` lists. Inline *-data
 * fields are base64 (OpenSSL's decoder); file fields are read now, relative to the kubeconfig's
 * directory, so the resulting struct holds PEM text. Only tokenFile stays a path (re-read by the
 * client as tokens rotate), and an exec plugin's command (config_exec.c reads that stanza). On any
 * failure the half-built config is cleaned up and errmsg names the file, the entry and the field.
 * The in-cluster loader lives in config_incluster.c.
 */
#include "operator/kube/config.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/mem.h"
#include "operator/kube/config_internal.h"
#include "operator/kube/internal.h"

yaml_node_t *fg__kubeconfig_get(struct fg__kubeconfig *k, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&k->doc, p->key);
        if (kn && kn->type == YAML_SCALAR_NODE && strcmp((const char *)kn->data.scalar.value, key) == 0)
            return yaml_document_get_node(&k->doc, p->value);
    }
    return NULL;
}

static bool is_null_scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0);
}

/* *out = the string at map[key] (borrowed from the document), NULL when absent or null. */
enum fg_err fg__kubeconfig_str(struct fg__kubeconfig *k, yaml_node_t *map, const char *where, const char *key,
                           const char **out)
{
    *out = NULL;
    yaml_node_t *n = fg__kubeconfig_get(k, map, key);
    if (!n)
        return FG_OK;
    if (n->type != YAML_SCALAR_NODE)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s line %zu: %s: \"%s\" must be a string",
                         k->path, (size_t)n->start_mark.line + 1, where, key);
    if (!is_null_scalar(n))
        *out = (const char *)n->data.scalar.value;
    return FG_OK;
}

enum fg_err fg__kubeconfig_bool(struct fg__kubeconfig *k, yaml_node_t *map, const char *where, const char *key,
                            bool *out)
{
    const char *v;
    enum fg_err err = fg__kubeconfig_str(k, map, where, key, &v);
    if (err || !v)
        return err;
    static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on" };
    static const char *const no[] = { "false", "False", "FALSE", "no", "No", "off" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(v, yes[i]) == 0 || strcmp(v, no[i]) == 0) {
            *out = strcmp(v, yes[i]) == 0;
            return FG_OK;
        }
    }
    return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s: \"%s\" must be true or false, not \"%.40s\"",
                     k->path, where, key, v);
}

/* Finds the entry named `name` in the list `list` and returns its `inner` mapping. */
static enum fg_err find_named(struct fg__kubeconfig *k, const char *list, const char *inner, const char *name,
                              const char *referrer, yaml_node_t **out)
{
    yaml_node_t *seq = fg__kubeconfig_get(k, yaml_document_get_root_node(&k->doc), list);
    if (seq && seq->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
            yaml_node_t *entry = yaml_document_get_node(&k->doc, *it);
            yaml_node_t *nn = fg__kubeconfig_get(k, entry, "name");
            if (!nn || nn->type != YAML_SCALAR_NODE || strcmp((const char *)nn->data.scalar.value, name) != 0)
                continue;
            *out = fg__kubeconfig_get(k, entry, inner);
            if (!*out || (*out)->type != YAML_MAPPING_NODE)
                return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s entry \"%s\" has no \"%s\" mapping",
                                 k->path, list, name, inner);
            return FG_OK;
        }
    }
    return fg_errmsg(k->errmsg, FG_E_NOT_FOUND_LOCAL, "kubeconfig %s: %s refers to %s \"%s\", which is not in \"%s\"",
                     k->path, referrer, inner, name, list);
}

/* Base64 as written in kubeconfigs (whitespace tolerated, padding required). */
static enum fg_err decode_base64(struct fg__kubeconfig *k, const char *where, const char *key, const char *in,
                                 char **out)
{
    *out = (char *)fg_base64_decode(in, NULL);
    if (!*out)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s: \"%s\" is not valid base64", k->path, where, key);
    return FG_OK;
}

char *fg__kubeconfig_resolve(const struct fg__kubeconfig *k, const char *file)
{
    if (file[0] == '/')
        return fg_strdup(file);
    while (file[0] == '.' && file[1] == '/')
        file += 2;
    return fg_asprintf("%s/%s", k->dir, file);
}

/* PEM from `<key>-data` (base64) or from the file named by `<key>`; *out stays NULL when neither. */
static enum fg_err load_pem(struct fg__kubeconfig *k, yaml_node_t *map, const char *where, const char *key,
                            char **out)
{
    char data_key[64];
    snprintf(data_key, sizeof data_key, "%s-data", key);
    const char *data, *file;
    enum fg_err err = fg__kubeconfig_str(k, map, where, data_key, &data);
    if (!err)
        err = fg__kubeconfig_str(k, map, where, key, &file);
    if (err)
        return err;
    if (data)
        return decode_base64(k, where, data_key, data, out);
    if (!file)
        return FG_OK;
    char *path = fg__kubeconfig_resolve(k, file);
    char what[256];
    snprintf(what, sizeof what, "kubeconfig %s: %s: \"%s\"", k->path, where, key);
    err = fg__kube_read_small_file(path, what, out, k->errmsg);
    free(path);
    return err;
}

static enum fg_err load_cluster(struct fg__kubeconfig *k, yaml_node_t *cl, const char *where,
                                struct fg_kube_config *cfg)
{
    const char *server, *sni;
    enum fg_err err;
    if ((err = fg__kubeconfig_str(k, cl, where, "server", &server)) ||
        (err = fg__kubeconfig_str(k, cl, where, "tls-server-name", &sni)) ||
        (err = fg__kubeconfig_bool(k, cl, where, "insecure-skip-tls-verify", &cfg->insecure_skip_tls_verify)) ||
        (err = load_pem(k, cl, where, "certificate-authority", &cfg->ca_pem)))
        return err;
    if (!server)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s has no \"server\"", k->path, where);
    cfg->server = fg_strdup(server);
    size_t n = strlen(cfg->server);
    while (n > 0 && cfg->server[n - 1] == '/')
        cfg->server[--n] = '\0';
    cfg->tls_server_name = sni ? fg_strdup(sni) : NULL;
    return FG_OK;
}

static enum fg_err load_user(struct fg__kubeconfig *k, yaml_node_t *u, const char *where,
                             struct fg_kube_config *cfg)
{
    const char *token, *token_file;
    enum fg_err err;
    if ((err = fg__kubeconfig_str(k, u, where, "token", &token)) ||
        (err = fg__kubeconfig_str(k, u, where, "tokenFile", &token_file)) ||
        (err = load_pem(k, u, where, "client-certificate", &cfg->cert_pem)) ||
        (err = load_pem(k, u, where, "client-key", &cfg->key_pem)) ||
        (err = fg__kubeconfig_load_exec(k, u, where, &cfg->exec)))
        return err;
    if (!cfg->cert_pem != !cfg->key_pem)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s has a client %s but no client %s", k->path,
                         where, cfg->cert_pem ? "certificate" : "key", cfg->cert_pem ? "key" : "certificate");
    if (token)
        cfg->token = fg_strdup(token);
    if (token_file)
        cfg->token_file = fg__kubeconfig_resolve(k, token_file);
    return FG_OK;
}

static enum fg_err load_context(struct fg__kubeconfig *k, const char *context, struct fg_kube_config *cfg)
{
    yaml_node_t *root = yaml_document_get_root_node(&k->doc);
    if (!root)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s is empty", k->path);
    if (root->type != YAML_MAPPING_NODE)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: the document is not a mapping", k->path);
    enum fg_err err;
    if (!context) {
        if ((err = fg__kubeconfig_str(k, root, "top level", "current-context", &context)))
            return err;
        if (!context)
            return fg_errmsg(k->errmsg, FG_E_NOT_FOUND_LOCAL,
                             "kubeconfig %s: no context given and \"current-context\" is not set", k->path);
    }
    char where[300];
    snprintf(where, sizeof where, "context \"%.200s\"", context);
    yaml_node_t *ctx, *cl, *u;
    const char *cluster, *user, *ns;
    err = find_named(k, "contexts", "context", context, "the configuration", &ctx);
    if (!err)
        err = fg__kubeconfig_str(k, ctx, where, "cluster", &cluster);
    if (!err)
        err = fg__kubeconfig_str(k, ctx, where, "user", &user);
    if (!err)
        err = fg__kubeconfig_str(k, ctx, where, "namespace", &ns);
    if (err)
        return err;
    if (!cluster)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s has no \"cluster\"", k->path, where);
    if ((err = find_named(k, "clusters", "cluster", cluster, where, &cl)))
        return err;
    char cwhere[300];
    snprintf(cwhere, sizeof cwhere, "cluster \"%.200s\"", cluster);
    if ((err = load_cluster(k, cl, cwhere, cfg)))
        return err;
    if (user) {
        char uwhere[300];
        snprintf(uwhere, sizeof uwhere, "user \"%.200s\"", user);
        if ((err = find_named(k, "users", "user", user, where, &u)) || (err = load_user(k, u, uwhere, cfg)))
            return err;
    }
    cfg->namespace = fg_strdup(ns ? ns : "default");
    return FG_OK;
}

static enum fg_err load_document(struct fg__kubeconfig *k, FILE *f)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return fg_errmsg(k->errmsg, FG_E_NOMEM, "kubeconfig %s: cannot initialize the YAML parser", k->path);
    yaml_parser_set_input_file(&parser, f);
    enum fg_err err = FG_OK;
    if (!yaml_parser_load(&parser, &k->doc))
        err = fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s line %zu: %s%s%s", k->path,
                        (size_t)parser.problem_mark.line + 1, parser.problem ? parser.problem : "invalid YAML",
                        parser.context ? " " : "", parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return err;
}

enum fg_err fg_kube_config_load_file(const char *path, const char *context, struct fg_kube_config *cfg,
                                     char *errmsg)
{
    memset(cfg, 0, sizeof *cfg);
    struct fg__kubeconfig k = { .path = path, .errmsg = errmsg };
    FILE *f = fopen(path, "rb");
    if (!f)
        return fg_errmsg(errmsg, FG_E_IO, "kubeconfig %s: cannot open: %s", path, strerror(errno));
    enum fg_err err = load_document(&k, f);
    fclose(f);
    if (err)
        return err;
    char *tmp = fg_strdup(path);
    k.dir = fg_strdup(dirname(tmp));
    free(tmp);
    err = load_context(&k, context, cfg);
    free(k.dir);
    yaml_document_delete(&k.doc);
    if (err)
        fg_kube_config_cleanup(cfg);
    return err;
}

enum fg_err fg_kube_config_load_default(const char *path, const char *context, struct fg_kube_config *cfg,
                                        char *errmsg)
{
    if (path && path[0])
        return fg_kube_config_load_file(path, context, cfg, errmsg);
    const char *env = getenv("KUBECONFIG");
    if (env && env[0]) {
        char *first = fg_strndup(env, strcspn(env, ":"));
        enum fg_err err = fg_kube_config_load_file(first, context, cfg, errmsg);
        free(first);
        return err;
    }
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (host && host[0] && !context)
        return fg_kube_config_load_in_cluster(NULL, cfg, errmsg);
    const char *home = getenv("HOME");
    if (!home || !home[0]) {
        memset(cfg, 0, sizeof *cfg);
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL,
                         "no kubeconfig: neither a path, $KUBECONFIG, an in-cluster service account nor $HOME");
    }
    char *p = fg_asprintf("%s/.kube/config", home);
    enum fg_err err = fg_kube_config_load_file(p, context, cfg, errmsg);
    free(p);
    return err;
}

void fg_kube_config_cleanup(struct fg_kube_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_pem);
    free(cfg->cert_pem);
    free(cfg->key_pem);
    free(cfg->token);
    free(cfg->token_file);
    fg_kube_exec_free(cfg->exec);
    free(cfg->tls_server_name);
    free(cfg->namespace);
    memset(cfg, 0, sizeof *cfg);
}
