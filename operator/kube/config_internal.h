/*
 * config_internal — the parsed kubeconfig that config.c (clusters, contexts, static credentials) and
 * config_exec.c (exec and auth-provider stanzas) both read. Module-internal.
 *
 * Strings returned by the lookups are borrowed from the YAML document, which lives until
 * fg_kube_config_load_file returns; errors are written to `errmsg` and name the file and the field.
 */
#ifndef FG_KUBE_CONFIG_INTERNAL_H
#define FG_KUBE_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <yaml.h>

#include "operator/kube/config.h"

struct fg__kubeconfig {
    const char *path;
    char *dir;              /* the file's directory: relative references are taken against it */
    yaml_document_t doc;
    char *errmsg;
};

/* The value node of `key` in the mapping `map`, or NULL (also when map is not a mapping). */
yaml_node_t *fg__kubeconfig_get(struct fg__kubeconfig *k, yaml_node_t *map, const char *key);

/* *out = the string at map[key] (borrowed), NULL when absent or null; FG_E_PARSE when not a scalar. */
enum fg_err fg__kubeconfig_str(struct fg__kubeconfig *k, yaml_node_t *map, const char *where, const char *key,
                               const char **out) FG_MUST_USE;

/* *out = the boolean at map[key], left as it is when absent; FG_E_PARSE when not a boolean. */
enum fg_err fg__kubeconfig_bool(struct fg__kubeconfig *k, yaml_node_t *map, const char *where, const char *key,
                                bool *out) FG_MUST_USE;

/* `file` as a path: itself when absolute, else under the kubeconfig's directory (leading "./" dropped).
 * Caller frees. */
char *fg__kubeconfig_resolve(const struct fg__kubeconfig *k, const char *file);

/* users[].user.exec into *out (NULL when the user has none), refusing auth-provider with the fix. */
enum fg_err fg__kubeconfig_load_exec(struct fg__kubeconfig *k, yaml_node_t *user, const char *where,
                                     struct fg_kube_exec **out) FG_MUST_USE;

#endif
