/*
 * queue — the FIFO with its dirty and processing sets, get/done and shutdown; see workqueue.h.
 *
 * The FIFO is a ring of owned key copies that doubles when full. A key is in the FIFO only while it
 * is dirty and not processing; get() moves it from dirty to processing, done() takes it out of
 * processing and, if it became dirty meanwhile, puts it back in the FIFO. Conditions are bound to
 * CLOCK_MONOTONIC (base/clock.h) so bounded waits do not jump with the wall clock.
 */
#include "operator/workqueue/queue_int.h"

#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"

#define FIFO_MIN_CAP 16

enum fg_err fg_workqueue_new(const char *name, struct fg_rate_limiter *limiter, struct fg_workqueue **out)
{
    struct fg_workqueue *q = fg_calloc(1, sizeof *q);
    q->name = fg_strdup(name ? name : "workqueue");
    q->limiter = limiter ? limiter : fg_rate_limiter_new_default();
    pthread_mutex_init(&q->lock, NULL);
    fg_cond_init_monotonic(&q->ready);
    fg_cond_init_monotonic(&q->idle);
    fg_cond_init_monotonic(&q->delay_wake);
    fg__keymap_init(&q->dirty);
    fg__keymap_init(&q->processing);
    fg__keymap_init(&q->waiting);
    if (pthread_create(&q->waiter, NULL, fg__delay_loop, q) != 0) {
        fg_log(FG_LOG_ERROR, "workqueue", "%s: cannot start the waiting thread", q->name);
        fg_workqueue_free(q);
        return FG_E_INTERNAL;
    }
    q->waiter_started = true;
    *out = q;
    return FG_OK;
}

void fg_workqueue_free(struct fg_workqueue *q)
{
    if (!q)
        return;
    fg_workqueue_shut_down(q);
    if (q->waiter_started)
        pthread_join(q->waiter, NULL);
    fg__delay_cleanup(q);
    for (size_t i = 0; i < q->fifo_len; i++)
        free(q->fifo[(q->fifo_head + i) % q->fifo_cap]);
    free(q->fifo);
    fg__keymap_cleanup(&q->dirty);
    fg__keymap_cleanup(&q->processing);
    fg__keymap_cleanup(&q->waiting);
    fg_rate_limiter_free(q->limiter);
    pthread_cond_destroy(&q->delay_wake);
    pthread_cond_destroy(&q->idle);
    pthread_cond_destroy(&q->ready);
    pthread_mutex_destroy(&q->lock);
    free(q->name);
    free(q);
}

static void fifo_push(struct fg_workqueue *q, const char *key)
{
    if (q->fifo_len == q->fifo_cap) {
        size_t cap = q->fifo_cap ? q->fifo_cap * 2 : FIFO_MIN_CAP;
        char **ring = fg_malloc(cap * sizeof *ring);
        for (size_t i = 0; i < q->fifo_len; i++)
            ring[i] = q->fifo[(q->fifo_head + i) % q->fifo_cap];
        free(q->fifo);
        q->fifo = ring;
        q->fifo_cap = cap;
        q->fifo_head = 0;
    }
    q->fifo[(q->fifo_head + q->fifo_len) % q->fifo_cap] = fg_strdup(key);
    q->fifo_len++;
    q->adds++;
    pthread_cond_signal(&q->ready);
}

static char *fifo_pop(struct fg_workqueue *q)
{
    char *key = q->fifo[q->fifo_head];
    q->fifo_head = (q->fifo_head + 1) % q->fifo_cap;
    q->fifo_len--;
    return key;
}

void fg__queue_add_locked(struct fg_workqueue *q, const char *key)
{
    if (!fg__keymap_set(&q->dirty, key, 0, NULL))
        return;     /* already dirty: queued, or re-queued by done() */
    if (!fg__keymap_get(&q->processing, key, NULL))
        fifo_push(q, key);
}

enum fg_err fg_workqueue_add(struct fg_workqueue *q, const char *key)
{
    if (!fg__key_valid(key))
        return FG_E_INVAL;
    enum fg_err err = FG_OK;
    pthread_mutex_lock(&q->lock);
    if (q->shutting_down)
        err = FG_E_SHUTDOWN;
    else
        fg__queue_add_locked(q, key);
    pthread_mutex_unlock(&q->lock);
    return err;
}

enum fg_err fg_workqueue_get(struct fg_workqueue *q, char **key)
{
    pthread_mutex_lock(&q->lock);
    while (q->fifo_len == 0 && !q->shutting_down)
        pthread_cond_wait(&q->ready, &q->lock);
    if (q->fifo_len == 0) {
        pthread_mutex_unlock(&q->lock);
        return FG_E_SHUTDOWN;
    }
    char *k = fifo_pop(q);
    (void)fg__keymap_set(&q->processing, k, 0, NULL);
    (void)fg__keymap_remove(&q->dirty, k);
    pthread_mutex_unlock(&q->lock);
    *key = k;
    return FG_OK;
}

enum fg_err fg_workqueue_done(struct fg_workqueue *q, const char *key)
{
    if (!fg__key_valid(key))
        return FG_E_INVAL;
    enum fg_err err = FG_OK;
    pthread_mutex_lock(&q->lock);
    if (!fg__keymap_remove(&q->processing, key)) {
        err = FG_E_INVAL;
    } else if (fg__keymap_get(&q->dirty, key, NULL)) {
        fifo_push(q, key);
    } else if (q->processing.len == 0 && q->fifo_len == 0) {
        pthread_cond_broadcast(&q->idle);
    }
    pthread_mutex_unlock(&q->lock);
    return err;
}

size_t fg_workqueue_len(struct fg_workqueue *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->fifo_len;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void fg_workqueue_stats_get(struct fg_workqueue *q, struct fg_workqueue_stats *out)
{
    pthread_mutex_lock(&q->lock);
    out->queued = q->fifo_len;
    out->processing = q->processing.len;
    out->waiting = q->heap_len;
    out->adds = q->adds;
    out->retries = q->retries;
    pthread_mutex_unlock(&q->lock);
}

void fg_workqueue_shut_down(struct fg_workqueue *q)
{
    pthread_mutex_lock(&q->lock);
    q->shutting_down = true;
    pthread_cond_broadcast(&q->ready);
    pthread_cond_broadcast(&q->delay_wake);
    pthread_mutex_unlock(&q->lock);
}

void fg_workqueue_shut_down_discard(struct fg_workqueue *q)
{
    pthread_mutex_lock(&q->lock);
    q->shutting_down = true;
    while (q->fifo_len > 0)
        free(fifo_pop(q));
    fg__keymap_cleanup(&q->dirty);   /* also the keys being processed: done() must not queue them again */
    fg__keymap_init(&q->dirty);
    pthread_cond_broadcast(&q->ready);
    pthread_cond_broadcast(&q->delay_wake);
    if (q->processing.len == 0)
        pthread_cond_broadcast(&q->idle);
    pthread_mutex_unlock(&q->lock);
}

enum fg_err fg_workqueue_shut_down_with_drain(struct fg_workqueue *q, uint64_t timeout_ns)
{
    fg_workqueue_shut_down(q);
    uint64_t start = fg_clock_real_ns();
    enum fg_err err = FG_OK;
    pthread_mutex_lock(&q->lock);
    while (q->fifo_len > 0 || q->processing.len > 0) {
        uint64_t elapsed = fg_clock_real_ns() - start;
        if (elapsed >= timeout_ns) {
            err = FG_E_TIMEOUT;
            break;
        }
        fg_cond_wait_ns(&q->idle, &q->lock, timeout_ns - elapsed);
    }
    pthread_mutex_unlock(&q->lock);
    return err;
}

bool fg_workqueue_shutting_down(struct fg_workqueue *q)
{
    pthread_mutex_lock(&q->lock);
    bool down = q->shutting_down;
    pthread_mutex_unlock(&q->lock);
    return down;
}
