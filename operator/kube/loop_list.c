/*
 * loop_list — the streaming paged list on the loop thread.
 *
 * Each page is fetched into the call's reply buffer (bounded by the client's max_body_bytes),
 * parsed, handed out item by item, and freed before the next page is requested with the page's
 * continue token, so memory stays bounded by one page whatever the collection's size. Every page
 * takes its own rate-limit token. The final callback gets the list's resourceVersion.
 */
#include <stdlib.h>

#include "base/mem.h"
#include "operator/kube/internal.h"
#include "operator/kube/client_internal.h"
#include "operator/kube/loop_internal.h"

struct fg_kube_call *fg_kube_loop_list(struct fg_kube_loop *loop, const struct fg_kube_resource *res,
                                       const char *ns, const struct fg_kube_list_opts *opts,
                                       fg_kube_item_fn *on_item, fg_kube_list_done_fn *on_done, void *ud)
{
    struct fg_kube_call *call = fg__kube_call_new(loop, CALL_LIST, "GET", NULL, ud);
    call->res = res;
    call->ns = fg__kube_dup_opt(ns);
    if (opts) {
        call->label_selector = fg__kube_dup_opt(opts->label_selector);
        call->field_selector = fg__kube_dup_opt(opts->field_selector);
        call->resource_version = fg__kube_dup_opt(opts->resource_version);
        call->limit = opts->limit;
    }
    call->on_item = on_item;
    call->list_done = on_done;
    struct fg_kube_list_opts lo = { call->label_selector, call->field_selector, call->resource_version, call->limit };
    call->path = fg__kube_list_path(res, call->ns, &lo, NULL);
    fg__kube_call_schedule(call);
    return call;
}

static void list_item(void *ud, json_object *item)
{
    struct fg_kube_call *call = ud;
    if (!call->cancelled && call->on_item)
        call->on_item(call->ud, item);
}

void fg__kube_list_page_done(struct fg_kube_call *call, struct fg_kube_status *st)
{
    char *rv = NULL, *cont = NULL;
    call->delivering = true;
    enum fg_err err = fg__kube_list_page(call->reply.data, call->reply.len, 0, list_item, call, &rv, &cont,
                                         call->errmsg);
    call->delivering = false;
    fg_buf_cleanup(&call->reply);   /* one page at a time */
    if (!call->list_rv) {
        call->list_rv = rv;           /* later pages may be newer; watching from the first is safe */
        rv = NULL;
    }
    if (call->cancelled) {
        free(rv);
        free(cont);
        fg__kube_call_free(call);
        return;
    }
    if (err || !cont) {
        if (err) {
            st->err = err;
            st->message = fg_strdup(call->errmsg);
        }
        fg__kube_call_finish(call, err, err ? st : NULL, call->list_rv, err ? call->errmsg : NULL);
        free(rv);
        free(cont);
        return;
    }
    free(rv);
    free(call->cont);
    call->cont = cont;
    free(call->path);
    struct fg_kube_list_opts lo = { call->label_selector, call->field_selector, call->resource_version, call->limit };
    call->path = fg__kube_list_path(call->res, call->ns, &lo, call->cont);
    fg__kube_call_schedule(call);
}

