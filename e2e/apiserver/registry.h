/*
 * registry — the resource types the test API server serves, as data.
 *
 * Each type is a row (group, version, plural, kind, list kind, namespaced, OpenAPI definition name)
 * loaded from types.json, which is compiled into the binary; fg__registry_add appends a row at run
 * time, which is how custom resources will arrive. Types are numbered densely in registration order
 * and that number indexes the store's buckets. The same file carries OpenAPI-shaped `definitions`
 * whose x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key drive strategic merge patches
 * and can later be served as OpenAPI unchanged. The registry owns its rows and the definitions.
 */
#ifndef FG_E2E_APISERVER_REGISTRY_H
#define FG_E2E_APISERVER_REGISTRY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct fg__type {
    size_t index;
    char *group;       /* "" for the core group */
    char *version;
    char *plural;
    char *kind;
    char *list_kind;   /* kind + "List" unless given */
    char *api_version; /* "v1" or "apps/v1" */
    char *resource;    /* "v1/pods", "apps/v1/deployments": the key used in state files */
    char *definition;  /* OpenAPI definition name, or NULL */
    bool namespaced;
    char **subresources; /* "status", "binding", ... */
    size_t nsubresources;
    json_object *short_names; /* array of strings, for discovery; owned */
    char *singular;           /* "" unless given */
    json_object *categories;  /* array of strings, for discovery; owned */
    json_object *columns;     /* Table columns, CRD additionalPrinterColumns shape (default: Age); owned */
    json_object *schema;      /* openAPIV3Schema of a custom resource; owned, NULL for built-in kinds */
    char *crd;                /* name of the CustomResourceDefinition serving it, or NULL */
    bool name_column;         /* Tables start with a Name column (all but events) */
    bool disabled;            /* its CRD is gone: lookups skip it, its bucket stays (indices are dense) */
};

struct fg__registry {
    struct fg__type **types;
    size_t n;
    json_object *definitions; /* owned; {name: {properties: {...}}} */
};

/* Loads types.json text. FG_E_PARSE with a reason on a malformed document. */
enum fg_err fg__registry_init(struct fg__registry *reg, const char *json, size_t len, char *errmsg) FG_MUST_USE;
/* Loads the compiled-in types.json. */
enum fg_err fg__registry_init_builtin(struct fg__registry *reg, char *errmsg) FG_MUST_USE;
void fg__registry_cleanup(struct fg__registry *reg);
/* Adds one row ({"group","version","plural","kind","namespaced","listKind"?,"definition"?,
 * "subresources"?: ["status", ...], "shortNames"?: ["po", ...], "singular"?, "categories"?: [...],
 * "columns"?: [{name, type, jsonPath | compute, priority?, default?}], "nameColumn"?: bool, "schema"?: {...},
 * "crd"?: NAME}).
 * FG_E_INVAL when fields are missing or the plural already exists in that group/version. */
enum fg_err fg__registry_add(struct fg__registry *reg, json_object *row, const struct fg__type **out,
                             char *errmsg) FG_MUST_USE;
/* Replaces the columns, schema and subresources of a row that came from a CRD (both taken). */
void fg__registry_update(struct fg__type *type, json_object *row);
/* Borrowed lookups; NULL when unknown or disabled. */
const struct fg__type *fg__registry_find(const struct fg__registry *reg, const char *group,
                                         const char *version, const char *plural);
const struct fg__type *fg__registry_find_resource(const struct fg__registry *reg, const char *resource);
/* The row for group/version/plural even when disabled, or NULL (CRD re-creation). */
struct fg__type *fg__registry_find_any(const struct fg__registry *reg, const char *group, const char *version,
                                       const char *plural);
/* Does the type serve this subresource? */
bool fg__type_has_subresource(const struct fg__type *type, const char *sub);
/* The definition named by a "#/definitions/NAME" reference or a bare NAME; NULL when unknown. */
json_object *fg__registry_definition(const struct fg__registry *reg, const char *ref);

#endif
