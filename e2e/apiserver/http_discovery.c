/*
 * http_discovery — API discovery generated from the registry. Legacy: /api (APIVersions), /apis
 * (APIGroupList), /api/v1 and /apis/G/V (APIResourceList, subresources listed as pods/status).
 * Aggregated (apidiscovery.k8s.io/v2, what kubectl asks for first): /api and /apis answer an
 * APIGroupDiscoveryList — /api's one item is the core group "" — with that exact content type,
 * since kubectl reads the same body under plain application/json as the legacy form. Types added
 * at run time (CRDs) appear at once; disabled ones do not. A type without a singular name gets its
 * lowercased kind, as kube-apiserver fills it. Within a group/version, resources are listed sorted
 * by name as kube-apiserver installs them, which is the order `kubectl get all` prints kinds in.
 */
#include "e2e/apiserver/server.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

static json_object *string_array(const char *const *v, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

#define AGGREGATED_TYPE "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

static const char *const object_verbs[] = { "create", "delete", "get", "list", "patch", "update", "watch" };

static char *singular(const struct fg__type *t)
{
    char *s = fg_strdup(*t->singular ? t->singular : t->kind);
    for (char *c = s; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return s;
}

static json_object *resource(const char *name, bool namespaced, const char *kind, json_object *verbs)
{
    json_object *res = json_object_new_object();
    json_object_object_add(res, "name", json_object_new_string(name));
    json_object_object_add(res, "singularName", json_object_new_string(""));
    json_object_object_add(res, "namespaced", json_object_new_boolean(namespaced));
    json_object_object_add(res, "kind", json_object_new_string(kind));
    json_object_object_add(res, "verbs", verbs);
    return res;
}

/* Kind and verbs of a subresource as kube-apiserver lists them (kind NULL: the parent's kind). */
static void describe_subresource(const char *sub, const char **kind, json_object **verbs)
{
    static const char *const update_verbs[] = { "get", "patch", "update" };
    static const char *const create_verbs[] = { "create" };
    *kind = NULL;
    if (!strcmp(sub, "binding"))
        *kind = "Binding";
    else if (!strcmp(sub, "eviction"))
        *kind = "Eviction";
    *verbs = *kind ? string_array(create_verbs, 1) : string_array(update_verbs, 3);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(fg_json_get_str(*(json_object *const *)a, "name", NULL),
                  fg_json_get_str(*(json_object *const *)b, "name", NULL));
}

static int by_resource(const void *a, const void *b)
{
    return strcmp(fg_json_get_str(*(json_object *const *)a, "resource", NULL),
                  fg_json_get_str(*(json_object *const *)b, "resource", NULL));
}

static json_object *resource_list(const struct fg__registry *reg, const char *group, const char *version)
{
    json_object *resources = NULL;
    for (size_t i = 0; i < reg->n; i++) {
        const struct fg__type *t = reg->types[i];
        if (t->disabled || strcmp(t->group, group) || strcmp(t->version, version))
            continue;
        if (!resources)
            resources = json_object_new_array();
        json_object *res = resource(t->plural, t->namespaced, t->kind, string_array(object_verbs, 7));
        if (json_object_array_length(t->short_names))
            json_object_object_add(res, "shortNames", json_object_get(t->short_names));
        if (json_object_array_length(t->categories))
            json_object_object_add(res, "categories", json_object_get(t->categories));
        char *one = singular(t);
        fg_json_set_str(res, "singularName", one);
        free(one);
        json_object_array_add(resources, res);
        for (size_t k = 0; k < t->nsubresources; k++) {
            const char *kind;
            json_object *sub_verbs;
            describe_subresource(t->subresources[k], &kind, &sub_verbs);
            char *name = fg_asprintf("%s/%s", t->plural, t->subresources[k]);
            json_object *sub = resource(name, t->namespaced, kind ? kind : t->kind, sub_verbs);
            if (kind && !strcmp(kind, "Eviction")) {   /* kubectl drain looks for it there */
                fg_json_set_str(sub, "group", "policy");
                fg_json_set_str(sub, "version", "v1");
            }
            json_object_array_add(resources, sub);
            free(name);
        }
    }
    if (!resources)
        return NULL;
    json_object_array_sort(resources, by_name);
    json_object *list = json_object_new_object();
    json_object_object_add(list, "kind", json_object_new_string("APIResourceList"));
    json_object_object_add(list, "apiVersion", json_object_new_string("v1"));
    char *gv = *group ? fg_asprintf("%s/%s", group, version) : fg_strdup(version);
    json_object_object_add(list, "groupVersion", json_object_new_string(gv));
    free(gv);
    json_object_object_add(list, "resources", resources);
    return list;
}

static json_object *group_list(const struct fg__registry *reg)
{
    json_object *groups = json_object_new_array();
    for (size_t i = 0; i < reg->n; i++) {
        const struct fg__type *t = reg->types[i];
        bool seen = !*t->group || t->disabled;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !reg->types[j]->disabled && !strcmp(reg->types[j]->api_version, t->api_version);
        if (seen)
            continue;
        json_object *gv = json_object_new_object();
        json_object_object_add(gv, "groupVersion", json_object_new_string(t->api_version));
        json_object_object_add(gv, "version", json_object_new_string(t->version));
        json_object *g = NULL;
        for (size_t k = 0; k < json_object_array_length(groups) && !g; k++) {
            json_object *cand = json_object_array_get_idx(groups, k);
            if (fg_str_eq(fg_json_get_str(cand, "name", NULL), t->group))
                g = cand;
        }
        if (!g) {
            g = json_object_new_object();
            json_object_object_add(g, "name", json_object_new_string(t->group));
            json_object_object_add(g, "versions", json_object_new_array());
            json_object_object_add(g, "preferredVersion", json_object_get(gv));
            json_object_array_add(groups, g);
        }
        json_object_array_add(fg_json_get(g, "versions", NULL), gv);
    }
    json_object *list = json_object_new_object();
    json_object_object_add(list, "kind", json_object_new_string("APIGroupList"));
    json_object_object_add(list, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(list, "groups", groups);
    return list;
}

static json_object *gvk(const char *group, const char *version, const char *kind)
{
    json_object *o = json_object_new_object();
    fg_json_set_str(o, "group", group);
    fg_json_set_str(o, "version", version);
    fg_json_set_str(o, "kind", kind);
    return o;
}

/* An APIResourceDiscovery for t. */
static json_object *aggregated_resource(const struct fg__type *t)
{
    json_object *res = json_object_new_object();
    fg_json_set_str(res, "resource", t->plural);
    json_object_object_add(res, "responseKind", gvk(t->group, t->version, t->kind));
    fg_json_set_str(res, "scope", t->namespaced ? "Namespaced" : "Cluster");
    char *one = singular(t);
    fg_json_set_str(res, "singularResource", one);
    free(one);
    json_object_object_add(res, "verbs", string_array(object_verbs, 7));
    if (json_object_array_length(t->short_names))
        json_object_object_add(res, "shortNames", json_object_get(t->short_names));
    if (json_object_array_length(t->categories))
        json_object_object_add(res, "categories", json_object_get(t->categories));
    json_object *subs = json_object_new_array();
    for (size_t k = 0; k < t->nsubresources; k++) {
        const char *kind;
        json_object *verbs;
        describe_subresource(t->subresources[k], &kind, &verbs);
        json_object *sub = json_object_new_object();
        fg_json_set_str(sub, "subresource", t->subresources[k]);
        json_object_object_add(sub, "responseKind", kind ? gvk(!strcmp(kind, "Eviction") ? "policy" : "",
                                                               "v1", kind)
                                                         : gvk(t->group, t->version, t->kind));
        json_object_object_add(sub, "verbs", verbs);
        json_object_array_add(subs, sub);
    }
    json_object_object_add(res, "subresources", subs);
    return res;
}

/* The APIGroupDiscoveryList of the core group (core) or of every named group. */
static json_object *aggregated_list(const struct fg__registry *reg, bool core)
{
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < reg->n; i++) {
        const struct fg__type *t = reg->types[i];
        if (t->disabled || core != !*t->group)
            continue;
        json_object *group = NULL, *version = NULL;
        for (size_t g = 0; g < json_object_array_length(items) && !group; g++) {
            json_object *cand = json_object_array_get_idx(items, g);
            if (fg_str_eq(fg_json_get_str(cand, "metadata", "name", NULL), t->group))
                group = cand;
        }
        if (!group) {
            group = json_object_new_object();
            fg_json_set_str(fg_json_ensure_obj(group, "metadata"), "name", t->group);
            json_object_object_add(group, "versions", json_object_new_array());
            json_object_array_add(items, group);
        }
        json_object *versions = fg_json_get(group, "versions", NULL);
        for (size_t v = 0; v < json_object_array_length(versions) && !version; v++) {
            json_object *cand = json_object_array_get_idx(versions, v);
            if (fg_str_eq(fg_json_get_str(cand, "version", NULL), t->version))
                version = cand;
        }
        if (!version) {
            version = json_object_new_object();
            fg_json_set_str(version, "version", t->version);
            json_object_object_add(version, "resources", json_object_new_array());
            fg_json_set_str(version, "freshness", "Current");
            json_object_array_add(versions, version);
        }
        json_object_array_add(fg_json_get(version, "resources", NULL), aggregated_resource(t));
    }
    for (size_t g = 0; g < json_object_array_length(items); g++) {
        json_object *versions = fg_json_get(json_object_array_get_idx(items, g), "versions", NULL);
        for (size_t v = 0; v < json_object_array_length(versions); v++)
            json_object_array_sort(fg_json_get(json_object_array_get_idx(versions, v), "resources", NULL), by_resource);
    }
    json_object *list = json_object_new_object();
    fg_json_set_str(list, "kind", "APIGroupDiscoveryList");
    fg_json_set_str(list, "apiVersion", "apidiscovery.k8s.io/v2");
    json_object_object_add(list, "metadata", json_object_new_object());
    json_object_object_add(list, "items", items);
    return list;
}

static bool wants_aggregated(struct evhttp_request *req)
{
    const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
    return accept && strstr(accept, "as=APIGroupDiscoveryList");
}

static void reply_aggregated(struct evhttp_request *req, json_object *doc)
{
    fg__reply_json_as(req, 200, doc, AGGREGATED_TYPE);
}

bool fg__http_discovery(struct fg_apiserver *srv, struct evhttp_request *req, const char *path)
{
    bool core = !strcmp(path, "/api") || !strcmp(path, "/api/");
    if ((core || !strcmp(path, "/apis") || !strcmp(path, "/apis/")) && wants_aggregated(req)) {
        json_object *list = aggregated_list(&srv->reg, core);
        reply_aggregated(req, list);
        json_object_put(list);
        return true;
    }
    json_object *doc = NULL;
    char group[128], version[64];
    if (!strcmp(path, "/api") || !strcmp(path, "/api/")) {
        doc = json_object_new_object();
        json_object_object_add(doc, "kind", json_object_new_string("APIVersions"));
        json_object *versions = json_object_new_array();
        json_object_array_add(versions, json_object_new_string("v1"));
        json_object_object_add(doc, "versions", versions);
    } else if (!strcmp(path, "/apis") || !strcmp(path, "/apis/")) {
        doc = group_list(&srv->reg);
    } else if (!strcmp(path, "/api/v1") || !strcmp(path, "/api/v1/")) {
        doc = resource_list(&srv->reg, "", "v1");
    } else if (sscanf(path, "/apis/%127[^/]/%63[^/]", group, version) == 2 &&
               strlen(path) <= strlen("/apis//") + strlen(group) + strlen(version)) {
        doc = resource_list(&srv->reg, group, version);
    } else {
        return false;
    }
    if (!doc)
        return false;
    fg__reply_json(req, 200, doc);
    json_object_put(doc);
    return true;
}
