/*
 * openapi — OpenAPI v3 documents generated from the registry, one per group/version.
 *
 * /openapi/v3 lists every served group/version with a serverRelativeURL whose `hash` is a digest of
 * that document, so kubectl (which caches by URL) refetches whenever a CRD changes it. Each
 * document has, per type, the operations kubectl inspects — a PATCH (and PUT, POST) carrying
 * x-kubernetes-group-version-kind and a `fieldValidation` query parameter, which makes `kubectl
 * apply` leave strict validation to the server instead of falling back to /openapi/v2 — and
 * components.schemas for `kubectl explain`: the built-in definitions of types.json (the same data
 * strategic merge patches read, with #/definitions/ references rewritten to #/components/schemas/)
 * and, for each custom resource, its CRD's openAPIV3Schema with apiVersion, kind and metadata added,
 * under the name kube-apiserver uses (<reversed group>.<version>.<Kind>). /openapi/v2 is not served.
 */
#include "e2e/apiserver/server.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"

#define V3_PREFIX "/openapi/v3"

/* Rewrites "$ref": "#/definitions/X" into "#/components/schemas/X" throughout o (a private copy). */
static void rewrite_refs(json_object *o)
{
    static const char from[] = "#/definitions/";
    if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            rewrite_refs(json_object_array_get_idx(o, i));
        return;
    }
    if (!json_object_is_type(o, json_type_object))
        return;
    const char *ref = fg_json_get_str(o, "$ref", NULL);
    if (ref && fg_str_has_prefix(ref, from)) {
        char *to = fg_asprintf("#/components/schemas/%s", ref + sizeof(from) - 1);
        fg_json_set_str(o, "$ref", to);
        free(to);
    }
    json_object_object_foreach(o, key, val) {
        (void)key;
        rewrite_refs(val);
    }
}

static json_object *gvk(const struct fg__type *t)
{
    json_object *o = json_object_new_object();
    fg_json_set_str(o, "group", t->group);
    fg_json_set_str(o, "version", t->version);
    fg_json_set_str(o, "kind", t->kind);
    return o;
}

/* The schema name kube-apiserver gives a custom resource: io.fracgpu.v1alpha1.GPUPolicy. */
static char *crd_schema_name(const struct fg__type *t)
{
    struct fg_buf b = { 0 };
    const char *end = t->group + strlen(t->group);
    bool failed = false;
    while (end > t->group && !failed) {
        const char *dot = end;
        while (dot > t->group && dot[-1] != '.')
            dot--;
        failed = fg_buf_printf(&b, "%.*s.", (int)(end - dot), dot) != FG_OK;
        end = dot > t->group ? dot - 1 : dot;
    }
    if (failed || fg_buf_printf(&b, "%s.%s", t->version, t->kind))
        abort(); /* an unlimited buffer fails only when allocation does, which aborts first */
    return fg_buf_take(&b);
}

static json_object *operation(const struct fg__type *t, const char *action, bool validates)
{
    json_object *op = json_object_new_object();
    fg_json_set_str(op, "operationId", action);
    fg_json_set_str(op, "x-kubernetes-action", action);
    json_object_object_add(op, "x-kubernetes-group-version-kind", gvk(t));
    json_object *params = json_object_new_array();
    static const char *const names[] = { "dryRun", "fieldManager", "fieldValidation" };
    for (size_t i = validates ? 0 : 3; i < 3; i++) {
        json_object *p = json_object_new_object();
        fg_json_set_str(p, "name", names[i]);
        fg_json_set_str(p, "in", "query");
        json_object *schema = json_object_new_object();
        fg_json_set_str(schema, "type", "string");
        json_object_object_add(p, "schema", schema);
        json_object_array_add(params, p);
    }
    json_object_object_add(op, "parameters", params);
    return op;
}

/* Adds t's paths and its schema to the document being built. */
static void add_type(const struct fg__type *t, json_object *paths, json_object *schemas)
{
    char *base = *t->group ? fg_asprintf("/apis/%s/%s%s/%s", t->group, t->version,
                                         t->namespaced ? "/namespaces/{namespace}" : "", t->plural)
                           : fg_asprintf("/api/%s%s/%s", t->version, t->namespaced ? "/namespaces/{namespace}" : "",
                                         t->plural);
    char *item = fg_asprintf("%s/{name}", base);
    json_object *coll = json_object_new_object();
    json_object_object_add(coll, "get", operation(t, "list", false));
    json_object_object_add(coll, "post", operation(t, "post", true));
    json_object_object_add(paths, base, coll);
    json_object *one = json_object_new_object();
    json_object_object_add(one, "get", operation(t, "get", false));
    json_object_object_add(one, "put", operation(t, "put", true));
    json_object_object_add(one, "patch", operation(t, "patch", true));
    json_object_object_add(one, "delete", operation(t, "delete", false));
    json_object_object_add(paths, item, one);
    free(base);
    free(item);

    json_object *schema;
    char *name;
    if (t->schema) {
        name = crd_schema_name(t);
        schema = fg__json_dup(t->schema);
        json_object *props = fg_json_ensure_obj(schema, "properties");
        static const char *const strs[] = { "apiVersion", "kind" };
        for (size_t i = 0; i < 2; i++) {
            json_object *s = json_object_new_object();
            fg_json_set_str(s, "type", "string");
            json_object_object_add(props, strs[i], s);
        }
        json_object *meta = json_object_new_object();
        fg_json_set_str(meta, "$ref", "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        json_object_object_add(props, "metadata", meta);
    } else {
        /* the definition is already in schemas, its references rewritten */
        schema = t->definition ? json_object_get(fg_json_get(schemas, t->definition, NULL)) : NULL;
        if (!schema)
            return;
        name = fg_strdup(t->definition);
    }
    json_object *gvks = json_object_new_array();
    json_object_array_add(gvks, gvk(t));
    json_object_object_add(schema, "x-kubernetes-group-version-kind", gvks);
    json_object_object_add(schemas, name, schema);
    free(name);
}

/* The document of one group/version, or NULL when it serves nothing. */
static json_object *gv_document(const struct fg__registry *reg, const char *group, const char *version)
{
    json_object *paths = json_object_new_object();
    json_object *schemas = fg__json_dup(reg->definitions);
    rewrite_refs(schemas);
    bool any = false;
    for (size_t i = 0; i < reg->n; i++) {
        const struct fg__type *t = reg->types[i];
        if (t->disabled || strcmp(t->group, group) || strcmp(t->version, version))
            continue;
        add_type(t, paths, schemas);
        any = true;
    }
    if (!any) {
        json_object_put(paths);
        json_object_put(schemas);
        return NULL;
    }
    json_object *doc = json_object_new_object();
    fg_json_set_str(doc, "openapi", "3.0.0");
    json_object *info = json_object_new_object();
    fg_json_set_str(info, "title", "Kubernetes");
    fg_json_set_str(info, "version", "v1.32.5");
    json_object_object_add(doc, "info", info);
    json_object_object_add(doc, "paths", paths);
    json_object *components = json_object_new_object();
    json_object_object_add(components, "schemas", schemas);
    json_object_object_add(doc, "components", components);
    return doc;
}

/* Hex digest (first 16 bytes of SHA-256) of a document's text. */
static void doc_hash(json_object *doc, char out[33])
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN, &len);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL))
        abort(); /* SHA-256 is always available */
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static json_object *index_document(const struct fg__registry *reg)
{
    json_object *paths = json_object_new_object();
    for (size_t i = 0; i < reg->n; i++) {
        const struct fg__type *t = reg->types[i];
        char *key = *t->group ? fg_asprintf("apis/%s", t->api_version) : fg_asprintf("api/%s", t->version);
        if (!t->disabled && !fg_json_get(paths, key, NULL)) {
            json_object *doc = gv_document(reg, t->group, t->version);
            char hash[33];
            doc_hash(doc, hash);
            json_object_put(doc);
            char *url = fg_asprintf(V3_PREFIX "/%s?hash=%s", key, hash);
            json_object *entry = json_object_new_object();
            fg_json_set_str(entry, "serverRelativeURL", url);
            json_object_object_add(paths, key, entry);
            free(url);
        }
        free(key);
    }
    json_object *doc = json_object_new_object();
    json_object_object_add(doc, "paths", paths);
    return doc;
}

bool fg__http_openapi(struct fg_apiserver *srv, struct evhttp_request *req, const char *path)
{
    char group[128], version[64];
    json_object *doc = NULL;
    if (!fg_str_has_prefix(path, V3_PREFIX))
        return false;
    const char *rest = path + strlen(V3_PREFIX);
    if (!*rest || !strcmp(rest, "/"))
        doc = index_document(&srv->reg);
    else if (sscanf(rest, "/api/%63[^/]", version) == 1 && strlen(rest) == strlen("/api/") + strlen(version))
        doc = gv_document(&srv->reg, "", version);
    else if (sscanf(rest, "/apis/%127[^/]/%63[^/]", group, version) == 2 &&
             strlen(rest) == strlen("/apis//") + strlen(group) + strlen(version))
        doc = gv_document(&srv->reg, group, version);
    if (!doc) {
        fg__reply_error(req, FG_E_KUBE_NOT_FOUND, "the server could not find the requested resource (%s)", path);
        return true;
    }
    fg__reply_json(req, 200, doc);
    json_object_put(doc);
    return true;
}
