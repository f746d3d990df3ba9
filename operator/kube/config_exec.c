/*
 * config_exec — the kubeconfig's credential-plugin stanzas: users[].user.exec and the legacy
 * auth-provider.
 *
 * exec becomes a struct fg_kube_exec that the client runs later (exec_run.c). Whatever can be checked
 * without running the plugin is checked here, so a kubeconfig the client could not use fails at load
 * time with the field named: no command, no apiVersion or one other than v1 / v1beta1, interactiveMode
 * Always (fracgpu has no terminal to give), an env entry without a name, args or env that are not
 * lists. A command with a slash is resolved against the kubeconfig's directory now, as client-go does;
 * a bare name stays a name and is looked up on PATH when the plugin runs.
 *
 * auth-provider plugins left client-go in 1.26 (gcp, azure) or were never more than a stopgap (oidc);
 * their stanza is refused with the exec plugin that replaced each.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "operator/kube/config_internal.h"

#define EXEC_V1 "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"

static enum fg_err refuse_auth_provider(struct fg__kubeconfig *k, yaml_node_t *provider, const char *where)
{
    static const struct {
        const char *name, *fix;
    } fixes[] = {
        { "gcp", "install gke-gcloud-auth-plugin and run `gcloud container clusters get-credentials` again to "
                 "regenerate the kubeconfig with its exec plugin" },
        { "azure", "install kubelogin and run `kubelogin convert-kubeconfig -l azurecli` (or `az aks "
                   "get-credentials` again) to rewrite the kubeconfig with its exec plugin" },
        { "oidc", "install kubelogin (int128/kubelogin) and replace auth-provider with the exec stanza that "
                  "`kubectl oidc-login setup` prints" },
    };
    const char *name = NULL;
    if (fg__kubeconfig_str(k, provider, where, "name", &name) || !name)
        name = "?";
    const char *fix = "replace it with the exec credential plugin of your cluster's provider";
    for (size_t i = 0; i < sizeof fixes / sizeof fixes[0]; i++)
        if (strcmp(name, fixes[i].name) == 0)
            fix = fixes[i].fix;
    return fg_errmsg(k->errmsg, FG_E_UNSUPPORTED,
                     "kubeconfig %s: %s uses auth-provider \"%.40s\", which Kubernetes clients no longer support; "
                     "%s", k->path, where, name, fix);
}

/* map[key] unless it is absent or null. */
static yaml_node_t *get_set(struct fg__kubeconfig *k, yaml_node_t *map, const char *key)
{
    yaml_node_t *n = fg__kubeconfig_get(k, map, key);
    const char *v;
    if (n && n->type == YAML_SCALAR_NODE && fg__kubeconfig_str(k, map, "", key, &v) == FG_OK && !v)
        return NULL;
    return n;
}

/* The sequence at exec[key] (NULL when absent or null); FG_E_PARSE when it is something else. */
static enum fg_err get_seq(struct fg__kubeconfig *k, yaml_node_t *exec, const char *where, const char *key,
                           yaml_node_t **out)
{
    *out = get_set(k, exec, key);   /* `env: null` is what `aws eks update-kubeconfig` writes */
    if (!*out || (*out)->type == YAML_SEQUENCE_NODE)
        return FG_OK;
    return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s: \"%s\" must be a list", k->path, where, key);
}

static enum fg_err load_args(struct fg__kubeconfig *k, yaml_node_t *exec, const char *where, struct fg_kube_exec *x)
{
    yaml_node_t *seq;
    enum fg_err err = get_seq(k, exec, where, "args", &seq);
    if (err || !seq)
        return err;
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    x->args = fg_calloc(n + 1, sizeof *x->args);
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        yaml_node_t *arg = yaml_document_get_node(&k->doc, *it);
        if (!arg || arg->type != YAML_SCALAR_NODE)
            return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s: args[%zu] must be a string", k->path, where,
                             x->nargs);
        x->args[x->nargs++] = fg_strdup((const char *)arg->data.scalar.value);
    }
    return FG_OK;
}

static enum fg_err load_env(struct fg__kubeconfig *k, yaml_node_t *exec, const char *where, struct fg_kube_exec *x)
{
    yaml_node_t *seq;
    enum fg_err err = get_seq(k, exec, where, "env", &seq);
    if (err || !seq)
        return err;
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    x->env = fg_calloc(n + 1, sizeof *x->env);
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        yaml_node_t *entry = yaml_document_get_node(&k->doc, *it);
        char ewhere[320];
        snprintf(ewhere, sizeof ewhere, "%s: env[%zu]", where, x->nenv);
        const char *name = NULL, *value = NULL;
        if ((err = fg__kubeconfig_str(k, entry, ewhere, "name", &name)) ||
            (err = fg__kubeconfig_str(k, entry, ewhere, "value", &value)))
            return err;
        if (!name || !name[0] || strchr(name, '='))
            return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s needs a \"name\" (without '=')", k->path,
                             ewhere);
        x->env[x->nenv++] = (struct fg_kube_exec_env){ fg_strdup(name), fg_strdup(value ? value : "") };
    }
    return FG_OK;
}

/* apiVersion and interactiveMode: the two things the plugin's protocol depends on. */
static enum fg_err load_modes(struct fg__kubeconfig *k, yaml_node_t *exec, const char *where, struct fg_kube_exec *x)
{
    const char *api, *mode;
    enum fg_err err;
    if ((err = fg__kubeconfig_str(k, exec, where, "apiVersion", &api)) ||
        (err = fg__kubeconfig_str(k, exec, where, "interactiveMode", &mode)))
        return err;
    if (!api)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s has no \"apiVersion\" (%s or %s)", k->path, where,
                         EXEC_V1, EXEC_V1BETA1);
    if (strcmp(api, EXEC_V1) != 0 && strcmp(api, EXEC_V1BETA1) != 0)
        return fg_errmsg(k->errmsg, FG_E_UNSUPPORTED, "kubeconfig %s: %s: apiVersion \"%.80s\" is not supported; "
                         "use %s or %s", k->path, where, api, EXEC_V1, EXEC_V1BETA1);
    if (mode && strcmp(mode, "Always") == 0)
        return fg_errmsg(k->errmsg, FG_E_UNSUPPORTED, "kubeconfig %s: %s: interactiveMode Always needs a terminal, "
                         "and fracgpu runs plugins without one; use Never or IfAvailable", k->path, where);
    if (mode && strcmp(mode, "Never") != 0 && strcmp(mode, "IfAvailable") != 0)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s: interactiveMode \"%.40s\" is not Never, "
                         "IfAvailable or Always", k->path, where, mode);
    x->api_version = fg_strdup(api);
    return FG_OK;
}

static enum fg_err load_exec(struct fg__kubeconfig *k, yaml_node_t *exec, const char *where, struct fg_kube_exec *x)
{
    const char *command, *hint;
    enum fg_err err;
    if (exec->type != YAML_MAPPING_NODE)
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s must be a mapping", k->path, where);
    if ((err = fg__kubeconfig_str(k, exec, where, "command", &command)) ||
        (err = fg__kubeconfig_str(k, exec, where, "installHint", &hint)) ||
        (err = fg__kubeconfig_bool(k, exec, where, "provideClusterInfo", &x->provide_cluster_info)) ||
        (err = load_modes(k, exec, where, x)) || (err = load_args(k, exec, where, x)) ||
        (err = load_env(k, exec, where, x)))
        return err;
    if (!command || !command[0])
        return fg_errmsg(k->errmsg, FG_E_PARSE, "kubeconfig %s: %s has no \"command\"", k->path, where);
    x->command = strchr(command, '/') ? fg__kubeconfig_resolve(k, command) : fg_strdup(command);
    x->install_hint = hint ? fg_strdup(hint) : NULL;
    return FG_OK;
}

enum fg_err fg__kubeconfig_load_exec(struct fg__kubeconfig *k, yaml_node_t *user, const char *where,
                                     struct fg_kube_exec **out)
{
    *out = NULL;
    yaml_node_t *provider = get_set(k, user, "auth-provider");
    if (provider)
        return refuse_auth_provider(k, provider, where);
    yaml_node_t *exec = get_set(k, user, "exec");
    if (!exec)
        return FG_OK;
    char xwhere[300];
    snprintf(xwhere, sizeof xwhere, "%s: exec", where);
    struct fg_kube_exec *x = fg_calloc(1, sizeof *x);
    enum fg_err err = load_exec(k, exec, xwhere, x);
    if (err) {
        fg_kube_exec_free(x);
        return err;
    }
    *out = x;
    return FG_OK;
}

struct fg_kube_exec *fg_kube_exec_dup(const struct fg_kube_exec *x)
{
    if (!x)
        return NULL;
    struct fg_kube_exec *d = fg_calloc(1, sizeof *d);
    d->command = fg_strdup(x->command);
    d->api_version = fg_strdup(x->api_version);
    d->install_hint = x->install_hint ? fg_strdup(x->install_hint) : NULL;
    d->provide_cluster_info = x->provide_cluster_info;
    d->args = fg_calloc(x->nargs + 1, sizeof *d->args);
    for (; d->nargs < x->nargs; d->nargs++)
        d->args[d->nargs] = fg_strdup(x->args[d->nargs]);
    d->env = fg_calloc(x->nenv + 1, sizeof *d->env);
    for (; d->nenv < x->nenv; d->nenv++)
        d->env[d->nenv] = (struct fg_kube_exec_env){ fg_strdup(x->env[d->nenv].name), fg_strdup(x->env[d->nenv].value) };
    return d;
}

void fg_kube_exec_free(struct fg_kube_exec *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->nargs; i++)
        free(x->args[i]);
    for (size_t i = 0; i < x->nenv; i++) {
        free(x->env[i].name);
        free(x->env[i].value);
    }
    free(x->args);
    free(x->env);
    free(x->command);
    free(x->api_version);
    free(x->install_hint);
    free(x);
}
