/*
 * webhook_service — where a webhook's clientConfig.service points, found as kube-apiserver finds it.
 *
 * A webhook named by {namespace, name, path, port (443 unless set)} is called at
 * https://NAME.NAMESPACE.svc:PORT/PATH, and kube-apiserver's dialer resolves that host to an
 * endpoint (its EndpointSlice resolver, k8s.io/apiserver's proxy.ResolveEndpoint): the Service must
 * exist and be of type ClusterIP, NodePort or LoadBalancer; its port numbered PORT is found; of the
 * EndpointSlices labelled kubernetes.io/service-name=NAME in the namespace, the first port whose name
 * is that Service port's name (the endpointslice controller names slice ports after Service ports
 * and gives them the resolved target port's number) and the first endpoint whose conditions.ready
 * is true or absent give ADDRESS:SLICEPORT (addresses[0]). kube picks the slice and the endpoint at
 * random; this takes the first, in key order. The call then dials there while TLS still checks the
 * certificate against the Service's DNS name, as kube's ServerName does.
 * Failures are kube's words: `service "NAME" not found`, `unsupported service type "T"`,
 * `no service port P found for service "NAME"`, `no endpoints available for service "NAME"`.
 */
#include "e2e/apiserver/admit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

#define DEFAULT_PORT 443
#define SERVICE_NAME_LABEL "kubernetes.io/service-name"

/* The Service's port numbered `port` (borrowed), or NULL. */
static json_object *service_port(json_object *svc, int64_t port)
{
    json_object *ports = fg_json_get(svc, "spec", "ports", NULL);
    for (size_t i = 0; i < fg_json_array_len(ports); i++) {
        json_object *p = json_object_array_get_idx(ports, i);
        int64_t number = 0;
        if (fg_json_get_int64(p, &number, "port", NULL) && number == port)
            return p;
    }
    return NULL;
}

static bool ready(json_object *endpoint)
{
    json_object *r = fg_json_get(endpoint, "conditions", "ready", NULL);
    return !r || json_object_get_boolean(r);
}

/* "ADDRESS:PORT" ("[ADDRESS]:PORT" for IPv6) of the slice's first ready endpoint on the port named
 * port_name, or NULL. */
static char *slice_endpoint(json_object *slice, const char *port_name)
{
    json_object *ports = fg_json_get(slice, "ports", NULL), *endpoints = fg_json_get(slice, "endpoints", NULL);
    for (size_t i = 0; i < fg_json_array_len(ports); i++) {
        json_object *p = json_object_array_get_idx(ports, i);
        int64_t number = 0;
        if (!fg_str_eq(fg_json_get_str(p, "name", NULL), port_name) || !fg_json_get_int64(p, &number, "port", NULL))
            continue;
        for (size_t k = 0; k < fg_json_array_len(endpoints); k++) {
            json_object *ep = json_object_array_get_idx(endpoints, k);
            const char *address = json_object_get_string(
                json_object_array_get_idx(fg_json_get(ep, "addresses", NULL), 0));
            if (ready(ep) && address && *address)
                return fg_asprintf(strchr(address, ':') ? "[%s]:%" PRId64 : "%s:%" PRId64, address, number);
        }
    }
    return NULL;
}

/* The endpoint of the Service's port; FG_OK with *endpoint (caller frees), else kube's reason. */
static enum fg_err resolve(struct fg__store *st, const char *ns, const char *name, int64_t port, char **endpoint,
                           char *errmsg)
{
    const struct fg__type *services = fg__registry_find(st->reg, "", "v1", "services");
    const struct fg__type *slices = fg__registry_find(st->reg, "discovery.k8s.io", "v1", "endpointslices");
    const struct fg__entry *svc = services ? fg__store_get(st, services, ns, name) : NULL;
    if (!svc)
        return fg_errmsg(errmsg, FG_E_CONNECT, "service \"%s\" not found", name);
    const char *type = fg_json_get_str(svc->obj, "spec", "type", NULL);
    if (!fg_str_eq(type, "ClusterIP") && !fg_str_eq(type, "NodePort") && !fg_str_eq(type, "LoadBalancer"))
        return fg_errmsg(errmsg, FG_E_CONNECT, "unsupported service type \"%s\"", type ? type : "");
    json_object *svc_port = service_port(svc->obj, port);
    if (!svc_port)
        return fg_errmsg(errmsg, FG_E_CONNECT, "no service port %" PRId64 " found for service \"%s\"", port, name);
    const char *port_name = fg_json_get_str(svc_port, "name", NULL);
    struct fg__bucket *b = slices ? fg__store_bucket(st, slices) : NULL;
    char *prefix = fg_asprintf("%s/", ns);
    *endpoint = NULL;
    for (size_t i = b ? fg__store_lower_bound(b, prefix) : 0;
         b && !*endpoint && i < b->n && fg_str_has_prefix(b->v[i]->key, prefix); i++) {
        json_object *slice = b->v[i]->obj;
        if (fg_str_eq(fg_json_get_str(slice, "metadata", "labels", SERVICE_NAME_LABEL, NULL), name))
            *endpoint = slice_endpoint(slice, port_name ? port_name : "");
    }
    free(prefix);
    return *endpoint ? FG_OK
                     : fg_errmsg(errmsg, FG_E_CONNECT, "no endpoints available for service \"%s\"", name);
}

enum fg_err fg__webhook_service(struct fg__store *st, json_object *service, char **url, char **dial,
                                char *errmsg)
{
    const char *ns = fg_json_get_str(service, "namespace", NULL), *name = fg_json_get_str(service, "name", NULL);
    const char *path = fg_json_get_str(service, "path", NULL);
    int64_t port = DEFAULT_PORT;
    fg_json_get_int64(service, &port, "port", NULL);
    *dial = NULL;
    *url = NULL;
    if (!ns || !*ns || !name || !*name)
        return fg_errmsg(errmsg, FG_E_INVAL, "clientConfig.service needs a namespace and a name");
    *url = fg_asprintf("https://%s.%s.svc:%" PRId64 "%s", name, ns, port, path ? path : "");
    return resolve(st, ns, name, port, dial, errmsg);
}
