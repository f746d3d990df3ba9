/*
 * delay — add_after's min-heap and the waiting thread that empties it; see workqueue.h.
 *
 * The heap is ordered by (deadline, insertion sequence). `waiting` maps each parked key to its heap
 * index and owns the key strings the heap entries borrow; every move inside the heap updates that
 * index, so a second add_after of the same key finds its entry and can pull its deadline earlier in
 * O(log n). The waiting thread sleeps until the earliest deadline (with a fake clock, in short
 * polls, see fg_clock_sleep_until_hint), moves every due key into the FIFO and exits at shutdown;
 * keys still parked then are dropped.
 */
#include <stdlib.h>

#include "base/clock.h"
#include "base/mem.h"
#include "operator/workqueue/queue_int.h"

static bool earlier(const struct fg__delayed *a, const struct fg__delayed *b)
{
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_place(struct fg_workqueue *q, size_t i, struct fg__delayed e)
{
    q->heap[i] = e;
    (void)fg__keymap_set(&q->waiting, e.key, i, NULL);
}

static void sift_up(struct fg_workqueue *q, size_t i)
{
    struct fg__delayed e = q->heap[i];
    while (i > 0 && earlier(&e, &q->heap[(i - 1) / 2])) {
        heap_place(q, i, q->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_place(q, i, e);
}

static void sift_down(struct fg_workqueue *q, size_t i)
{
    struct fg__delayed e = q->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= q->heap_len)
            break;
        if (child + 1 < q->heap_len && earlier(&q->heap[child + 1], &q->heap[child]))
            child++;
        if (!earlier(&q->heap[child], &e))
            break;
        heap_place(q, i, q->heap[child]);
        i = child;
    }
    heap_place(q, i, e);
}

/* Parks key until due_ns, or moves its existing deadline earlier. Caller holds q->lock. */
static void park_locked(struct fg_workqueue *q, const char *key, uint64_t due_ns)
{
    uint64_t index;
    if (fg__keymap_get(&q->waiting, key, &index)) {
        if (due_ns < q->heap[index].due_ns) {
            q->heap[index].due_ns = due_ns;
            sift_up(q, (size_t)index);
        }
    } else {
        if (q->heap_len == q->heap_cap) {
            q->heap_cap = q->heap_cap ? q->heap_cap * 2 : 16;
            q->heap = fg_realloc(q->heap, q->heap_cap * sizeof *q->heap);
        }
        struct fg__delayed e = { .due_ns = due_ns, .seq = q->heap_seq++ };
        (void)fg__keymap_set(&q->waiting, key, q->heap_len, &e.key);
        q->heap[q->heap_len++] = e;
        sift_up(q, q->heap_len - 1);
    }
    if (q->heap[0].due_ns == due_ns)
        pthread_cond_signal(&q->delay_wake);
}

/* Moves every key due at `now` into the FIFO. Caller holds q->lock. */
static void release_due_locked(struct fg_workqueue *q, uint64_t now)
{
    while (q->heap_len > 0 && q->heap[0].due_ns <= now) {
        const char *key = q->heap[0].key;
        fg__queue_add_locked(q, key);
        q->heap_len--;
        if (q->heap_len > 0) {
            q->heap[0] = q->heap[q->heap_len];
            sift_down(q, 0);
        }
        (void)fg__keymap_remove(&q->waiting, key);
    }
}

void *fg__delay_loop(void *arg)
{
    struct fg_workqueue *q = arg;
    pthread_mutex_lock(&q->lock);
    while (!q->shutting_down) {
        release_due_locked(q, fg_clock_mono_ns());
        if (q->heap_len == 0)
            pthread_cond_wait(&q->delay_wake, &q->lock);
        else
            fg_cond_wait_ns(&q->delay_wake, &q->lock, fg_clock_sleep_until_hint(q->heap[0].due_ns));
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

void fg__delay_cleanup(struct fg_workqueue *q)
{
    FG_FREE(q->heap);
    q->heap_len = 0;
    q->heap_cap = 0;
}

enum fg_err fg_workqueue_add_after(struct fg_workqueue *q, const char *key, uint64_t delay_ns)
{
    if (!fg__key_valid(key))
        return FG_E_INVAL;
    enum fg_err err = FG_OK;
    pthread_mutex_lock(&q->lock);
    if (q->shutting_down) {
        err = FG_E_SHUTDOWN;
    } else if (delay_ns == 0) {
        fg__queue_add_locked(q, key);
    } else {
        uint64_t now = fg_clock_mono_ns();
        park_locked(q, key, delay_ns > UINT64_MAX - now ? UINT64_MAX : now + delay_ns);
    }
    pthread_mutex_unlock(&q->lock);
    return err;
}
