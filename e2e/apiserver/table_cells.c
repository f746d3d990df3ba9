/*
 * table_cells — the Table cells kube-apiserver's printers derive from several fields.
 *
 * A column whose `compute` names one of the functions below gets its cell from it; the function
 * may read the column's own `jsonPath` (where the data sits) so one function serves several kinds.
 * Each mirrors the printer in kubernetes/pkg/printers/internalversion: a pod's ready count, status
 * (Terminating while it is being deleted) and restarts, a node's status and roles, a workload's
 * ready replicas, an event's object, the length of a list, a label map or label selector as kubectl
 * formats them, a binding's role and subjects, a quota's requests and limits, a Service's external
 * IPs and ports, and the addresses of Endpoints and EndpointSlices (three at most, then "+ N
 * more..."). A cell is a new json-c value, or NULL (kubectl prints <none>).
 */
#include "e2e/apiserver/server.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/apiserver/jsonpath.h"

#define MORE_MAX 3

typedef json_object *cell_fn(json_object *column, json_object *obj);

/* The value at the column's jsonPath (borrowed from a temporary the caller puts), or NULL. */
static json_object *at_path(json_object *column, json_object *obj, json_object **found)
{
    const char *path = fg_json_get_str(column, "jsonPath", NULL);
    *found = fg__jsonpath_eval(obj, path ? path : "");
    return json_object_array_get_idx(*found, 0);
}

/* Joins the strings of items (taken) with sep; "+ N more..." as kubectl's listWithMoreString when
 * total > shown; `empty` (when not NULL) for no items. */
static json_object *join_take(json_object *items, const char *sep, size_t total, const char *empty)
{
    struct fg_buf b = FG_BUF_INIT;
    size_t n = fg_json_array_len(items);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        ok = !fg_buf_puts(&b, i ? sep : "") && !fg_buf_puts(&b, json_object_get_string(json_object_array_get_idx(items, i)));
    if (ok && total > n)
        ok = !fg_buf_printf(&b, " + %zu more...", total - n);
    json_object *cell = json_object_new_string(b.len || !empty ? fg_buf_str(&b) : empty);
    fg_buf_cleanup(&b);
    json_object_put(items);
    return cell;
}

static json_object *pod_ready(json_object *column, json_object *obj)
{
    (void)column;
    json_object *cs = fg_json_get(obj, "status", "containerStatuses", NULL);
    size_t ready = 0;
    for (size_t i = 0; i < fg_json_array_len(cs); i++)
        ready += json_object_get_boolean(fg_json_get(json_object_array_get_idx(cs, i), "ready", NULL));
    char s[48];
    snprintf(s, sizeof(s), "%zu/%zu", ready, fg_json_array_len(fg_json_get(obj, "spec", "containers", NULL)));
    return json_object_new_string(s);
}

/* kube's pod STATUS: status.reason, else the phase; Terminating once deletionTimestamp is set on a
 * pod that has not finished (container reasons are not looked at). */
static json_object *pod_status(json_object *column, json_object *obj)
{
    (void)column;
    const char *phase = fg_json_get_str(obj, "status", "phase", NULL);
    const char *reason = fg_json_get_str(obj, "status", "reason", NULL);
    if (fg_json_get(obj, "metadata", "deletionTimestamp", NULL) && !fg_str_eq(phase, "Succeeded") &&
        !fg_str_eq(phase, "Failed"))
        reason = "Terminating";
    else if (!reason || !*reason)
        reason = phase;
    return reason ? json_object_new_string(reason) : NULL;
}

static json_object *pod_restarts(json_object *column, json_object *obj)
{
    (void)column;
    json_object *cs = fg_json_get(obj, "status", "containerStatuses", NULL);
    int64_t total = 0;
    for (size_t i = 0; i < fg_json_array_len(cs); i++) {
        int64_t n = 0;
        fg_json_get_int64(json_object_array_get_idx(cs, i), &n, "restartCount", NULL);
        total += n;
    }
    return json_object_new_int64(total);
}

static json_object *node_status(json_object *column, json_object *obj)
{
    (void)column;
    json_object *ready = fg__jsonpath_eval(obj, ".status.conditions[?(@.type==\"Ready\")].status");
    bool ok = fg_str_eq(json_object_get_string(json_object_array_get_idx(ready, 0)), "True");
    json_object_put(ready);
    char s[64];
    snprintf(s, sizeof(s), "%s%s", ok ? "Ready" : "NotReady",
             json_object_get_boolean(fg_json_get(obj, "spec", "unschedulable", NULL)) ? ",SchedulingDisabled" : "");
    return json_object_new_string(s);
}

static json_object *node_roles(json_object *column, json_object *obj)
{
    (void)column;
    static const char prefix[] = "node-role.kubernetes.io/";
    json_object *roles = json_object_new_array();
    json_object *labels = fg_json_get(obj, "metadata", "labels", NULL);
    if (json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, key, val) {
            (void)val;
            if (fg_str_has_prefix(key, prefix))
                json_object_array_add(roles, json_object_new_string(key + sizeof(prefix) - 1));
        }
    }
    return join_take(roles, ",", 0, "<none>");
}

static json_object *replicas_ready(json_object *column, json_object *obj)
{
    (void)column;
    int64_t ready = 0, want = 0;
    fg_json_get_int64(obj, &ready, "status", "readyReplicas", NULL);
    fg_json_get_int64(obj, &want, "spec", "replicas", NULL);
    char s[48];
    snprintf(s, sizeof(s), "%lld/%lld", (long long)ready, (long long)want);
    return json_object_new_string(s);
}

static json_object *involved_object(json_object *column, json_object *obj)
{
    (void)column;
    const char *kind = fg_json_get_str(obj, "involvedObject", "kind", NULL);
    const char *name = fg_json_get_str(obj, "involvedObject", "name", NULL);
    char s[320];
    snprintf(s, sizeof(s), "%s/%s", kind ? kind : "", name ? name : "");
    for (char *c = s; *c && *c != '/'; c++)
        *c = (char)tolower((unsigned char)*c);
    return json_object_new_string(s);
}

/* The number of items of the list at jsonPath (0 when absent): webhooks, a ServiceAccount's secrets. */
static json_object *count(json_object *column, json_object *obj)
{
    json_object *found;
    json_object *list = at_path(column, obj, &found);
    json_object *cell = json_object_new_int64((int64_t)fg_json_array_len(list));
    json_object_put(found);
    return cell;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(json_object_get_string(*(json_object *const *)a), json_object_get_string(*(json_object *const *)b));
}

/* Appends "key=value" for each member of map (when it is an object) to items. */
static void add_pairs(json_object *items, json_object *map)
{
    if (!json_object_is_type(map, json_type_object))
        return;
    json_object_object_foreach(map, key, val) {
        char *kv = fg_asprintf("%s=%s", key, json_object_get_string(val));
        json_object_array_add(items, json_object_new_string(kv));
        free(kv);
    }
}

/* labels.FormatLabels of the map at jsonPath: k=v sorted, comma-separated, <none> when empty. */
static json_object *label_map(json_object *column, json_object *obj)
{
    json_object *found;
    json_object *map = at_path(column, obj, &found);
    json_object *items = json_object_new_array();
    add_pairs(items, map);
    json_object_array_sort(items, by_string);
    json_object *cell = join_take(items, ",", 0, "<none>");
    json_object_put(found);
    return cell;
}

/* One matchExpressions requirement as labels.Selector prints it. */
static char *requirement(json_object *req)
{
    const char *key = fg_json_get_str(req, "key", NULL), *op = fg_json_get_str(req, "operator", NULL);
    key = key ? key : "";
    if (fg_str_eq(op, "Exists"))
        return fg_strdup(key);
    if (fg_str_eq(op, "DoesNotExist"))
        return fg_asprintf("!%s", key);
    json_object *values = json_object_new_array();
    json_object *given = fg_json_get(req, "values", NULL);
    for (size_t i = 0; i < fg_json_array_len(given); i++)
        json_object_array_add(values, json_object_get(json_object_array_get_idx(given, i)));
    json_object_array_sort(values, by_string);
    json_object *list = join_take(values, ",", 0, NULL);
    char *s = fg_asprintf("%s %s (%s)", key, fg_str_eq(op, "NotIn") ? "notin" : "in", json_object_get_string(list));
    json_object_put(list);
    return s;
}

/* metav1.FormatLabelSelector of the selector at jsonPath: requirements sorted by key, <none> when empty. */
static json_object *label_selector(json_object *column, json_object *obj)
{
    json_object *found;
    json_object *sel = at_path(column, obj, &found);
    json_object *items = json_object_new_array();
    add_pairs(items, fg_json_get(sel, "matchLabels", NULL));
    json_object *exprs = fg_json_get(sel, "matchExpressions", NULL);
    for (size_t i = 0; i < fg_json_array_len(exprs); i++) {
        char *r = requirement(json_object_array_get_idx(exprs, i));
        json_object_array_add(items, json_object_new_string(r));
        free(r);
    }
    json_object_array_sort(items, by_string);
    json_object *cell = join_take(items, ",", 0, "<none>");
    json_object_put(found);
    return cell;
}

static json_object *binding_role(json_object *column, json_object *obj)
{
    (void)column;
    const char *kind = fg_json_get_str(obj, "roleRef", "kind", NULL), *name = fg_json_get_str(obj, "roleRef", "name", NULL);
    char *s = fg_asprintf("%s/%s", kind ? kind : "", name ? name : "");
    json_object *cell = json_object_new_string(s);
    free(s);
    return cell;
}

/* rbac.SubjectsStrings for one subject kind, joined by ", " (ServiceAccounts as namespace/name). */
static json_object *subjects_of(json_object *obj, const char *kind)
{
    json_object *subjects = fg_json_get(obj, "subjects", NULL);
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(subjects); i++) {
        json_object *s = json_object_array_get_idx(subjects, i);
        if (!fg_str_eq(fg_json_get_str(s, "kind", NULL), kind))
            continue;
        const char *name = fg_json_get_str(s, "name", NULL), *ns = fg_json_get_str(s, "namespace", NULL);
        char *one = !strcmp(kind, "ServiceAccount") ? fg_asprintf("%s/%s", ns ? ns : "", name ? name : "")
                                                   : fg_strdup(name ? name : "");
        json_object_array_add(items, json_object_new_string(one));
        free(one);
    }
    return join_take(items, ", ", 0, NULL);
}

static json_object *binding_users(json_object *column, json_object *obj)
{
    (void)column;
    return subjects_of(obj, "User");
}

static json_object *binding_groups(json_object *column, json_object *obj)
{
    (void)column;
    return subjects_of(obj, "Group");
}

static json_object *binding_service_accounts(json_object *column, json_object *obj)
{
    (void)column;
    return subjects_of(obj, "ServiceAccount");
}

/* "resource: used/hard, ..." over status.hard, sorted; limits.* names go to the Limit column. */
static json_object *quota(json_object *obj, bool limits)
{
    json_object *hard = fg_json_get(obj, "status", "hard", NULL);
    json_object *items = json_object_new_array();
    if (json_object_is_type(hard, json_type_object)) {
        json_object_object_foreach(hard, name, val) {
            if (fg_str_has_prefix(name, "limits.") != limits)
                continue;
            const char *used = fg_json_get_str(obj, "status", "used", name, NULL);
            char *s = fg_asprintf("%s: %s/%s", name, used ? used : "0", json_object_get_string(val));
            json_object_array_add(items, json_object_new_string(s));
            free(s);
        }
    }
    json_object_array_sort(items, by_string);
    return join_take(items, ", ", 0, NULL);
}

static json_object *quota_request(json_object *column, json_object *obj)
{
    (void)column;
    return quota(obj, false);
}

static json_object *quota_limit(json_object *column, json_object *obj)
{
    (void)column;
    return quota(obj, true);
}

/* Appends item while fewer than MORE_MAX are shown; counts it either way. */
static void add_limited(json_object *items, size_t *total, char *item)
{
    if (json_object_array_length(items) < MORE_MAX)
        json_object_array_add(items, json_object_new_string(item));
    (*total)++;
    free(item);
}

/* formatEndpoints: ip:port for every port and address of every subset (ip alone without ports). */
static json_object *endpoints(json_object *column, json_object *obj)
{
    (void)column;
    json_object *subsets = fg_json_get(obj, "subsets", NULL);
    if (!fg_json_array_len(subsets))
        return json_object_new_string("<none>");
    json_object *items = json_object_new_array();
    size_t total = 0;
    for (size_t i = 0; i < fg_json_array_len(subsets); i++) {
        json_object *ss = json_object_array_get_idx(subsets, i);
        json_object *addrs = fg_json_get(ss, "addresses", NULL), *ports = fg_json_get(ss, "ports", NULL);
        for (size_t p = 0; p < (fg_json_array_len(ports) ? fg_json_array_len(ports) : 1); p++) {
            int64_t port = 0;
            bool has_port = fg_json_array_len(ports) && fg_json_get_int64(json_object_array_get_idx(ports, p), &port, "port", NULL);
            for (size_t a = 0; a < fg_json_array_len(addrs); a++) {
                const char *ip = fg_json_get_str(json_object_array_get_idx(addrs, a), "ip", NULL);
                bool v6 = ip && strchr(ip, ':');
                add_limited(items, &total, has_port ? fg_asprintf(v6 ? "[%s]:%lld" : "%s:%lld", ip ? ip : "", (long long)port)
                                                    : fg_strdup(ip ? ip : ""));
            }
        }
    }
    return join_take(items, ",", total, NULL);
}

/* formatDiscoveryPorts: each port's number (its name, or "*", when it has none); <unset> when none. */
static json_object *slice_ports(json_object *column, json_object *obj)
{
    (void)column;
    json_object *ports = fg_json_get(obj, "ports", NULL);
    json_object *items = json_object_new_array();
    size_t total = 0;
    for (size_t i = 0; i < fg_json_array_len(ports); i++) {
        json_object *p = json_object_array_get_idx(ports, i);
        int64_t port = 0;
        const char *name = fg_json_get_str(p, "name", NULL);
        add_limited(items, &total, fg_json_get_int64(p, &port, "port", NULL) ? fg_asprintf("%lld", (long long)port)
                                   : fg_strdup(name ? name : "*"));
    }
    return join_take(items, ",", total, "<unset>");
}

/* formatDiscoveryEndpoints: every address of every endpoint; <unset> when none. */
static json_object *slice_endpoints(json_object *column, json_object *obj)
{
    (void)column;
    json_object *eps = fg_json_get(obj, "endpoints", NULL);
    json_object *items = json_object_new_array();
    size_t total = 0;
    for (size_t i = 0; i < fg_json_array_len(eps); i++) {
        json_object *addrs = fg_json_get(json_object_array_get_idx(eps, i), "addresses", NULL);
        for (size_t a = 0; a < fg_json_array_len(addrs); a++)
            add_limited(items, &total, fg_strdup(json_object_get_string(json_object_array_get_idx(addrs, a))));
    }
    return join_take(items, ",", total, "<unset>");
}

/* The strings of list joined by "," (the caller frees), or NULL when there are none. */
static char *joined_strings(json_object *list)
{
    if (!fg_json_array_len(list))
        return NULL;
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(list); i++)
        json_object_array_add(items, json_object_get(json_object_array_get_idx(list, i)));
    json_object *cell = join_take(items, ",", 0, NULL);
    char *s = fg_strdup(json_object_get_string(cell));
    json_object_put(cell);
    return s;
}

/* getServiceExternalIP: spec.externalIPs, and a LoadBalancer's ingress addresses (in full: kube's
 * server-side Tables are generated wide, so its 16-character cut never applies to them). */
static json_object *service_external_ip(json_object *column, json_object *obj)
{
    (void)column;
    const char *type = fg_json_get_str(obj, "spec", "type", NULL);
    char *external = joined_strings(fg_json_get(obj, "spec", "externalIPs", NULL));
    json_object *cell = NULL;
    if (fg_str_eq(type, "ClusterIP") || fg_str_eq(type, "NodePort")) {
        cell = json_object_new_string(external ? external : "<none>");
    } else if (fg_str_eq(type, "ExternalName")) {
        const char *name = fg_json_get_str(obj, "spec", "externalName", NULL);
        cell = json_object_new_string(name ? name : "");
    } else if (fg_str_eq(type, "LoadBalancer")) {
        json_object *ingress = fg_json_get(obj, "status", "loadBalancer", "ingress", NULL);
        json_object *items = json_object_new_array();
        for (size_t i = 0; i < fg_json_array_len(ingress); i++) {
            json_object *in = json_object_array_get_idx(ingress, i);
            const char *ip = fg_json_get_str(in, "ip", NULL), *host = fg_json_get_str(in, "hostname", NULL);
            if (ip || host)
                json_object_array_add(items, json_object_new_string(ip ? ip : host));
        }
        json_object *lb = join_take(items, ",", 0, NULL);
        char *lbs = fg_strdup(json_object_get_string(lb));
        json_object_put(lb);
        char *all = external ? fg_asprintf("%s%s%s", lbs, *lbs ? "," : "", external) : NULL;
        cell = json_object_new_string(all ? all : *lbs ? lbs : "<pending>");
        free(all);
        free(lbs);
    } else {
        cell = json_object_new_string("<unknown>");
    }
    free(external);
    return cell;
}

/* makePortString: port/protocol, port:nodePort/protocol when a node port is set; <none> when none. */
static json_object *service_ports(json_object *column, json_object *obj)
{
    (void)column;
    json_object *ports = fg_json_get(obj, "spec", "ports", NULL);
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(ports); i++) {
        json_object *p = json_object_array_get_idx(ports, i);
        int64_t port = 0, node_port = 0;
        fg_json_get_int64(p, &port, "port", NULL);
        fg_json_get_int64(p, &node_port, "nodePort", NULL);
        const char *proto = fg_json_get_str(p, "protocol", NULL);
        char *one = node_port > 0 ? fg_asprintf("%lld:%lld/%s", (long long)port, (long long)node_port, proto ? proto : "")
                                  : fg_asprintf("%lld/%s", (long long)port, proto ? proto : "");
        json_object_array_add(items, json_object_new_string(one));
        free(one);
    }
    return join_take(items, ",", 0, "<none>");
}

static bool has_condition(json_object *obj, const char *type)
{
    json_object *conds = fg_json_get(obj, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), type) && fg_str_eq(fg_json_get_str(c, "status", NULL), "True"))
            return true;
    }
    return false;
}

/* kube's Job STATUS: the first of Complete, Failed, Terminating, Suspended, FailureTarget,
 * SuccessCriteriaMet that holds, else Running. */
static json_object *job_status(json_object *column, json_object *obj)
{
    (void)column;
    static const char *const order[] = { "Complete", "Failed", NULL, "Suspended", "FailureTarget", "SuccessCriteriaMet" };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!order[i] && fg_json_get(obj, "metadata", "deletionTimestamp", NULL))
            return json_object_new_string("Terminating");
        if (order[i] && has_condition(obj, order[i]))
            return json_object_new_string(order[i]);
    }
    return json_object_new_string("Running");
}

/* COMPLETIONS: succeeded/completions, or "succeeded/1" and " of parallelism" when above 1. */
static json_object *job_completions(json_object *column, json_object *obj)
{
    (void)column;
    int64_t succeeded = 0, completions = 0, parallelism = 0;
    fg_json_get_int64(obj, &succeeded, "status", "succeeded", NULL);
    char out[64];
    if (fg_json_get_int64(obj, &completions, "spec", "completions", NULL))
        snprintf(out, sizeof out, "%lld/%lld", (long long)succeeded, (long long)completions);
    else if (fg_json_get_int64(obj, &parallelism, "spec", "parallelism", NULL) && parallelism > 1)
        snprintf(out, sizeof out, "%lld/1 of %lld", (long long)succeeded, (long long)parallelism);
    else
        snprintf(out, sizeof out, "%lld/1", (long long)succeeded);
    return json_object_new_string(out);
}

/* DURATION: from startTime to completionTime, or to now while it runs; empty before it starts. */
static json_object *job_duration(json_object *column, json_object *obj)
{
    (void)column;
    int64_t start, end;
    if (!fg_time_parse(fg_json_get_str(obj, "status", "startTime", NULL), &start))
        return json_object_new_string("");
    if (!fg_time_parse(fg_json_get_str(obj, "status", "completionTime", NULL), &end))
        end = fg_clock_wall_ms();
    return fg__human_duration((end - start) / 1000);
}

static const struct {
    const char *name;
    cell_fn *fn;
} cells[] = {
    { "jobStatus", job_status },
    { "jobCompletions", job_completions },
    { "jobDuration", job_duration },
    { "podReady", pod_ready },
    { "podRestarts", pod_restarts },
    { "podStatus", pod_status },
    { "nodeStatus", node_status },
    { "nodeRoles", node_roles },
    { "replicasReady", replicas_ready },
    { "involvedObject", involved_object },
    { "count", count },
    { "labelMap", label_map },
    { "labelSelector", label_selector },
    { "bindingRole", binding_role },
    { "bindingUsers", binding_users },
    { "bindingGroups", binding_groups },
    { "bindingServiceAccounts", binding_service_accounts },
    { "quotaRequest", quota_request },
    { "quotaLimit", quota_limit },
    { "endpoints", endpoints },
    { "slicePorts", slice_ports },
    { "sliceEndpoints", slice_endpoints },
    { "serviceExternalIP", service_external_ip },
    { "servicePorts", service_ports },
};

json_object *fg__table_cell_computed(const char *what, json_object *column, json_object *obj)
{
    for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)
        if (!strcmp(cells[i].name, what))
            return cells[i].fn(column, obj);
    return NULL;
}
