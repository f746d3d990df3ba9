/* fake_listwatch — in-memory API server behind the lister-watcher interface; see fake_listwatch.h. */
#include "fake_listwatch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "operator/cache/kobj.h"

#define MAX_FAILURES 16
#define MAX_TIMERS 16
#define MAX_RUN_STEPS 100000

struct failure {
    enum fg_err err;
    unsigned retry_after_s;
};

struct failure_queue {
    struct failure items[MAX_FAILURES];
    unsigned head, len;
};

enum call_state { CALL_NONE, CALL_LIST, CALL_WATCH_PENDING, CALL_WATCH_OPEN };

struct fg_fake_listwatch {
    struct fg_listwatch base;
    uint64_t rv;
    uint64_t compacted_rv;     /* watches from before this are refused with 410 */
    json_object *objects;      /* key -> object */
    json_object *history;      /* array of {"type": enum fg_watch_type, "object"} with resourceVersions above compacted_rv */
    struct failure_queue list_failures, watch_failures;
    enum call_state state;
    fg_listwatch_item_fn *on_item;
    fg_watch_event_fn *on_event;
    fg_listwatch_end_fn *on_end;
    void *ud;
    uint64_t watch_rv;
    struct fg_listwatch_timer *timers[MAX_TIMERS];
    struct fg_fake_listwatch_stats stats;
};

static struct fg_fake_listwatch *from_base(struct fg_listwatch *lw)
{
    return (struct fg_fake_listwatch *)lw;
}

static void queue_push(struct failure_queue *q, enum fg_err err, unsigned retry_after_s)
{
    if (q->len == MAX_FAILURES)
        return;
    q->items[(q->head + q->len++) % MAX_FAILURES] = (struct failure){ err, retry_after_s };
}

static bool queue_pop(struct failure_queue *q, struct failure *out)
{
    if (q->len == 0)
        return false;
    *out = q->items[q->head];
    q->head = (q->head + 1) % MAX_FAILURES;
    q->len--;
    return true;
}

/* Ends the running call with res; the call is over before the callback runs, so it may start the
 * next one. */
static void finish(struct fg_fake_listwatch *f, const struct fg_listwatch_result *res)
{
    fg_listwatch_end_fn *end = f->on_end;
    f->state = CALL_NONE;
    f->stats.watching = false;
    end(f->ud, res);
}

/* Hands obj to the open watch; false (and the stream closed) when the receiver refuses. */
static bool send_raw(struct fg_fake_listwatch *f, enum fg_watch_type type, json_object *obj)
{
    bool more = f->on_event(f->ud, type, obj);
    if (!more)
        finish(f, &(struct fg_listwatch_result){ .err = FG_E_CLOSED, .message = "receiver stopped the stream" });
    return more;
}

/* Sends a copy of obj (which stays ours, unmodified) to the open watch. */
static bool send_event(struct fg_fake_listwatch *f, enum fg_watch_type type, json_object *obj)
{
    json_object *copy = NULL;
    json_object_deep_copy(obj, &copy, NULL);
    bool more = send_raw(f, type, copy);
    json_object_put(copy);
    return more;
}

static enum fg_err fake_list(struct fg_listwatch *lw, fg_listwatch_item_fn *on_item, fg_listwatch_end_fn *on_done,
                             void *ud)
{
    struct fg_fake_listwatch *f = from_base(lw);
    if (f->state != CALL_NONE)
        return FG_E_BUSY;
    f->state = CALL_LIST;
    f->on_item = on_item;
    f->on_end = on_done;
    f->ud = ud;
    f->stats.lists++;
    return FG_OK;
}

static enum fg_err fake_watch(struct fg_listwatch *lw, const char *resource_version, unsigned timeout_s,
                              fg_watch_event_fn *on_event, fg_listwatch_end_fn *on_end, void *ud)
{
    struct fg_fake_listwatch *f = from_base(lw);
    if (f->state != CALL_NONE)
        return FG_E_BUSY;
    if (!fg_kobj_parse_rv(resource_version, &f->watch_rv))
        return FG_E_INVAL;
    f->state = CALL_WATCH_PENDING;
    f->on_event = on_event;
    f->on_end = on_end;
    f->ud = ud;
    f->stats.watches++;
    snprintf(f->stats.last_watch_rv, sizeof(f->stats.last_watch_rv), "%s", resource_version);
    f->stats.last_timeout_s = timeout_s;
    return FG_OK;
}

static void fake_cancel(struct fg_listwatch *lw)
{
    struct fg_fake_listwatch *f = from_base(lw);
    f->state = CALL_NONE;
    f->stats.watching = false;
}

static void fake_timer_disarm(struct fg_listwatch *lw, struct fg_listwatch_timer *t)
{
    struct fg_fake_listwatch *f = from_base(lw);
    for (size_t i = 0; i < MAX_TIMERS; i++)
        if (f->timers[i] == t)
            f->timers[i] = NULL;
    t->armed = false;
}

static void fake_timer_arm(struct fg_listwatch *lw, struct fg_listwatch_timer *t, uint64_t delay_ns)
{
    struct fg_fake_listwatch *f = from_base(lw);
    fake_timer_disarm(lw, t);
    for (size_t i = 0; i < MAX_TIMERS; i++) {
        if (!f->timers[i]) {
            f->timers[i] = t;
            t->armed = true;
            t->deadline_ns = fg_clock_mono_ns() + delay_ns;
            return;
        }
    }
    abort(); /* more timers than any test arms: a bug in the test */
}

static void fake_free(struct fg_listwatch *lw)
{
    struct fg_fake_listwatch *f = from_base(lw);
    json_object_put(f->objects);
    json_object_put(f->history);
    free(f);
}

static const struct fg_listwatch_ops fake_ops = {
    .list = fake_list,
    .watch = fake_watch,
    .cancel = fake_cancel,
    .timer_arm = fake_timer_arm,
    .timer_disarm = fake_timer_disarm,
    .free = fake_free,
};

struct fg_fake_listwatch *fg_fake_listwatch_new(const char *kind)
{
    struct fg_fake_listwatch *f = fg_calloc(1, sizeof(*f));
    f->base.ops = &fake_ops;
    f->base.kind = kind;
    f->rv = 100;
    f->objects = json_object_new_object();
    f->history = json_object_new_array();
    return f;
}

struct fg_listwatch *fg_fake_listwatch_base(struct fg_fake_listwatch *f) { return &f->base; }
const struct fg_fake_listwatch_stats *fg_fake_listwatch_stats(const struct fg_fake_listwatch *f) { return &f->stats; }
uint64_t fg_fake_listwatch_rv(const struct fg_fake_listwatch *f) { return f->rv; }

static void set_rv(json_object *obj, uint64_t rv)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    fg_json_set_str(fg_json_ensure_obj(obj, "metadata"), "resourceVersion", buf);
}

uint64_t fg_fake_listwatch_apply(struct fg_fake_listwatch *f, enum fg_watch_type type, json_object *obj)
{
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    if (!name || (type != FG_WATCH_ADDED && type != FG_WATCH_MODIFIED && type != FG_WATCH_DELETED))
        return 0;
    char *key = fg_kobj_make_key(fg_json_get_str(obj, "metadata", "namespace", NULL), name);
    json_object *copy = NULL;
    json_object_deep_copy(obj, &copy, NULL);
    set_rv(copy, ++f->rv);
    if (type == FG_WATCH_DELETED)
        json_object_object_del(f->objects, key);
    else
        json_object_object_add(f->objects, key, json_object_get(copy));
    free(key);
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "type", json_object_new_int((int)type));
    json_object_object_add(ev, "object", copy);
    json_object_array_add(f->history, ev);
    if (f->state == CALL_WATCH_OPEN)
        send_event(f, type, copy);
    return f->rv;
}

uint64_t fg_fake_listwatch_apply_json(struct fg_fake_listwatch *f, enum fg_watch_type type, const char *json)
{
    json_object *obj = NULL;
    if (fg_json_parse(json, strlen(json), 0, &obj, NULL) != FG_OK)
        return 0;
    uint64_t rv = fg_fake_listwatch_apply(f, type, obj);
    json_object_put(obj);
    return rv;
}

void fg_fake_listwatch_compact(struct fg_fake_listwatch *f)
{
    json_object_put(f->history);
    f->history = json_object_new_array();
    f->compacted_rv = f->rv;
}

void fg_fake_listwatch_fail_list(struct fg_fake_listwatch *f, enum fg_err err, unsigned retry_after_s)
{
    queue_push(&f->list_failures, err, retry_after_s);
}

void fg_fake_listwatch_fail_watch(struct fg_fake_listwatch *f, enum fg_err err, unsigned retry_after_s)
{
    queue_push(&f->watch_failures, err, retry_after_s);
}

bool fg_fake_listwatch_send_expired(struct fg_fake_listwatch *f)
{
    if (f->state != CALL_WATCH_OPEN)
        return false;
    json_object *st = json_object_new_object();
    json_object_object_add(st, "kind", json_object_new_string("Status"));
    json_object_object_add(st, "status", json_object_new_string("Failure"));
    json_object_object_add(st, "message", json_object_new_string("too old resource version"));
    json_object_object_add(st, "reason", json_object_new_string("Expired"));
    json_object_object_add(st, "code", json_object_new_int(410));
    send_event(f, FG_WATCH_ERROR, st);
    json_object_put(st);
    return true;
}

bool fg_fake_listwatch_drop(struct fg_fake_listwatch *f, enum fg_err err)
{
    if (f->state != CALL_WATCH_OPEN)
        return false;
    finish(f, &(struct fg_listwatch_result){ .err = err, .message = err ? "stream dropped" : NULL });
    return true;
}

bool fg_fake_listwatch_bookmark(struct fg_fake_listwatch *f)
{
    if (f->state != CALL_WATCH_OPEN)
        return false;
    json_object *bm = json_object_new_object();
    set_rv(bm, ++f->rv);
    send_event(f, FG_WATCH_BOOKMARK, bm);
    json_object_put(bm);
    return true;
}

bool fg_fake_listwatch_deliver(struct fg_fake_listwatch *f, enum fg_watch_type type, json_object *obj)
{
    return f->state == CALL_WATCH_OPEN && send_raw(f, type, obj);
}

static void serve_list(struct fg_fake_listwatch *f)
{
    struct failure fail;
    if (queue_pop(&f->list_failures, &fail)) {
        finish(f, &(struct fg_listwatch_result){ .err = fail.err, .retry_after_s = fail.retry_after_s,
                                                 .message = "injected list failure" });
        return;
    }
    char rv[24];
    snprintf(rv, sizeof(rv), "%" PRIu64, f->rv);
    json_object_object_foreach(f->objects, key, obj) {
        (void)key;
        json_object *copy = NULL;
        json_object_deep_copy(obj, &copy, NULL);
        f->on_item(f->ud, copy);
        json_object_put(copy);
        if (f->state != CALL_LIST)
            return; /* cancelled by the receiver */
    }
    finish(f, &(struct fg_listwatch_result){ .err = FG_OK, .resource_version = rv });
}

static void open_watch(struct fg_fake_listwatch *f)
{
    struct failure fail;
    if (queue_pop(&f->watch_failures, &fail)) {
        finish(f, &(struct fg_listwatch_result){ .err = fail.err, .retry_after_s = fail.retry_after_s,
                                                 .message = "injected watch failure" });
        return;
    }
    if (f->watch_rv < f->compacted_rv) {
        finish(f, &(struct fg_listwatch_result){ .err = FG_E_KUBE_GONE, .message = "too old resource version" });
        return;
    }
    f->state = CALL_WATCH_OPEN;
    f->stats.watching = true;
    size_t n = json_object_array_length(f->history);
    for (size_t i = 0; i < n && f->state == CALL_WATCH_OPEN; i++) {
        json_object *ev = json_object_array_get_idx(f->history, i);
        json_object *obj = fg_json_get(ev, "object", NULL);
        uint64_t rv = 0;
        if (!fg_kobj_parse_rv(fg_json_get_str(obj, "metadata", "resourceVersion", NULL), &rv) || rv <= f->watch_rv)
            continue;
        int64_t type = 0;
        fg_json_get_int64(ev, &type, "type", NULL);
        send_event(f, (enum fg_watch_type)type, obj);
    }
}

uint64_t fg_fake_listwatch_next_timer_ns(const struct fg_fake_listwatch *f)
{
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < MAX_TIMERS; i++)
        if (f->timers[i] && f->timers[i]->deadline_ns < next)
            next = f->timers[i]->deadline_ns;
    return next;
}

/* Fires one due timer; false when none is due. */
static bool fire_due_timer(struct fg_fake_listwatch *f)
{
    uint64_t now = fg_clock_mono_ns();
    for (size_t i = 0; i < MAX_TIMERS; i++) {
        struct fg_listwatch_timer *t = f->timers[i];
        if (t && t->deadline_ns <= now) {
            fake_timer_disarm(&f->base, t);
            t->fn(t->ud);
            return true;
        }
    }
    return false;
}

unsigned fg_fake_listwatch_run(struct fg_fake_listwatch *f)
{
    unsigned steps = 0;
    for (; steps < MAX_RUN_STEPS; steps++) {
        if (f->state == CALL_LIST)
            serve_list(f);
        else if (f->state == CALL_WATCH_PENDING)
            open_watch(f);
        else if (!fire_due_timer(f))
            break;
    }
    return steps;
}
