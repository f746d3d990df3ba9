/*
 * table — server-side Tables (meta.k8s.io/v1), what `kubectl get` asks for and prints.
 *
 * Columns are data: the registry row's `columns` (types.json for built-in kinds, a CRD version's
 * additionalPrinterColumns for custom resources), each {name, type, jsonPath | compute, priority}.
 * A Name column comes first (except for events, as kube-apiserver prints them). jsonPath cells
 * show the first match (all of them, joined by commas, for `[*]` paths), `date` cells are ages as
 * kubectl prints them ("5m", "3h10m"), missing values are null (kubectl shows <none>), and
 * `compute` names the few cells kube-apiserver's printers derive from several fields: a pod's
 * ready count and restarts, a node's status and roles, a workload's ready replicas, an event's
 * object, a webhook configuration's webhook count. Priority-1 columns are shown only by
 * `kubectl get -o wide`. Each row carries the object's metadata as a PartialObjectMetadata, from
 * which kubectl reads names and, with -A, namespaces.
 */
#include "e2e/apiserver/server.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/jsonpath.h"

#define TABLE_CONTENT_TYPE "application/json;as=Table;v=v1;g=meta.k8s.io"

bool fg__table_wanted(struct evhttp_request *req)
{
    const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
    return accept && strstr(accept, "as=Table");
}

static json_object *column(const char *name, const char *type, const char *format, int64_t priority)
{
    json_object *c = json_object_new_object();
    fg_json_set_str(c, "name", name);
    fg_json_set_str(c, "type", type);
    fg_json_set_str(c, "format", format ? format : "");
    fg_json_set_str(c, "description", "");
    json_object_object_add(c, "priority", json_object_new_int64(priority));
    return c;
}

json_object *fg__table_new(const struct fg__type *t)
{
    json_object *table = json_object_new_object();
    fg_json_set_str(table, "kind", "Table");
    fg_json_set_str(table, "apiVersion", "meta.k8s.io/v1");
    json_object_object_add(table, "metadata", json_object_new_object());
    json_object *defs = json_object_new_array();
    if (t->name_column)
        json_object_array_add(defs, column("Name", "string", "name", 0));
    for (size_t i = 0; t->columns && i < json_object_array_length(t->columns); i++) {
        json_object *c = json_object_array_get_idx(t->columns, i);
        int64_t priority = 0;
        fg_json_get_int64(c, &priority, "priority", NULL);
        const char *type = fg_json_get_str(c, "type", NULL);
        json_object_array_add(defs, column(fg_json_get_str(c, "name", NULL), type ? type : "string",
                                           fg_json_get_str(c, "format", NULL), priority));
    }
    json_object_object_add(table, "columnDefinitions", defs);
    json_object_object_add(table, "rows", json_object_new_array());
    return table;
}

/* kubectl's HumanDuration of the time since an RFC 3339 timestamp. */
static json_object *age(const char *ts)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!ts || !strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm))
        return NULL;
    long long s = (long long)difftime(time(NULL), timegm(&tm));
    long long m = s / 60, h = s / 3600, d = h / 24;
    char out[32];
    if (s < 0)
        snprintf(out, sizeof(out), "0s");
    else if (s < 120)
        snprintf(out, sizeof(out), "%llds", s);
    else if (m < 10 && s % 60)
        snprintf(out, sizeof(out), "%lldm%llds", m, s % 60);
    else if (m < 180)
        snprintf(out, sizeof(out), "%lldm", m);
    else if (h < 8 && m % 60)
        snprintf(out, sizeof(out), "%lldh%lldm", h, m % 60);
    else if (h < 48)
        snprintf(out, sizeof(out), "%lldh", h);
    else if (d < 8 && h % 24)
        snprintf(out, sizeof(out), "%lldd%lldh", d, h % 24);
    else if (d < 730)
        snprintf(out, sizeof(out), "%lldd", d);
    else
        snprintf(out, sizeof(out), "%lldy", d / 365);
    return json_object_new_string(out);
}

static json_object *computed(const char *what, json_object *obj)
{
    char s[256];
    if (!strcmp(what, "podReady")) {
        json_object *cs = fg_json_get(obj, "status", "containerStatuses", NULL);
        size_t ready = 0;
        for (size_t i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++)
            ready += json_object_get_boolean(fg_json_get(json_object_array_get_idx(cs, i), "ready", NULL));
        json_object *containers = fg_json_get(obj, "spec", "containers", NULL);
        size_t total = json_object_is_type(containers, json_type_array) ? json_object_array_length(containers) : 0;
        snprintf(s, sizeof(s), "%zu/%zu", ready, total);
    } else if (!strcmp(what, "podRestarts")) {
        json_object *cs = fg_json_get(obj, "status", "containerStatuses", NULL);
        int64_t total = 0;
        for (size_t i = 0; json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++) {
            int64_t n = 0;
            fg_json_get_int64(json_object_array_get_idx(cs, i), &n, "restartCount", NULL);
            total += n;
        }
        return json_object_new_int64(total);
    } else if (!strcmp(what, "nodeStatus")) {
        json_object *ready = fg__jsonpath_eval(obj, ".status.conditions[?(@.type==\"Ready\")].status");
        bool ok = fg_str_eq(json_object_get_string(json_object_array_get_idx(ready, 0)), "True");
        json_object_put(ready);
        snprintf(s, sizeof(s), "%s%s", ok ? "Ready" : "NotReady",
                 json_object_get_boolean(fg_json_get(obj, "spec", "unschedulable", NULL)) ? ",SchedulingDisabled" : "");
    } else if (!strcmp(what, "nodeRoles")) {
        static const char prefix[] = "node-role.kubernetes.io/";
        size_t at = 0;
        s[0] = '\0';
        json_object *labels = fg_json_get(obj, "metadata", "labels", NULL);
        if (json_object_is_type(labels, json_type_object)) {
            json_object_object_foreach(labels, key, val) {
                (void)val;
                if (fg_str_has_prefix(key, prefix) && at < sizeof(s))
                    at += (size_t)snprintf(s + at, sizeof(s) - at, "%s%s", at ? "," : "", key + sizeof(prefix) - 1);
            }
        }
        if (!at)
            snprintf(s, sizeof(s), "<none>");
    } else if (!strcmp(what, "replicasReady")) {
        int64_t ready = 0, want = 0;
        fg_json_get_int64(obj, &ready, "status", "readyReplicas", NULL);
        fg_json_get_int64(obj, &want, "spec", "replicas", NULL);
        snprintf(s, sizeof(s), "%lld/%lld", (long long)ready, (long long)want);
    } else if (!strcmp(what, "involvedObject")) {
        const char *kind = fg_json_get_str(obj, "involvedObject", "kind", NULL);
        const char *name = fg_json_get_str(obj, "involvedObject", "name", NULL);
        snprintf(s, sizeof(s), "%s/%s", kind ? kind : "", name ? name : "");
        for (char *c = s; *c && *c != '/'; c++)
            *c = (char)tolower((unsigned char)*c);
    } else if (!strcmp(what, "webhookCount")) {
        json_object *hooks = fg_json_get(obj, "webhooks", NULL);
        return json_object_new_int64(json_object_is_type(hooks, json_type_array) ?
                                     (int64_t)json_object_array_length(hooks) : 0);
    } else {
        return NULL;
    }
    return json_object_new_string(s);
}

/* A cell from a jsonPath column. */
static json_object *path_cell(json_object *obj, const char *path, const char *type)
{
    json_object *found = fg__jsonpath_eval(obj, path);
    size_t n = json_object_array_length(found);
    json_object *cell = NULL;
    if (n && !strcmp(type, "date")) {
        cell = age(json_object_get_string(json_object_array_get_idx(found, 0)));
    } else if (n == 1 || (n && !strstr(path, "[*]"))) {
        json_object *v = json_object_array_get_idx(found, 0);
        cell = json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array)
                   ? json_object_new_string(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN))
                   : json_object_get(v);
    } else if (n) {
        struct fg_buf b = { 0 };
        for (size_t i = 0; i < n; i++)
            if (fg_buf_printf(&b, "%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(found, i))))
                break;
        cell = json_object_new_string(fg_buf_str(&b));
        fg_buf_cleanup(&b);
    }
    json_object_put(found);
    return cell;
}

void fg__table_add_row(json_object *table, const struct fg__type *t, json_object *obj)
{
    json_object *cells = json_object_new_array();
    if (t->name_column)
        json_object_array_add(cells, json_object_get(fg_json_get(obj, "metadata", "name", NULL)));
    for (size_t i = 0; t->columns && i < json_object_array_length(t->columns); i++) {
        json_object *c = json_object_array_get_idx(t->columns, i);
        const char *compute = fg_json_get_str(c, "compute", NULL);
        const char *path = fg_json_get_str(c, "jsonPath", NULL);
        const char *type = fg_json_get_str(c, "type", NULL);
        json_object *cell = compute ? computed(compute, obj) : path ? path_cell(obj, path, type ? type : "") : NULL;
        json_object_array_add(cells, cell);
    }
    json_object *row = json_object_new_object();
    json_object_object_add(row, "cells", cells);
    json_object *partial = json_object_new_object();
    fg_json_set_str(partial, "kind", "PartialObjectMetadata");
    fg_json_set_str(partial, "apiVersion", "meta.k8s.io/v1");
    json_object_object_add(partial, "metadata", json_object_get(fg_json_get(obj, "metadata", NULL)));
    json_object_object_add(row, "object", partial);
    json_object_array_add(fg_json_get(table, "rows", NULL), row);
}

void fg__table_reply(struct evhttp_request *req, json_object *table)
{
    fg__reply_json_as(req, 200, table, TABLE_CONTENT_TYPE);
}
