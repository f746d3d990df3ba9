/*
 * controller — the worker loop and its bookkeeping; see controller.h.
 *
 * Each worker has a slot holding the clock reading at which its current reconcile began (0 when
 * idle), which is all the longest-running metric needs; counters are atomics so metrics never take
 * the queue's lock for long. Keys are split into namespace and name only for log lines.
 */
#include "operator/controller/controller.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"

struct worker {
    struct fg_controller *c;
    pthread_t thread;
    atomic_uint_fast64_t started_ns;    /* 0 = idle */
};

struct fg_controller {
    char *name;
    char *kind;
    fg_reconcile_fn *reconcile;
    void *ud;
    struct fg_workqueue *queue;
    struct worker *workers;
    unsigned n_workers;
    unsigned n_started;             /* threads to join */
    pthread_mutex_t lifecycle;      /* serializes start and stop */
    bool started, stopped;
    atomic_uint_fast64_t reconciles, errors, requeues;
};

enum fg_err fg_controller_new(const struct fg_controller_opts *opts, struct fg_controller **out, char *errmsg)
{
    struct fg_controller *c;
    enum fg_err err;
    if (!opts || !opts->name || !opts->name[0] || !opts->reconcile) {
        err = fg_errmsg(errmsg, FG_E_INVAL, "controller needs a name and a reconcile function");
        goto out_free_limiter;
    }
    if (opts->workers == 0 || opts->workers > FG_CONTROLLER_MAX_WORKERS) {
        err = fg_errmsg(errmsg, FG_E_INVAL, "controller %s: workers must be 1..%d, not %u", opts->name,
                        FG_CONTROLLER_MAX_WORKERS, opts->workers);
        goto out_free_limiter;
    }
    c = fg_calloc(1, sizeof *c);
    err = fg_workqueue_new(opts->name, opts->limiter, &c->queue);
    if (err) {
        fg_errmsg(errmsg, err, "controller %s: cannot create its work queue", opts->name);
        free(c);
        return err;
    }
    c->name = fg_strdup(opts->name);
    c->kind = opts->kind ? fg_strdup(opts->kind) : NULL;
    c->reconcile = opts->reconcile;
    c->ud = opts->ud;
    c->n_workers = opts->workers;
    c->workers = fg_calloc(c->n_workers, sizeof *c->workers);
    for (unsigned i = 0; i < c->n_workers; i++)
        c->workers[i].c = c;
    pthread_mutex_init(&c->lifecycle, NULL);
    *out = c;
    return FG_OK;

out_free_limiter:
    if (opts)
        fg_rate_limiter_free(opts->limiter);
    return err;
}

/* Logs a failed reconcile once, with the object's namespace and name when the key has both. */
static void log_failure(struct fg_controller *c, const char *key, enum fg_err err)
{
    if (!FG_LOG_ENABLED(FG_LOG_WARN))
        return;
    unsigned failures;
    if (fg_workqueue_num_requeues(c->queue, key, &failures) != FG_OK)
        failures = 0;
    const char *slash = strchr(key, '/');
    char *ns = slash ? fg_strndup(key, (size_t)(slash - key)) : NULL;
    fg_log_obj(FG_LOG_WARN, c->name, c->kind, ns, slash ? slash + 1 : key,
               "reconcile %s failed: %s (%s); earlier consecutive failures: %u", key, fg_err_name(err),
               fg_err_str(err), failures);
    free(ns);
}

static void apply_result(struct fg_controller *c, const char *key, struct fg_reconcile_result res)
{
    enum fg_err err;
    atomic_fetch_add(&c->reconciles, 1);
    if (res.err != FG_OK) {
        atomic_fetch_add(&c->errors, 1);
        log_failure(c, key, res.err);
        err = fg_workqueue_add_rate_limited(c->queue, key);
    } else {
        err = fg_workqueue_forget(c->queue, key);
        if (err == FG_OK && res.requeue_after_ns > 0) {
            atomic_fetch_add(&c->requeues, 1);
            err = fg_workqueue_add_after(c->queue, key, res.requeue_after_ns);
        }
    }
    if (err == FG_E_SHUTDOWN)
        fg_log(FG_LOG_DEBUG, c->name, "stopping: %s not requeued", key);
    else if (err)
        fg_log(FG_LOG_ERROR, c->name, "cannot requeue %s: %s", key, fg_err_str(err));
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct fg_controller *c = w->c;
    char *key;
    while (fg_workqueue_get(c->queue, &key) == FG_OK) {
        uint64_t now = fg_clock_mono_ns();
        atomic_store(&w->started_ns, now ? now : 1);
        struct fg_reconcile_result res = c->reconcile(c->ud, key);
        atomic_store(&w->started_ns, 0);
        apply_result(c, key, res);
        if (fg_workqueue_done(c->queue, key) != FG_OK)
            fg_log(FG_LOG_ERROR, c->name, "work queue lost track of %s", key);
        free(key);
    }
    return NULL;
}

/* Shuts the queue down (dropping what no worker holds when discard) and joins every started worker.
 * Caller holds c->lifecycle. */
static void stop_locked(struct fg_controller *c, bool discard)
{
    if (discard)
        fg_workqueue_shut_down_discard(c->queue);
    else
        fg_workqueue_shut_down(c->queue);
    for (unsigned i = 0; i < c->n_started; i++)
        pthread_join(c->workers[i].thread, NULL);
    c->n_started = 0;
    c->stopped = true;
}

enum fg_err fg_controller_start(struct fg_controller *c)
{
    enum fg_err err = FG_OK;
    pthread_mutex_lock(&c->lifecycle);
    if (c->stopped) {
        err = FG_E_SHUTDOWN;
        goto out_unlock;
    }
    if (c->started) {
        err = FG_E_BUSY;
        goto out_unlock;
    }
    c->started = true;
    for (unsigned i = 0; i < c->n_workers; i++) {
        if (pthread_create(&c->workers[i].thread, NULL, worker_main, &c->workers[i]) != 0) {
            fg_log(FG_LOG_ERROR, c->name, "cannot start worker %u of %u", i + 1, c->n_workers);
            stop_locked(c, true);
            err = FG_E_INTERNAL;
            goto out_unlock;
        }
        c->n_started++;
    }
    fg_log(FG_LOG_INFO, c->name, "started %u workers", c->n_workers);
out_unlock:
    pthread_mutex_unlock(&c->lifecycle);
    return err;
}

static void stop(struct fg_controller *c, bool discard)
{
    pthread_mutex_lock(&c->lifecycle);
    if (!c->stopped) {
        stop_locked(c, discard);
        fg_log(FG_LOG_INFO, c->name, discard ? "stopped, queued keys dropped" : "stopped");
    }
    pthread_mutex_unlock(&c->lifecycle);
}

void fg_controller_stop(struct fg_controller *c)
{
    stop(c, false);
}

void fg_controller_cancel(struct fg_controller *c)
{
    stop(c, true);
}

void fg_controller_free(struct fg_controller *c)
{
    if (!c)
        return;
    fg_controller_stop(c);
    fg_workqueue_free(c->queue);
    pthread_mutex_destroy(&c->lifecycle);
    free(c->workers);
    free(c->kind);
    free(c->name);
    free(c);
}

enum fg_err fg_controller_enqueue(struct fg_controller *c, const char *key)
{
    return fg_workqueue_add(c->queue, key);
}

struct fg_workqueue *fg_controller_queue_get(struct fg_controller *c)
{
    return c->queue;
}

void fg_controller_metrics_get(struct fg_controller *c, struct fg_controller_metrics *out)
{
    struct fg_workqueue_stats st;
    fg_workqueue_stats_get(c->queue, &st);
    memset(out, 0, sizeof *out);
    out->reconciles_total = atomic_load(&c->reconciles);
    out->errors_total = atomic_load(&c->errors);
    out->requeues_total = atomic_load(&c->requeues);
    out->queue_depth = st.queued;
    out->waiting = st.waiting;
    uint64_t now = fg_clock_mono_ns();
    for (unsigned i = 0; i < c->n_workers; i++) {
        uint64_t started = atomic_load(&c->workers[i].started_ns);
        if (started == 0)
            continue;
        out->busy_workers++;
        if (now > started && now - started > out->longest_running_ns)
            out->longest_running_ns = now - started;
    }
}
