/*
 * defaults_pod — kube's defaults of a pod spec, for Pods and for the templates of every workload.
 *
 * SetDefaults_PodSpec: dnsPolicy ClusterFirst, restartPolicy Always, securityContext {},
 * terminationGracePeriodSeconds 30, schedulerName default-scheduler. For each container and init
 * container (SetDefaults_Container and what it holds): imagePullPolicy Always for the tag latest or
 * an image with neither tag nor digest, else IfNotPresent; terminationMessagePath
 * /dev/termination-log; terminationMessagePolicy File; ports' protocol TCP; each probe's
 * timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold 3; httpGet path / and
 * scheme HTTP in probes and lifecycle handlers; an env fieldRef's apiVersion v1. The deprecated
 * serviceAccount mirrors serviceAccountName (kube's conversion fills either from the other). A Pod
 * alone (SetDefaults_Pod) also gets enableServiceLinks true, resources.requests filled from
 * resources.limits where a resource has only a limit, hostPort = containerPort under hostNetwork,
 * and serviceAccountName default (the ServiceAccount admission plugin's; its token volume is not
 * added).
 */
#include "e2e/apiserver/defaults.h"

#include <string.h>

#include "base/buf.h"
#include "base/json.h"

static bool is_object(json_object *o)
{
    return json_object_is_type(o, json_type_object);
}

/* kube's parsers.ParseImageName: the tag is what follows the last ':' after the last '/', before any
 * '@digest'; neither tag nor digest means latest. */
static const char *pull_policy(const char *image)
{
    if (!image || !*image)
        return "IfNotPresent"; /* kube cannot parse it and finds no tag */
    const char *at = strchr(image, '@');
    size_t len = at ? (size_t)(at - image) : strlen(image), name_start = 0;
    for (size_t i = 0; i < len; i++)
        if (image[i] == '/')
            name_start = i + 1;
    const char *colon = memchr(image + name_start, ':', len - name_start);
    if (!colon)
        return at ? "IfNotPresent" : "Always";
    size_t tag_len = len - (size_t)(colon + 1 - image);
    return tag_len == 6 && !strncmp(colon + 1, "latest", 6) ? "Always" : "IfNotPresent";
}

/* SetDefaults_HTTPGetAction on handler.httpGet. */
static void http_get(struct fg__cow *c, struct fg__cow_node *handler)
{
    struct fg__cow_node get = fg__cow_child(handler, "httpGet");
    if (!is_object(get.obj))
        return;
    fg__cow_default_str(c, &get, "path", FG__COW_IF_ZERO, "/");
    fg__cow_default_str(c, &get, "scheme", FG__COW_IF_ZERO, "HTTP");
}

static void probe(struct fg__cow *c, struct fg__cow_node *container, const char *key)
{
    struct fg__cow_node p = fg__cow_child(container, key);
    if (!is_object(p.obj))
        return;
    fg__cow_default_int(c, &p, "timeoutSeconds", FG__COW_IF_ZERO, 1);
    fg__cow_default_int(c, &p, "periodSeconds", FG__COW_IF_ZERO, 10);
    fg__cow_default_int(c, &p, "successThreshold", FG__COW_IF_ZERO, 1);
    fg__cow_default_int(c, &p, "failureThreshold", FG__COW_IF_ZERO, 3);
    http_get(c, &p);
}

static void lifecycle(struct fg__cow *c, struct fg__cow_node *container)
{
    struct fg__cow_node lc = fg__cow_child(container, "lifecycle");
    static const char *const hooks[] = { "postStart", "preStop" };
    for (size_t i = 0; is_object(lc.obj) && i < sizeof(hooks) / sizeof(*hooks); i++) {
        struct fg__cow_node h = fg__cow_child(&lc, hooks[i]);
        if (is_object(h.obj))
            http_get(c, &h);
    }
}

static void env_field_refs(struct fg__cow *c, struct fg__cow_node *container)
{
    struct fg__cow_node env = fg__cow_child(container, "env");
    for (size_t i = 0; i < fg__cow_len(&env); i++) {
        struct fg__cow_node var = fg__cow_elem(&env, i);
        struct fg__cow_node from = fg__cow_child(&var, "valueFrom");
        struct fg__cow_node ref = fg__cow_child(&from, "fieldRef");
        if (is_object(ref.obj))
            fg__cow_default_str(c, &ref, "apiVersion", FG__COW_IF_ZERO, "v1");
    }
}

/* SetDefaults_Pod: a resource with a limit and no request gets the limit as its request. */
static void requests_from_limits(struct fg__cow *c, struct fg__cow_node *container)
{
    struct fg__cow_node res = fg__cow_child(container, "resources");
    struct fg__cow_node limits = fg__cow_child(&res, "limits");
    if (!is_object(limits.obj))
        return;
    struct fg__cow_node requests = fg__cow_child(&res, "requests");
    json_object_object_foreach(limits.obj, name, value) {
        if (value && (!is_object(requests.obj) || !json_object_object_get_ex(requests.obj, name, NULL)))
            fg__cow_set(c, &requests, name, json_object_get(value));
    }
}

static void ports(struct fg__cow *c, struct fg__cow_node *container, bool host_network)
{
    struct fg__cow_node list = fg__cow_child(container, "ports");
    for (size_t i = 0; i < fg__cow_len(&list); i++) {
        struct fg__cow_node port = fg__cow_elem(&list, i);
        if (!is_object(port.obj))
            continue;
        fg__cow_default_str(c, &port, "protocol", FG__COW_IF_ZERO, "TCP");
        int64_t host_port = 0;
        json_object *container_port = fg_json_get(port.obj, "containerPort", NULL);
        fg_json_get_int64(port.obj, &host_port, "hostPort", NULL);
        if (host_network && host_port == 0 && container_port)
            fg__cow_set(c, &port, "hostPort", json_object_get(container_port));
    }
}

static void container(struct fg__cow *c, struct fg__cow_node *ct, bool pod, bool host_network)
{
    const char *image = fg_json_get_str(ct->obj, "image", NULL);
    fg__cow_default_str(c, ct, "imagePullPolicy", FG__COW_IF_ZERO, pull_policy(image));
    fg__cow_default_str(c, ct, "terminationMessagePath", FG__COW_IF_ZERO, "/dev/termination-log");
    fg__cow_default_str(c, ct, "terminationMessagePolicy", FG__COW_IF_ZERO, "File");
    ports(c, ct, pod && host_network);
    static const char *const probes[] = { "livenessProbe", "readinessProbe", "startupProbe" };
    for (size_t i = 0; i < sizeof(probes) / sizeof(*probes); i++)
        probe(c, ct, probes[i]);
    lifecycle(c, ct);
    env_field_refs(c, ct);
    if (pod)
        requests_from_limits(c, ct);
}

/* serviceAccountName from the deprecated serviceAccount when empty, and serviceAccount = the name, as
 * kube's conversions leave them; a Pod with neither runs as "default". */
static void service_account(struct fg__cow *c, struct fg__cow_node *spec, bool pod)
{
    const char *name = fg_json_get_str(spec->obj, "serviceAccountName", NULL);
    const char *deprecated = fg_json_get_str(spec->obj, "serviceAccount", NULL);
    if ((!name || !*name) && deprecated && *deprecated)
        name = deprecated;
    if ((!name || !*name) && pod)
        name = "default";
    if (!name || !*name)
        return;
    json_object *value = json_object_new_string(name);
    if (!fg_str_eq(fg_json_get_str(spec->obj, "serviceAccountName", NULL), name))
        fg__cow_set(c, spec, "serviceAccountName", json_object_get(value));
    if (!fg_str_eq(deprecated, name))
        fg__cow_set(c, spec, "serviceAccount", json_object_get(value));
    json_object_put(value);
}

void fg__defaults_pod_spec(struct fg__cow *c, struct fg__cow_node *spec, bool pod)
{
    if (spec->obj && !is_object(spec->obj))
        return;
    fg__cow_default_str(c, spec, "dnsPolicy", FG__COW_IF_ZERO, "ClusterFirst");
    fg__cow_default_str(c, spec, "restartPolicy", FG__COW_IF_ZERO, "Always");
    struct fg__cow_node security = fg__cow_child(spec, "securityContext");
    if (!security.obj)
        fg__cow_own(c, &security); /* {} */
    fg__cow_default_int(c, spec, "terminationGracePeriodSeconds", FG__COW_IF_NIL, 30);
    fg__cow_default_str(c, spec, "schedulerName", FG__COW_IF_ZERO, "default-scheduler");
    service_account(c, spec, pod);
    if (pod)
        fg__cow_default_bool(c, spec, "enableServiceLinks", true);
    bool host_network = json_object_get_boolean(fg_json_get(spec->obj, "hostNetwork", NULL));
    static const char *const lists[] = { "containers", "initContainers" };
    for (size_t l = 0; l < sizeof(lists) / sizeof(*lists); l++) {
        struct fg__cow_node list = fg__cow_child(spec, lists[l]);
        for (size_t i = 0; i < fg__cow_len(&list); i++) {
            struct fg__cow_node ct = fg__cow_elem(&list, i);
            if (is_object(ct.obj))
                container(c, &ct, pod, host_network);
        }
    }
}
