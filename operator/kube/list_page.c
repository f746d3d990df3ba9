/*
 * list_page — one page of a paged list: the request path and the reply's decoding.
 *
 * Shared by the synchronous fg_kube_list and the loop's streaming list, so both page alike:
 * resourceVersion goes only with the first page (the API server refuses it with a continue token),
 * items are handed out one by one, borrowed, and the page is freed before the next is fetched.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/client_internal.h"

/* Appends to an unbounded query with a non-empty key, which cannot fail. */
static void add(struct fg_buf *q, const char *key, const char *value)
{
    if (fg_kube_query_add(q, key, value))
        abort();
}

char *fg__kube_list_path(const struct fg_kube_resource *res, const char *ns, const struct fg_kube_list_opts *opts,
                         const char *cont)
{
    struct fg_buf q = FG_BUF_INIT;
    if (opts) {
        add(&q, "labelSelector", opts->label_selector);
        add(&q, "fieldSelector", opts->field_selector);
        if (!cont)
            add(&q, "resourceVersion", opts->resource_version);
        if (opts->limit) {
            char limit[32];
            snprintf(limit, sizeof limit, "%u", opts->limit);
            add(&q, "limit", limit);
        }
    }
    add(&q, "continue", cont);
    char *path = fg_kube_path(res, ns, NULL, NULL, q.data);
    fg_buf_cleanup(&q);
    return path;
}

enum fg_err fg__kube_list_page(const char *body, size_t len, size_t max_bytes, fg_kube_item_fn *on_item, void *ud,
                               char **resource_version, char **cont, char *errmsg)
{
    *resource_version = NULL;
    *cont = NULL;
    json_object *list = NULL;
    char why[FG_ERRMSG_MAX];
    enum fg_err err = fg_json_parse(body ? body : "", len, max_bytes, &list, why);
    if (err)
        return fg_errmsg(errmsg, err, "list reply: %s", why);
    json_object *items = fg_json_get(list, "items", NULL);
    if (!json_object_is_type(items, json_type_array) && !json_object_is_type(items, json_type_null)) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "list reply has no \"items\" array");
        goto out_put;
    }
    size_t n = items ? json_object_array_length(items) : 0;
    for (size_t i = 0; i < n && on_item; i++)
        on_item(ud, json_object_array_get_idx(items, i));
    const char *rv = fg_json_get_str(list, "metadata", "resourceVersion", NULL);
    const char *next = fg_json_get_str(list, "metadata", "continue", NULL);
    *resource_version = fg_strdup(rv ? rv : "");
    if (next && next[0])
        *cont = fg_strdup(next);
out_put:
    json_object_put(list);
    return err;
}
