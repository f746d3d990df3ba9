/* reflector — list, then watch, into a store; relist on 410; backoff on failure; see reflector.h. */
#include "reflector.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/backoff.h"

#define COMPONENT "reflector"
/* A watch still open this long after its timeoutSeconds is a dead connection the server never closed. */
#define WATCHDOG_GRACE_S 60

enum next_step { STEP_LIST, STEP_WATCH };

struct fg_reflector {
    struct fg_listwatch *lw;
    struct fg_store *store;
    struct fg_reflector_opts opts;
    const struct fg_resource_handler *handler;
    void *handler_ud;
    struct fg_backoff backoff;
    struct fg_listwatch_timer retry_timer;
    struct fg_listwatch_timer watchdog;
    enum next_step retry_step;
    bool running;
    atomic_bool synced;
    _Atomic uint64_t last_rv;
    /* the open watch */
    uint64_t watch_started_ns;
    uint64_t watch_events;
    bool relist_needed;        /* an ERROR event said 410 */
    bool watch_failed;         /* an ERROR event of another kind */
    bool missing;              /* lists answered 404 (said once, until one succeeds) */
    struct fg_reflector_stats stats;
};

static void start_list(struct fg_reflector *r);
static void start_watch(struct fg_reflector *r);
static void watchdog_fired(void *ud);

static const char *kind(const struct fg_reflector *r)
{
    return r->lw->kind ? r->lw->kind : "object";
}

static void retry_fired(void *ud)
{
    struct fg_reflector *r = ud;
    if (r->retry_step == STEP_LIST)
        start_list(r);
    else
        start_watch(r);
}

/* Retries `step` after the next backoff delay, or the server's Retry-After when that is longer. */
static void retry_later(struct fg_reflector *r, enum next_step step, unsigned retry_after_s)
{
    uint64_t delay = fg_backoff_next(&r->backoff);
    if ((uint64_t)retry_after_s * FG_NS_PER_S > delay)
        delay = (uint64_t)retry_after_s * FG_NS_PER_S;
    r->stats.failures++;
    r->stats.last_backoff_ns = delay;
    r->retry_step = step;
    r->lw->ops->timer_arm(r->lw, &r->retry_timer, delay);
}

static void note_rv(struct fg_reflector *r, uint64_t rv)
{
    if (rv > atomic_load(&r->last_rv))
        atomic_store(&r->last_rv, rv);
}

/* Transforms obj, caches it and tells the handler what changed. */
static void ingest(struct fg_reflector *r, enum fg_watch_type type, json_object *obj)
{
    char errmsg[FG_ERRMSG_MAX];
    r->stats.events++;
    json_object *t = r->opts.transform ? r->opts.transform(r->opts.transform_ud, obj) : json_object_get(obj);
    if (!t) {
        r->stats.bad_objects++;
        fg_log_obj(FG_LOG_WARN, COMPONENT, kind(r), fg_json_get_str(obj, "metadata", "namespace", NULL),
                   fg_json_get_str(obj, "metadata", "name", NULL), "transform rejected the object; skipped");
        return;
    }
    struct fg_kobj *ko = NULL;
    if (fg_kobj_new(t, r->opts.decode ? r->opts.value_size : 0, &ko, errmsg) != FG_OK) {
        r->stats.bad_objects++;
        fg_log(FG_LOG_WARN, COMPONENT, "%s skipped: %s", kind(r), errmsg);
        goto out_put;
    }
    if (r->opts.decode && r->opts.value_size)
        r->opts.decode(r->opts.decode_ud, t, fg_kobj_value_fill(ko));
    const struct fg_resource_handler *h = r->handler;
    if (type == FG_WATCH_DELETED) {
        struct fg_kobj *gone = fg_store_delete(r->store, fg_kobj_key(ko), fg_kobj_rv(ko));
        if (gone && h->on_delete)
            h->on_delete(r->handler_ud, ko);
        fg_kobj_unref(gone);
        goto out_unref;
    }
    struct fg_kobj *old = NULL;
    switch (fg_store_upsert(r->store, ko, t, &old)) {
    case FG_STORE_ADDED:
        if (h->on_add)
            h->on_add(r->handler_ud, ko);
        break;
    case FG_STORE_UPDATED:
        if (h->on_update)
            h->on_update(r->handler_ud, old, ko);
        fg_kobj_unref(old);
        break;
    case FG_STORE_STALE:
        r->stats.dropped_stale++;
        break;
    case FG_STORE_UNCHANGED:
        break;
    }
out_unref:
    fg_kobj_unref(ko);
out_put:
    json_object_put(t);
}

static void on_list_item(void *ud, json_object *item)
{
    ingest(ud, FG_WATCH_ADDED, item);
}

static void on_list_done(void *ud, const struct fg_listwatch_result *res)
{
    struct fg_reflector *r = ud;
    uint64_t rv = 0;
    if (res->err == FG_OK && !fg_kobj_parse_rv(res->resource_version, &rv)) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s list returned no valid resourceVersion; relisting", kind(r));
        retry_later(r, STEP_LIST, 0);
        return;
    }
    if (res->err == FG_E_KUBE_NOT_FOUND) {   /* no such resource: a CRD not installed, said once */
        fg_log(r->missing ? FG_LOG_DEBUG : FG_LOG_WARN, COMPONENT,
               "%s: the API server does not serve this resource (404): its CustomResourceDefinition is not "
               "installed (fracgpu's: kubectl apply -k manifests/); listing again quietly until it is",
               kind(r));
        r->missing = true;
        retry_later(r, STEP_LIST, res->retry_after_s);
        return;
    }
    if (res->err != FG_OK) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s list failed: %s (%s)", kind(r), fg_err_str(res->err),
               res->message ? res->message : "");
        retry_later(r, STEP_LIST, res->retry_after_s);
        return;
    }
    if (r->missing)
        fg_log(FG_LOG_INFO, COMPONENT, "%s is served now", kind(r));
    r->missing = false;
    struct fg_kobj_list gone;
    fg_store_replace_finish(r->store, &gone);
    for (size_t i = 0; i < gone.n && r->handler->on_delete; i++)
        r->handler->on_delete(r->handler_ud, gone.items[i]);
    fg_kobj_list_cleanup(&gone);
    note_rv(r, rv);
    atomic_store(&r->synced, true);
    fg_log(FG_LOG_DEBUG, COMPONENT, "%s listed at resourceVersion %" PRIu64, kind(r), rv);
    start_watch(r);
}

static void start_list(struct fg_reflector *r)
{
    r->stats.lists++;
    fg_store_replace_begin(r->store);
    enum fg_err err = r->lw->ops->list(r->lw, on_list_item, on_list_done, r);
    if (err != FG_OK) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s list could not start: %s", kind(r), fg_err_str(err));
        retry_later(r, STEP_LIST, 0);
    }
}

/* True when a watch ERROR event's Status says the history is gone. */
static bool status_is_expired(json_object *status)
{
    int64_t code = 0;
    const char *reason = fg_json_get_str(status, "reason", NULL);
    return (fg_json_get_int64(status, &code, "code", NULL) && code == 410) ||
           fg_str_eq(reason, "Expired") || fg_str_eq(reason, "Gone");
}

static bool on_watch_event(void *ud, enum fg_watch_type type, json_object *obj)
{
    struct fg_reflector *r = ud;
    uint64_t rv = 0;
    bool has_rv = fg_kobj_parse_rv(fg_json_get_str(obj, "metadata", "resourceVersion", NULL), &rv);
    r->watch_events++;
    switch (type) {
    case FG_WATCH_ERROR:
        if (status_is_expired(obj)) {
            r->relist_needed = true;
        } else {
            r->watch_failed = true;
            fg_log(FG_LOG_WARN, COMPONENT, "%s watch error: %s", kind(r),
                   fg_json_get_str(obj, "message", NULL) ? fg_json_get_str(obj, "message", NULL) : "(no message)");
        }
        return false;
    case FG_WATCH_BOOKMARK:
        break;
    case FG_WATCH_ADDED:
    case FG_WATCH_MODIFIED:
    case FG_WATCH_DELETED:
        ingest(r, type, obj);
        break;
    }
    if (has_rv)
        note_rv(r, rv);
    return true;
}

static void on_watch_end(void *ud, const struct fg_listwatch_result *res)
{
    struct fg_reflector *r = ud;
    r->lw->ops->timer_disarm(r->lw, &r->watchdog);
    if (r->relist_needed || res->err == FG_E_KUBE_GONE) {
        fg_log(FG_LOG_INFO, COMPONENT, "%s watch expired at resourceVersion %" PRIu64 "; relisting", kind(r),
               atomic_load(&r->last_rv));
        start_list(r);
        return;
    }
    bool quick = fg_clock_mono_ns() - r->watch_started_ns < r->opts.min_healthy_watch_ns && r->watch_events == 0;
    if (res->err == FG_OK && !r->watch_failed && !quick) {
        start_watch(r);
        return;
    }
    fg_log(FG_LOG_WARN, COMPONENT, "%s watch ended: %s (%s)", kind(r), fg_err_str(res->err),
           res->message ? res->message : "");
    retry_later(r, STEP_WATCH, res->retry_after_s);
}

static void start_watch(struct fg_reflector *r)
{
    char rv[24];
    snprintf(rv, sizeof(rv), "%" PRIu64, atomic_load(&r->last_rv));
    unsigned timeout_s = (unsigned)fg_backoff_rand_range(&r->backoff, r->opts.watch_timeout_min_s,
                                                         r->opts.watch_timeout_max_s);
    r->watch_started_ns = fg_clock_mono_ns();
    r->watch_events = 0;
    r->relist_needed = false;
    r->watch_failed = false;
    enum fg_err err = r->lw->ops->watch(r->lw, rv, timeout_s, on_watch_event, on_watch_end, r);
    if (err != FG_OK) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s watch could not start: %s", kind(r), fg_err_str(err));
        retry_later(r, STEP_WATCH, 0);
        return;
    }
    r->lw->ops->timer_arm(r->lw, &r->watchdog, (uint64_t)(timeout_s + WATCHDOG_GRACE_S) * FG_NS_PER_S);
}

/* The server should have closed the watch by now: the connection is dead. Abandon it, watch anew. */
static void watchdog_fired(void *ud)
{
    struct fg_reflector *r = ud;
    fg_log(FG_LOG_WARN, COMPONENT, "%s watch outlived its timeout; abandoning it", kind(r));
    r->lw->ops->cancel(r->lw);
    r->stats.failures++;
    start_watch(r);
}

struct fg_reflector *fg_reflector_new(struct fg_listwatch *lw, struct fg_store *store,
                                      const struct fg_reflector_opts *opts,
                                      const struct fg_resource_handler *handler, void *handler_ud)
{
    static const struct fg_reflector_opts defaults = FG_REFLECTOR_OPTS_DEFAULT;
    struct fg_reflector *r = fg_calloc(1, sizeof(*r));
    r->lw = lw;
    r->store = store;
    r->opts = opts ? *opts : defaults;
    r->handler = handler;
    r->handler_ud = handler_ud;
    fg_backoff_init(&r->backoff, r->opts.backoff_initial_ns, r->opts.backoff_max_ns, r->opts.backoff_reset_ns,
                    r->opts.backoff_jitter, r->opts.seed);
    fg_listwatch_timer_init(&r->retry_timer, retry_fired, r);
    fg_listwatch_timer_init(&r->watchdog, watchdog_fired, r);
    atomic_init(&r->synced, false);
    atomic_init(&r->last_rv, 0);
    return r;
}

void fg_reflector_set_decode(struct fg_reflector *r, void (*decode)(void *ud, json_object *obj, void *value), void *ud,
                             size_t value_size)
{
    r->opts.decode = decode;
    r->opts.decode_ud = ud;
    r->opts.value_size = value_size;
}

void fg_reflector_start(struct fg_reflector *r)
{
    r->running = true;
    start_list(r);
}

void fg_reflector_stop(struct fg_reflector *r)
{
    if (!r->running)
        return;
    r->running = false;
    r->lw->ops->cancel(r->lw);
    r->lw->ops->timer_disarm(r->lw, &r->retry_timer);
    r->lw->ops->timer_disarm(r->lw, &r->watchdog);
}

void fg_reflector_free(struct fg_reflector *r)
{
    if (!r)
        return;
    fg_reflector_stop(r);
    free(r);
}

bool fg_reflector_has_synced(const struct fg_reflector *r) { return atomic_load(&r->synced); }
uint64_t fg_reflector_last_rv(const struct fg_reflector *r) { return atomic_load(&r->last_rv); }
const struct fg_reflector_stats *fg_reflector_stats(const struct fg_reflector *r) { return &r->stats; }
