/* kube_listwatch — lister-watcher over operator/kube's loop; see kube_listwatch.h. */
#include "kube_listwatch.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"

struct kube_listwatch {
    struct fg_listwatch base;
    struct fg_kube_loop *loop;
    const struct fg_kube_resource *res;
    char *ns;
    char *label_selector;
    char *field_selector;
    char *description;           /* base.kind: "Pod in conv-a (tier=gpu)", for log lines */
    unsigned page_limit;
    size_t max_line;
    bool cut_managed_fields;
    struct fg_kube_call *call;   /* the running list or watch */
    fg_listwatch_item_fn *on_item;
    fg_watch_event_fn *on_event;
    fg_listwatch_end_fn *on_end;
    void *ud;
};

static struct kube_listwatch *from_base(struct fg_listwatch *lw)
{
    return (struct kube_listwatch *)lw;
}

static char *dup_or_null(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static void end_call(struct kube_listwatch *k, enum fg_err err, const char *rv, const struct fg_kube_status *st,
                     const char *errmsg)
{
    k->call = NULL;
    struct fg_listwatch_result res = {
        .err = err,
        .resource_version = rv,
        .retry_after_s = st ? st->retry_after_s : 0,
        .message = errmsg && *errmsg ? errmsg : st ? st->message : NULL,
    };
    k->on_end(k->ud, &res);
}

static void list_item(void *ud, json_object *item)
{
    struct kube_listwatch *k = ud;
    k->on_item(k->ud, item);
}

static void list_done(void *ud, enum fg_err err, const char *resource_version, const struct fg_kube_status *st,
                      const char *errmsg)
{
    end_call(ud, err, err == FG_OK ? resource_version : NULL, st, errmsg);
}

static enum fg_err kube_list(struct fg_listwatch *lw, fg_listwatch_item_fn *on_item, fg_listwatch_end_fn *on_done,
                             void *ud)
{
    struct kube_listwatch *k = from_base(lw);
    if (k->call)
        return FG_E_BUSY;
    struct fg_kube_list_opts opts = {
        .label_selector = k->label_selector,
        .field_selector = k->field_selector,
        .limit = k->page_limit,
    };
    k->on_item = on_item;
    k->on_end = on_done;
    k->ud = ud;
    k->call = fg_kube_loop_list(k->loop, k->res, k->ns, &opts, list_item, list_done, k);
    return k->call ? FG_OK : FG_E_INTERNAL;
}

static bool watch_event(void *ud, enum fg_watch_type type, json_object *object)
{
    struct kube_listwatch *k = ud;
    return k->on_event(k->ud, type, object);
}

static void watch_end(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *errmsg)
{
    end_call(ud, err, NULL, st, errmsg);
}

static enum fg_err kube_watch(struct fg_listwatch *lw, const char *resource_version, unsigned timeout_s,
                              fg_watch_event_fn *on_event, fg_listwatch_end_fn *on_end, void *ud)
{
    struct kube_listwatch *k = from_base(lw);
    if (k->call)
        return FG_E_BUSY;
    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%u", timeout_s);
    struct fg_buf query = FG_BUF_INIT;
    enum fg_err err = fg_kube_query_add(&query, "watch", "1");
    if (!err)
        err = fg_kube_query_add(&query, "resourceVersion", resource_version);
    if (!err)
        err = fg_kube_query_add(&query, "allowWatchBookmarks", "true");
    if (!err)
        err = fg_kube_query_add(&query, "timeoutSeconds", timeout);
    if (!err)
        err = fg_kube_query_add(&query, "labelSelector", k->label_selector);
    if (!err)
        err = fg_kube_query_add(&query, "fieldSelector", k->field_selector);
    if (err)
        goto out_cleanup_query;
    char *path = fg_kube_path(k->res, k->ns, NULL, NULL, fg_buf_str(&query));
    k->on_event = on_event;
    k->on_end = on_end;
    k->ud = ud;
    k->call = fg_kube_loop_watch(k->loop, path, k->max_line, watch_event, watch_end, k);
    if (k->cut_managed_fields)
        fg_kube_call_cut_member(k->call, fg_watch_managed_fields);
    err = k->call ? FG_OK : FG_E_INTERNAL;
    free(path);
out_cleanup_query:
    fg_buf_cleanup(&query);
    return err;
}

static void kube_cancel(struct fg_listwatch *lw)
{
    struct kube_listwatch *k = from_base(lw);
    if (k->call)
        fg_kube_call_cancel(k->call);
    k->call = NULL;
}

static void kube_timer_disarm(struct fg_listwatch *lw, struct fg_listwatch_timer *t)
{
    (void)lw;
    if (t->backend)
        event_free(t->backend);
    t->backend = NULL;
    t->armed = false;
}

static void timer_fired(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_listwatch_timer *t = arg;
    event_free(t->backend);
    t->backend = NULL;
    t->armed = false;
    t->fn(t->ud);
}

static void kube_timer_arm(struct fg_listwatch *lw, struct fg_listwatch_timer *t, uint64_t delay_ns)
{
    struct kube_listwatch *k = from_base(lw);
    kube_timer_disarm(lw, t);
    t->backend = evtimer_new(fg_kube_loop_base(k->loop), timer_fired, t);
    if (!t->backend) {
        fg_log(FG_LOG_ERROR, "listwatch", "cannot allocate a timer event");
        abort();
    }
    struct timeval tv = { .tv_sec = (time_t)(delay_ns / FG_NS_PER_S),
                          .tv_usec = (suseconds_t)(delay_ns % FG_NS_PER_S / 1000) };
    evtimer_add(t->backend, &tv);
    t->armed = true;
    t->deadline_ns = fg_clock_mono_ns() + delay_ns;
}

static void kube_free(struct fg_listwatch *lw)
{
    struct kube_listwatch *k = from_base(lw);
    free(k->ns);
    free(k->label_selector);
    free(k->field_selector);
    free(k->description);
    free(k);
}

static const struct fg_listwatch_ops kube_ops = {
    .list = kube_list,
    .watch = kube_watch,
    .cancel = kube_cancel,
    .timer_arm = kube_timer_arm,
    .timer_disarm = kube_timer_disarm,
    .free = kube_free,
};

struct fg_listwatch *fg_kube_listwatch_new(struct fg_kube_loop *loop, const struct fg_kube_resource *res,
                                           const char *ns, const struct fg_kube_listwatch_opts *opts)
{
    static const struct fg_kube_listwatch_opts defaults = FG_KUBE_LISTWATCH_OPTS_DEFAULT;
    if (!opts)
        opts = &defaults;
    struct kube_listwatch *k = fg_calloc(1, sizeof(*k));
    k->base.ops = &kube_ops;
    k->loop = loop;
    k->res = res;
    k->ns = dup_or_null(ns);
    k->label_selector = dup_or_null(opts->label_selector);
    k->field_selector = dup_or_null(opts->field_selector);
    k->page_limit = opts->page_limit;
    k->max_line = opts->max_line ? opts->max_line : defaults.max_line;
    k->cut_managed_fields = opts->cut_managed_fields;
    const char *sel = k->label_selector ? k->label_selector : k->field_selector;
    if (k->label_selector && k->field_selector)
        k->description = fg_asprintf("%s in %s (%s; %s)", res->kind, ns ? ns : "all namespaces", k->label_selector,
                                     k->field_selector);
    else
        k->description = fg_asprintf("%s in %s%s%s%s", res->kind, ns ? ns : "all namespaces", sel ? " (" : "",
                                     sel ? sel : "", sel ? ")" : "");
    k->base.kind = k->description;
    return &k->base;
}
