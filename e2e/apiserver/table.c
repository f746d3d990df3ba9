/*
 * table — server-side Tables (meta.k8s.io/v1), what `kubectl get` asks for and prints.
 *
 * Columns are data: the registry row's `columns` (types.json for built-in kinds, a CRD version's
 * additionalPrinterColumns for custom resources), each {name, type, jsonPath | compute, priority}.
 * A Name column comes first (except for events, as kube-apiserver prints them). jsonPath cells
 * show the first match (all of them, joined by commas, for `[*]` paths), `date` cells are ages as
 * kubectl prints them ("5m", "3h10m"), missing values are null (kubectl shows <none>), and
 * `compute` names a cell kube-apiserver's printers derive from several fields (table_cells.c). A
 * column's `default` stands in for a missing value where kube's printer reads a Go field that is
 * never absent (an integer status count prints 0, not <none>). Priority-1 columns are shown only by
 * `kubectl get -o wide`. Each row carries the object's metadata as a PartialObjectMetadata, from
 * which kubectl reads names and, with -A, namespaces.
 */
#include "e2e/apiserver/server.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/timefmt.h"
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

json_object *fg__human_duration(long long s)
{
    long long m = s / 60, h = s / 3600, d = h / 24;
    char out[32];
    if (s < -1)
        snprintf(out, sizeof(out), "<invalid>"); /* a clock skew of up to a second passes as now */
    else if (s < 0)
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
    else if (d < 2 * 365)
        snprintf(out, sizeof(out), "%lldd", d);
    else if (d < 8 * 365 && d % 365)
        snprintf(out, sizeof(out), "%lldy%lldd", d / 365, d % 365);
    else
        snprintf(out, sizeof(out), "%lldy", d / 365);
    return json_object_new_string(out);
}

/* The age of an RFC 3339 timestamp, as kubectl shows it. */
static json_object *age(const char *ts)
{
    int64_t ms;
    if (!fg_time_parse(ts, &ms))
        return NULL;
    return fg__human_duration((fg_clock_wall_ms() - ms) / 1000);
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
        json_object *cell = compute ? fg__table_cell_computed(compute, c, obj)
                            : path ? path_cell(obj, path, type ? type : "") : NULL;
        json_object *dflt = NULL;
        if (!cell && json_object_object_get_ex(c, "default", &dflt))
            cell = json_object_get(dflt);
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
