/*
 * listwatch — the lister-watcher a reflector talks to (client-go's ListerWatcher), as a vtable.
 *
 * The reflector never sees HTTP: it asks a `struct fg_listwatch` to list (items stream one by one,
 * then a done callback with the list's resourceVersion), to watch from a resourceVersion (events
 * stream, then an end callback), to cancel, and to arm timers on the same thread. Two backends exist:
 * kube_listwatch (operator/kube's loop: libcurl streams and libevent timers) and fake_listwatch (an
 * in-memory API server for tests and benchmarks that can refuse, expire, drop and throttle).
 *
 * Contract for backends: one lister-watcher serves one reflector and runs at most one call (list or
 * watch) at a time; starting another while one runs returns FG_E_BUSY. Callbacks run on the owning
 * thread, never from inside list()/watch() themselves. The final callback (on_done, on_end) runs
 * exactly once per started call unless cancel() came first, after which nothing of that call runs.
 * An event callback returning false ends the watch; its on_end then follows. Timers are caller-owned
 * structs; arming an armed timer re-arms it; a fired timer is disarmed before its callback runs.
 */
#ifndef FG_CACHE_LISTWATCH_H
#define FG_CACHE_LISTWATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/kube/watch.h"

/* How a list or watch ended. */
struct fg_listwatch_result {
    enum fg_err err;               /* FG_OK, or the mapped API / transport error */
    const char *resource_version;  /* list: the list's revision on success; NULL otherwise */
    unsigned retry_after_s;        /* the server's Retry-After (429, 503), 0 when absent */
    const char *message;           /* what went wrong, or NULL */
};

typedef void fg_listwatch_item_fn(void *ud, json_object *item);
typedef void fg_listwatch_end_fn(void *ud, const struct fg_listwatch_result *res);
typedef void fg_listwatch_timer_fn(void *ud);

struct fg_listwatch_timer {
    fg_listwatch_timer_fn *fn;
    void *ud;
    bool armed;
    uint64_t deadline_ns;   /* fg_clock_mono_ns() time it fires at, while armed */
    void *backend;          /* the backend's state (an event), while armed */
};

struct fg_listwatch;

struct fg_listwatch_ops {
    enum fg_err (*list)(struct fg_listwatch *lw, fg_listwatch_item_fn *on_item, fg_listwatch_end_fn *on_done,
                        void *ud);
    /* Watch from resource_version with bookmarks, closing server-side after timeout_s. */
    enum fg_err (*watch)(struct fg_listwatch *lw, const char *resource_version, unsigned timeout_s,
                         fg_watch_event_fn *on_event, fg_listwatch_end_fn *on_end, void *ud);
    void (*cancel)(struct fg_listwatch *lw);
    void (*timer_arm)(struct fg_listwatch *lw, struct fg_listwatch_timer *t, uint64_t delay_ns);
    void (*timer_disarm)(struct fg_listwatch *lw, struct fg_listwatch_timer *t);
    void (*free)(struct fg_listwatch *lw);
};

/* Backends embed this as their first member. `kind` names what is listed in log lines ("Pod", or
 * "Pod in ml (tier=gpu)"). */
struct fg_listwatch {
    const struct fg_listwatch_ops *ops;
    const char *kind;
};

static inline void fg_listwatch_timer_init(struct fg_listwatch_timer *t, fg_listwatch_timer_fn *fn, void *ud)
{
    *t = (struct fg_listwatch_timer){ .fn = fn, .ud = ud };
}

/* NULL is ignored. Cancels the running call first. */
void fg_listwatch_free(struct fg_listwatch *lw);

#endif
