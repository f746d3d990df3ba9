/* registry — resource types as data (types.json), plus OpenAPI-shaped patch metadata; see registry.h. */
#include "e2e/apiserver/registry.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

extern const char fg__types_json[];
extern const size_t fg__types_json_len;

static void type_free(struct fg__type *t)
{
    if (!t)
        return;
    free(t->group);
    free(t->version);
    free(t->plural);
    free(t->kind);
    free(t->list_kind);
    free(t->api_version);
    free(t->resource);
    free(t->definition);
    for (size_t i = 0; i < t->nsubresources; i++)
        free(t->subresources[i]);
    free(t->subresources);
    json_object_put(t->short_names);
    json_object_put(t->categories);
    json_object_put(t->columns);
    json_object_put(t->schema);
    free(t->singular);
    free(t->crd);
    free(t);
}

/* The Table columns of a type that declares none, as kube-apiserver's default printer has them. */
static json_object *age_column(void)
{
    json_object *age = json_object_new_object();
    json_object_object_add(age, "name", json_object_new_string("Age"));
    json_object_object_add(age, "type", json_object_new_string("date"));
    json_object_object_add(age, "jsonPath", json_object_new_string(".metadata.creationTimestamp"));
    json_object *columns = json_object_new_array();
    json_object_array_add(columns, age);
    return columns;
}

static void set_subresources(struct fg__type *t, json_object *subs)
{
    for (size_t i = 0; i < t->nsubresources; i++)
        free(t->subresources[i]);
    free(t->subresources);
    t->nsubresources = subs ? json_object_array_length(subs) : 0;
    t->subresources = fg_calloc(t->nsubresources ? t->nsubresources : 1, sizeof(*t->subresources));
    for (size_t i = 0; i < t->nsubresources; i++) {
        const char *sub = json_object_get_string(json_object_array_get_idx(subs, i));
        t->subresources[i] = fg_strdup(sub ? sub : "");
    }
}

void fg__registry_update(struct fg__type *t, json_object *row)
{
    set_subresources(t, fg_json_get(row, "subresources", NULL));
    json_object_put(t->columns);
    json_object_put(t->schema);
    json_object_put(t->short_names);
    json_object *columns = fg_json_get(row, "columns", NULL);
    t->columns = columns ? json_object_get(columns) : age_column();
    json_object *name_column = fg_json_get(row, "nameColumn", NULL);
    t->name_column = !name_column || json_object_get_boolean(name_column);
    t->schema = json_object_get(fg_json_get(row, "schema", NULL));
    json_object *short_names = fg_json_get(row, "shortNames", NULL);
    t->short_names = short_names ? json_object_get(short_names) : json_object_new_array();
    t->disabled = false;
}

enum fg_err fg__registry_add(struct fg__registry *reg, json_object *row, const struct fg__type **out,
                             char *errmsg)
{
    const char *group = fg_json_get_str(row, "group", NULL);
    const char *version = fg_json_get_str(row, "version", NULL);
    const char *plural = fg_json_get_str(row, "plural", NULL);
    const char *kind = fg_json_get_str(row, "kind", NULL);
    json_object *namespaced = fg_json_get(row, "namespaced", NULL);
    if (!group || !version || !*version || !plural || !*plural || !kind || !*kind ||
        !json_object_is_type(namespaced, json_type_boolean))
        return fg_errmsg(errmsg, FG_E_INVAL, "resource row needs group, version, plural, kind and namespaced");
    if (fg__registry_find_any(reg, group, version, plural))
        return fg_errmsg(errmsg, FG_E_INVAL, "resource %s/%s/%s is already registered", group, version, plural);
    json_object *subs = fg_json_get(row, "subresources", NULL);
    json_object *short_names = fg_json_get(row, "shortNames", NULL);
    json_object *categories = fg_json_get(row, "categories", NULL);
    json_object *columns = fg_json_get(row, "columns", NULL);
    if ((subs && !json_object_is_type(subs, json_type_array)) ||
        (short_names && !json_object_is_type(short_names, json_type_array)) ||
        (categories && !json_object_is_type(categories, json_type_array)) ||
        (columns && !json_object_is_type(columns, json_type_array)))
        return fg_errmsg(errmsg, FG_E_INVAL, "subresources, shortNames, categories and columns of %s must be lists",
                         plural);
    const char *list_kind = fg_json_get_str(row, "listKind", NULL);
    const char *definition = fg_json_get_str(row, "definition", NULL);

    struct fg__type *t = fg_calloc(1, sizeof(*t));
    t->index = reg->n;
    t->group = fg_strdup(group);
    t->version = fg_strdup(version);
    t->plural = fg_strdup(plural);
    t->kind = fg_strdup(kind);
    t->list_kind = list_kind ? fg_strdup(list_kind) : fg_asprintf("%sList", kind);
    t->api_version = *group ? fg_asprintf("%s/%s", group, version) : fg_strdup(version);
    t->resource = fg_asprintf("%s/%s", t->api_version, plural);
    t->definition = definition ? fg_strdup(definition) : NULL;
    t->namespaced = json_object_get_boolean(namespaced);
    t->short_names = short_names ? json_object_get(short_names) : json_object_new_array();
    t->categories = categories ? json_object_get(categories) : json_object_new_array();
    const char *singular = fg_json_get_str(row, "singular", NULL);
    const char *crd = fg_json_get_str(row, "crd", NULL);
    t->singular = fg_strdup(singular ? singular : "");
    t->crd = crd ? fg_strdup(crd) : NULL;
    set_subresources(t, subs);
    t->columns = columns ? json_object_get(columns) : age_column();
    json_object *name_column = fg_json_get(row, "nameColumn", NULL);
    t->name_column = !name_column || json_object_get_boolean(name_column);
    t->schema = json_object_get(fg_json_get(row, "schema", NULL));
    reg->types = fg_realloc(reg->types, (reg->n + 1) * sizeof(*reg->types));
    reg->types[reg->n++] = t;
    if (out)
        *out = t;
    return FG_OK;
}

enum fg_err fg__registry_init(struct fg__registry *reg, const char *json, size_t len, char *errmsg)
{
    memset(reg, 0, sizeof(*reg));
    json_object *doc = NULL;
    enum fg_err err = fg_json_parse(json, len, 0, &doc, errmsg);
    if (err)
        return err;
    json_object *rows = fg_json_get(doc, "resources", NULL);
    json_object *defs = fg_json_get(doc, "definitions", NULL);
    if (!json_object_is_type(rows, json_type_array) || !json_object_is_type(defs, json_type_object)) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "type registry needs a resources array and a definitions object");
        goto out_put_doc;
    }
    reg->definitions = json_object_get(defs);
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        err = fg__registry_add(reg, json_object_array_get_idx(rows, i), NULL, errmsg);
        if (err) {
            fg__registry_cleanup(reg);
            goto out_put_doc;
        }
    }
out_put_doc:
    json_object_put(doc);
    return err;
}

enum fg_err fg__registry_init_builtin(struct fg__registry *reg, char *errmsg)
{
    return fg__registry_init(reg, fg__types_json, fg__types_json_len, errmsg);
}

void fg__registry_cleanup(struct fg__registry *reg)
{
    for (size_t i = 0; i < reg->n; i++)
        type_free(reg->types[i]);
    free(reg->types);
    json_object_put(reg->definitions);
    memset(reg, 0, sizeof(*reg));
}

struct fg__type *fg__registry_find_any(const struct fg__registry *reg, const char *group, const char *version,
                                       const char *plural)
{
    for (size_t i = 0; i < reg->n; i++) {
        struct fg__type *t = reg->types[i];
        if (!strcmp(t->plural, plural) && !strcmp(t->version, version) && !strcmp(t->group, group))
            return t;
    }
    return NULL;
}

const struct fg__type *fg__registry_find(const struct fg__registry *reg, const char *group,
                                         const char *version, const char *plural)
{
    const struct fg__type *t = fg__registry_find_any(reg, group, version, plural);
    return t && !t->disabled ? t : NULL;
}

const struct fg__type *fg__registry_find_resource(const struct fg__registry *reg, const char *resource)
{
    for (size_t i = 0; i < reg->n; i++)
        if (!reg->types[i]->disabled && !strcmp(reg->types[i]->resource, resource))
            return reg->types[i];
    return NULL;
}

bool fg__type_has_subresource(const struct fg__type *type, const char *sub)
{
    for (size_t i = 0; i < type->nsubresources; i++)
        if (!strcmp(type->subresources[i], sub))
            return true;
    return false;
}

json_object *fg__registry_definition(const struct fg__registry *reg, const char *ref)
{
    if (!ref)
        return NULL;
    static const char prefix[] = "#/definitions/";
    if (!strncmp(ref, prefix, sizeof(prefix) - 1))
        ref += sizeof(prefix) - 1;
    return fg_json_get(reg->definitions, ref, NULL);
}
