/*
 * workqueue — the queue between informers and reconcilers, with client-go's semantics.
 *
 * Keys are strings ("namespace/name", or "name" for cluster-scoped objects). The queue keeps three
 * things: a FIFO of keys waiting for a worker, a dirty set (keys that need processing) and a
 * processing set (keys a worker holds between get and done). From these follow the guarantees that
 * make level-based reconcilers safe:
 *   - adding a key that is already dirty does nothing, so a burst of events costs one reconcile;
 *   - a key is never handed to two workers at once: adding a key that is being processed marks it
 *     dirty only, and done() puts it back in the FIFO;
 *   - get() blocks until a key is ready or the queue shuts down.
 * Shutting down makes add() refuse new keys (FG_E_SHUTDOWN) and drops keys still waiting on a delay;
 * keys already in the FIFO are still handed out, and get() reports FG_E_SHUTDOWN once the FIFO is
 * empty — so a key added before shutdown is not lost. The drain variant also waits, bounded, until
 * every handed-out key is done; the discard variant instead drops every key not yet handed out, for
 * an owner that must stop at once (a controller whose replica stopped leading).
 *
 * Delaying: add_after(key, delay) parks the key in a min-heap ordered by deadline on base/clock.h's
 * monotonic clock (fake in tests); a waiting-loop thread owned by the queue moves due keys into the
 * FIFO. A key parked twice keeps the earlier deadline. Rate limiting: add_rate_limited(key) is
 * add_after(key, limiter's when(key)); forget(key) ends the key's backoff after a success.
 *
 * Every function is thread-safe. The queue owns its limiter and its waiting thread; free() requires
 * that no other thread still uses the queue.
 */
#ifndef FG_WORKQUEUE_H
#define FG_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/workqueue/ratelimit.h"

struct fg_workqueue;

struct fg_workqueue_stats {
    size_t queued;      /* keys in the FIFO (the queue depth) */
    size_t processing;  /* keys handed out and not yet done */
    size_t waiting;     /* keys parked by add_after */
    uint64_t adds;      /* keys that entered the FIFO (de-duplicated adds are not counted) */
    uint64_t retries;   /* add_rate_limited calls accepted */
};

/* Creates a queue and starts its waiting thread. Takes `limiter` (NULL: the default limiter), also
 * on failure. name (may be NULL) labels the queue's log lines. FG_E_INTERNAL if the thread cannot
 * be started. */
enum fg_err fg_workqueue_new(const char *name, struct fg_rate_limiter *limiter,
                             struct fg_workqueue **out) FG_MUST_USE;
/* Shuts the queue down if needed, joins its thread and frees it; NULL is ignored. */
void fg_workqueue_free(struct fg_workqueue *q);

/* Marks key dirty and queues it unless it is already queued or being processed.
 * FG_E_INVAL for a NULL, empty or over-long (> 512 bytes) key; FG_E_SHUTDOWN after shutdown. */
enum fg_err fg_workqueue_add(struct fg_workqueue *q, const char *key) FG_MUST_USE;
/* Blocks for the next key and hands it to the caller, who owns the string (free it after done).
 * FG_E_SHUTDOWN, *key untouched, when the queue is shutting down and the FIFO is empty. */
enum fg_err fg_workqueue_get(struct fg_workqueue *q, char **key) FG_MUST_USE;
/* Ends processing of a key returned by get; re-queues it if it was added meanwhile.
 * FG_E_INVAL when key is not being processed. */
enum fg_err fg_workqueue_done(struct fg_workqueue *q, const char *key) FG_MUST_USE;
/* Keys in the FIFO. */
size_t fg_workqueue_len(struct fg_workqueue *q);
void fg_workqueue_stats_get(struct fg_workqueue *q, struct fg_workqueue_stats *out);

/* Refuses new keys, wakes every blocked get and stops the waiting thread; idempotent. */
void fg_workqueue_shut_down(struct fg_workqueue *q);
/* Shuts down and drops every key in the FIFO and every pending re-queue: get() reports FG_E_SHUTDOWN
 * at once, and done() of a key handed out earlier queues nothing. */
void fg_workqueue_shut_down_discard(struct fg_workqueue *q);
/* Shuts down, then waits until the FIFO is empty and every key handed out is done: FG_OK, or
 * FG_E_TIMEOUT after timeout_ns of real time (the shutdown stays in effect). */
enum fg_err fg_workqueue_shut_down_with_drain(struct fg_workqueue *q, uint64_t timeout_ns) FG_MUST_USE;
bool fg_workqueue_shutting_down(struct fg_workqueue *q);

/* Adds key once delay_ns has passed on the base clock (at once when 0). If key is already waiting,
 * the earlier of the two deadlines is kept. Errors as for add. */
enum fg_err fg_workqueue_add_after(struct fg_workqueue *q, const char *key, uint64_t delay_ns) FG_MUST_USE;
/* add_after(key, the limiter's next delay for key), counting one more failure of key. */
enum fg_err fg_workqueue_add_rate_limited(struct fg_workqueue *q, const char *key) FG_MUST_USE;
/* Resets key's failure count in the limiter (it does not remove the key from the queue). */
enum fg_err fg_workqueue_forget(struct fg_workqueue *q, const char *key) FG_MUST_USE;
/* Failures counted for key since its last forget. */
enum fg_err fg_workqueue_num_requeues(struct fg_workqueue *q, const char *key, unsigned *out) FG_MUST_USE;

#endif
