/*
 * crd — CustomResourceDefinitions (apiextensions.k8s.io/v1) turned into registry rows.
 *
 * Admission checks what kube-apiserver needs to serve a CRD (metadata.name = <plural>.<group>, names,
 * scope, at least one served version with a schema) and writes the status kubectl waits for
 * (acceptedNames, NamesAccepted and Established true at once, storedVersions). After the CRD is
 * committed, sync registers one row per served version — kind and list kind, short names, scope,
 * the status subresource, printer columns (the registry's Age when none are given) and the openAPIV3Schema — or
 * updates the row in place, so discovery, OpenAPI, Tables and validation all read the same data.
 * When the CRD goes its objects are deleted (watchers see DELETED) and its rows are disabled rather
 * than removed, because type indices number the store's buckets; re-creating it enables them again.
 */
#include "e2e/apiserver/admit.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/apiserver/store_int.h"

bool fg__crd_is_crd_type(const struct fg__type *type)
{
    return !strcmp(type->group, "apiextensions.k8s.io") && !strcmp(type->plural, "customresourcedefinitions");
}

static json_object *condition(const char *type, const char *reason, const char *message)
{
    json_object *c = json_object_new_object();
    fg_json_set_str(c, "type", type);
    fg_json_set_str(c, "status", "True");
    json_object *meta = json_object_new_object();
    fg__write_set_now(meta, "t");
    json_object_object_add(c, "lastTransitionTime", json_object_get(fg_json_get(meta, "t", NULL)));
    json_object_put(meta);
    fg_json_set_str(c, "reason", reason);
    fg_json_set_str(c, "message", message);
    return c;
}

enum fg_err fg__crd_admit(const struct fg__type *type, json_object *obj, json_object **out)
{
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    const char *group = fg_json_get_str(obj, "spec", "group", NULL);
    const char *plural = fg_json_get_str(obj, "spec", "names", "plural", NULL);
    const char *kind = fg_json_get_str(obj, "spec", "names", "kind", NULL);
    const char *scope = fg_json_get_str(obj, "spec", "scope", NULL);
    json_object *versions = fg_json_get(obj, "spec", "versions", NULL);
    if (!group || !*group)
        return fg__write_invalid(out, type, name, "spec.group", "FieldValueRequired", "Required value");
    if (!plural || !*plural)
        return fg__write_invalid(out, type, name, "spec.names.plural", "FieldValueRequired", "Required value");
    if (!kind || !*kind)
        return fg__write_invalid(out, type, name, "spec.names.kind", "FieldValueRequired", "Required value");
    if (!fg_str_eq(scope, "Namespaced") && !fg_str_eq(scope, "Cluster"))
        return fg__write_invalid(out, type, name, "spec.scope", "FieldValueNotSupported",
                                 "Unsupported value: supported values: \"Cluster\", \"Namespaced\"");
    char *want = fg_asprintf("%s.%s", plural, group);
    bool name_ok = fg_str_eq(name, want);
    free(want);
    if (!name_ok)
        return fg__write_invalid(out, type, name, "metadata.name", "FieldValueInvalid",
                                 "Invalid value: must be spec.names.plural+\".\"+spec.group");
    size_t nversions = fg_json_array_len(versions);
    if (!nversions)
        return fg__write_invalid(out, type, name, "spec.versions", "FieldValueInvalid",
                                 "Invalid value: must have exactly one version marked as storage version");
    json_object *stored = json_object_new_array();
    for (size_t i = 0; i < nversions; i++) {
        json_object *v = json_object_array_get_idx(versions, i);
        if (!fg_json_get_str(v, "name", NULL) || !json_object_is_type(fg_json_get(v, "schema", "openAPIV3Schema", NULL),
                                                                        json_type_object)) {
            json_object_put(stored);
            return fg__write_invalid(out, type, name, "spec.versions[].schema.openAPIV3Schema", "FieldValueRequired",
                                     "Required value: schemas are required");
        }
        if (json_object_get_boolean(fg_json_get(v, "storage", NULL)))
            json_object_array_add(stored, json_object_new_string(fg_json_get_str(v, "name", NULL)));
    }
    json_object *status = json_object_new_object();
    json_object_object_add(status, "acceptedNames", json_object_get(fg_json_get(obj, "spec", "names", NULL)));
    json_object *conds = json_object_new_array();
    json_object_array_add(conds, condition("NamesAccepted", "NoConflicts", "no conflicts found"));
    json_object_array_add(conds, condition("Established", "InitialNamesAccepted",
                                           "the initial names have been accepted"));
    json_object_object_add(status, "conditions", conds);
    json_object_object_add(status, "storedVersions", stored);
    json_object_object_add(obj, "status", status);
    return FG_OK;
}

/* The registry row for one served version of a CRD (a new object). */
static json_object *version_row(json_object *crd, json_object *v)
{
    json_object *spec = fg_json_get(crd, "spec", NULL);
    json_object *names = fg_json_get(spec, "names", NULL);
    json_object *row = json_object_new_object();
    fg_json_set_str(row, "group", fg_json_get_str(spec, "group", NULL));
    fg_json_set_str(row, "version", fg_json_get_str(v, "name", NULL));
    fg_json_set_str(row, "plural", fg_json_get_str(names, "plural", NULL));
    fg_json_set_str(row, "singular", fg_json_get_str(names, "singular", NULL));
    fg_json_set_str(row, "kind", fg_json_get_str(names, "kind", NULL));
    fg_json_set_str(row, "listKind", fg_json_get_str(names, "listKind", NULL));
    fg_json_set_str(row, "crd", fg_json_get_str(crd, "metadata", "name", NULL));
    json_object_object_add(row, "namespaced",
                           json_object_new_boolean(fg_str_eq(fg_json_get_str(spec, "scope", NULL), "Namespaced")));
    static const char *const lists[] = { "shortNames", "categories" };
    for (size_t i = 0; i < 2; i++)
        if (json_object_is_type(fg_json_get(names, lists[i], NULL), json_type_array))
            json_object_object_add(row, lists[i], json_object_get(fg_json_get(names, lists[i], NULL)));
    json_object *subs = json_object_new_array();
    if (fg_json_get(v, "subresources", "status", NULL))
        json_object_array_add(subs, json_object_new_string("status"));
    json_object_object_add(row, "subresources", subs);
    json_object *columns = fg_json_get(v, "additionalPrinterColumns", NULL);
    if (json_object_is_type(columns, json_type_array))
        json_object_object_add(row, "columns", json_object_get(columns));
    json_object_object_add(row, "schema", json_object_get(fg_json_get(v, "schema", "openAPIV3Schema", NULL)));
    return row;
}

static bool serves_version(json_object *crd, const char *version)
{
    json_object *versions = fg_json_get(crd, "spec", "versions", NULL);
    for (size_t i = 0; crd && i < json_object_array_length(versions); i++) {
        json_object *v = json_object_array_get_idx(versions, i);
        if (fg_str_eq(fg_json_get_str(v, "name", NULL), version) &&
            json_object_get_boolean(fg_json_get(v, "served", NULL)))
            return true;
    }
    return false;
}

static const char *ns_or_empty(json_object *obj)
{
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    return ns ? ns : "";
}

/* Deletes every object of type, newest key first, each with a DELETED event. */
static void delete_all(struct fg__store *st, const struct fg__type *type)
{
    struct fg__bucket *b = fg__store_bucket(st, type);
    while (b->n) {
        json_object *obj = b->v[b->n - 1]->obj;
        char *ns = fg_strdup(ns_or_empty(obj));
        char *name = fg_strdup(fg_json_get_str(obj, "metadata", "name", NULL));
        json_object_put(fg__store_remove(st, type, *ns ? ns : NULL, name, NULL));
        free(ns);
        free(name);
    }
}

void fg__crd_sync(struct fg__store *st, const char *name)
{
    const struct fg__type *crd_type = fg__registry_find(st->reg, "apiextensions.k8s.io", "v1",
                                                        "customresourcedefinitions");
    const struct fg__entry *e = crd_type ? fg__store_get(st, crd_type, NULL, name) : NULL;
    json_object *crd = e ? e->obj : NULL;
    for (size_t i = 0; i < st->reg->n; i++) {
        struct fg__type *t = st->reg->types[i];
        if (!t->crd || strcmp(t->crd, name) || t->disabled || serves_version(crd, t->version))
            continue;
        delete_all(st, t);
        t->disabled = true;
    }
    if (!crd)
        return;
    json_object *versions = fg_json_get(crd, "spec", "versions", NULL);
    for (size_t i = 0; i < json_object_array_length(versions); i++) {
        json_object *v = json_object_array_get_idx(versions, i);
        if (!json_object_get_boolean(fg_json_get(v, "served", NULL)))
            continue;
        json_object *row = version_row(crd, v);
        struct fg__type *t = fg__registry_find_any(st->reg, fg_json_get_str(row, "group", NULL),
                                                   fg_json_get_str(row, "version", NULL),
                                                   fg_json_get_str(row, "plural", NULL));
        char msg[FG_ERRMSG_MAX];
        if (t && t->crd && !strcmp(t->crd, name))
            fg__registry_update(t, row);
        else if (t)
            fg_log(FG_LOG_WARN, "apiserver", "CRD %s: %s/%s is already served by something else", name,
                   t->api_version, t->plural);
        else if (fg__registry_add(st->reg, row, NULL, msg) != FG_OK)
            fg_log(FG_LOG_WARN, "apiserver", "CRD %s: %s", name, msg);
        json_object_put(row);
    }
}

void fg__crd_sync_all(struct fg__store *st)
{
    const struct fg__type *crd_type = fg__registry_find(st->reg, "apiextensions.k8s.io", "v1",
                                                        "customresourcedefinitions");
    if (!crd_type)
        return;
    struct fg__bucket *b = fg__store_bucket(st, crd_type);
    for (size_t i = 0; i < b->n; i++)
        fg__crd_sync(st, b->v[i]->key);
}
