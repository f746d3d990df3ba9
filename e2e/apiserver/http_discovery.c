/*
 * http_discovery — legacy API discovery generated from the registry: /api (APIVersions), /apis
 * (APIGroupList), /api/v1 and /apis/G/V (APIResourceList, subresources listed as pods/status).
 * Types added at run time appear at once. The aggregated (apidiscovery.k8s.io/v2) form kubectl
 * prefers is not served; kubectl falls back to these documents.
 */
#include "e2e/apiserver/server.h"

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

static json_object *resource_list(const struct fg__registry *reg, const char *group, const char *version)
{
    static const char *const verbs[] = { "create", "delete", "get", "list", "patch", "update", "watch" };
    json_object *resources = NULL;
    for (size_t i = 0; i < reg->n; i++) {
        const struct fg__type *t = reg->types[i];
        if (strcmp(t->group, group) || strcmp(t->version, version))
            continue;
        if (!resources)
            resources = json_object_new_array();
        json_object *res = resource(t->plural, t->namespaced, t->kind, string_array(verbs, 7));
        if (json_object_array_length(t->short_names))
            json_object_object_add(res, "shortNames", json_object_get(t->short_names));
        json_object_array_add(resources, res);
        for (size_t k = 0; k < t->nsubresources; k++) {
            const char *kind;
            json_object *sub_verbs;
            describe_subresource(t->subresources[k], &kind, &sub_verbs);
            char *name = fg_asprintf("%s/%s", t->plural, t->subresources[k]);
            json_object_array_add(resources, resource(name, t->namespaced, kind ? kind : t->kind, sub_verbs));
            free(name);
        }
    }
    if (!resources)
        return NULL;
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
        bool seen = !*t->group;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(reg->types[j]->api_version, t->api_version);
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

bool fg__http_discovery(struct fg_apiserver *srv, struct evhttp_request *req, const char *path)
{
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
