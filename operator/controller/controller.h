/*
 * controller — worker threads that turn queued keys into reconcile calls (controller-runtime's
 * Controller, reduced to its loop).
 *
 * A controller owns one work queue (operator/workqueue) and N workers. Informer handlers enqueue
 * keys; each worker takes a key, calls reconcile(ud, key) and applies the result:
 *   - ok                      → forget the key's failures;
 *   - error                   → log it once with the key, then add_rate_limited (retried forever
 *                               with per-key exponential backoff, as client-go does);
 *   - ok with requeue_after T → forget, then add_after(T): look again later without penalty.
 * An error wins over requeue_after. The queue guarantees that one key is never reconciled by two
 * workers at once, so reconcilers need no per-object locking; they are level-based: given a key they
 * read the current state and converge, whatever events led there.
 *
 * Lifecycle: new → start → stop → free. stop shuts the queue down (new keys are refused, keys
 * waiting on a delay or a retry are dropped), lets the workers finish every key already queued —
 * none added before stop is lost — and joins them, so no reconcile is running once it returns.
 * cancel is the stop of a controller that must quit at once (its replica stopped leading): keys
 * not yet handed to a worker are dropped and only the reconciles running now are waited for; the
 * next leader reconciles everything anyway. Neither may be called from a reconcile. Metrics are counters read at any time from any thread.
 */
#ifndef FG_CONTROLLER_H
#define FG_CONTROLLER_H

#include <stdint.h>

#include "base/err.h"
#include "operator/workqueue/ratelimit.h"
#include "operator/workqueue/workqueue.h"

#define FG_CONTROLLER_MAX_WORKERS 64

struct fg_controller;

struct fg_reconcile_result {
    enum fg_err err;            /* FG_OK, or why this attempt failed: retried with backoff */
    uint64_t requeue_after_ns;  /* with FG_OK and > 0: reconcile the key again after this long */
};

static inline struct fg_reconcile_result fg_reconcile_ok(void)
{
    return (struct fg_reconcile_result){ FG_OK, 0 };
}

static inline struct fg_reconcile_result fg_reconcile_error(enum fg_err err)
{
    return (struct fg_reconcile_result){ err, 0 };
}

static inline struct fg_reconcile_result fg_reconcile_requeue_after(uint64_t delay_ns)
{
    return (struct fg_reconcile_result){ FG_OK, delay_ns };
}

/* Called on a worker thread; key is borrowed for the call. */
typedef struct fg_reconcile_result fg_reconcile_fn(void *ud, const char *key);

struct fg_controller_opts {
    const char *name;               /* log component and queue name, e.g. "gpupolicy-controller" */
    const char *kind;               /* object kind for log lines, e.g. "GPUPolicy"; may be NULL */
    unsigned workers;               /* 1..FG_CONTROLLER_MAX_WORKERS */
    fg_reconcile_fn *reconcile;
    void *ud;
    struct fg_rate_limiter *limiter;    /* taken, also on failure; NULL: the default limiter */
};

struct fg_controller_metrics {
    uint64_t reconciles_total;      /* reconcile calls that returned */
    uint64_t errors_total;          /* of which failed */
    uint64_t requeues_total;        /* of which asked for requeue_after */
    size_t queue_depth;             /* keys waiting for a worker */
    size_t waiting;                 /* keys parked for a retry or requeue_after */
    unsigned busy_workers;          /* reconciles running now */
    uint64_t longest_running_ns;    /* age of the oldest reconcile running now (0 when idle) */
};

/* FG_E_INVAL (with errmsg) when opts has no name or reconcile, or workers is out of range;
 * FG_E_INTERNAL when the queue's thread cannot start. */
enum fg_err fg_controller_new(const struct fg_controller_opts *opts, struct fg_controller **out,
                              char *errmsg) FG_MUST_USE;
/* Starts the workers. FG_E_BUSY when already started, FG_E_SHUTDOWN after stop, FG_E_INTERNAL
 * when a thread cannot be created (the controller is then stopped). */
enum fg_err fg_controller_start(struct fg_controller *c) FG_MUST_USE;
/* Shuts the queue down, waits for the queued keys and the running reconciles; idempotent. */
void fg_controller_stop(struct fg_controller *c);
/* Shuts the queue down dropping every key no worker holds, waits for the running reconciles;
 * idempotent, and a later stop does nothing. */
void fg_controller_cancel(struct fg_controller *c);
/* Stops if needed and frees; NULL is ignored. */
void fg_controller_free(struct fg_controller *c);

/* Queues key for reconcile (fg_workqueue_add): FG_E_INVAL for a bad key, FG_E_SHUTDOWN after stop. */
enum fg_err fg_controller_enqueue(struct fg_controller *c, const char *key) FG_MUST_USE;
/* The controller's queue, borrowed for its lifetime (add_after, num_requeues, ...). */
struct fg_workqueue *fg_controller_queue_get(struct fg_controller *c);
void fg_controller_metrics_get(struct fg_controller *c, struct fg_controller_metrics *out);

#endif
