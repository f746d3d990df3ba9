/*
 * audit — one line per resource request, for tests that compare what each identity did with what
 * RBAC grants it (e2e/cluster/test/test_rbac.c).
 *
 * With --audit-log FILE every request that reaches a resource is appended to FILE as it is routed,
 * before it is served or refused, one tab-separated line:
 *
 *   user  verb  group  resource  subresource  namespace  name
 *
 * with "-" for an empty field. The verb is kube's authorization verb: get, list, watch, create,
 * update, patch, delete, deletecollection; as kube-apiserver's request info does, a list or watch
 * whose field selector is exactly metadata.name=NAME names NAME, so that a rule limited to
 * resourceNames can allow it. The user is what the bearer token names: this server
 * authenticates nothing, so a token of the form system:serviceaccount:NS:NAME (the simulated
 * kubelet gives each pod one, for the pod's ServiceAccount) is taken as that identity, and any other
 * request is the cluster's administrator, "admin". The file is line-buffered, so a server killed
 * loses no finished line.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "e2e/apiserver/server.h"

#define SERVICEACCOUNT_PREFIX "system:serviceaccount:"

static const char *verb_of(struct evhttp_request *req, const struct fg__route *route, const struct evkeyvalq *query)
{
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET: {
        if (route->name)
            return "get";
        const char *watch = evhttp_find_header(query, "watch");
        return watch && (!strcmp(watch, "true") || !strcmp(watch, "1")) ? "watch" : "list";
    }
    case EVHTTP_REQ_POST: return "create";
    case EVHTTP_REQ_PUT: return "update";
    case EVHTTP_REQ_PATCH: return "patch";
    case EVHTTP_REQ_DELETE: return route->name ? "delete" : "deletecollection";
    default: return "other";
    }
}

static const char *user_of(struct evhttp_request *req)
{
    const char *token = fg__http_bearer_token(req);
    return token && fg_str_has_prefix(token, SERVICEACCOUNT_PREFIX) && !strpbrk(token, " \t\r\n") ? token : "admin";
}

/* The name a request is about: the path's, or a list's or watch's metadata.name field selector. */
static const char *name_of(const struct fg__route *route, const struct evkeyvalq *query)
{
    static const char by_name[] = "metadata.name=";
    const char *fs = route->name ? NULL : evhttp_find_header(query, "fieldSelector");
    if (fs && fg_str_has_prefix(fs, by_name) && !strchr(fs, ','))
        return fs + strlen(by_name);
    return route->name;
}

static const char *dash(const char *s)
{
    return s && *s ? s : "-";
}

void fg__audit_record(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                      const struct evkeyvalq *query)
{
    if (!srv->audit)
        return;
    fprintf(srv->audit, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", user_of(req), verb_of(req, route, query), dash(route->type->group),
            route->type->plural, dash(route->sub), dash(route->ns), dash(name_of(route, query)));
}
