/*
 * queue_int — the work queue's state, shared by queue.c (FIFO, dirty and processing sets,
 * shutdown), delay.c (the delaying heap and its waiting thread) and ratelimited.c. Internal to
 * operator/workqueue. One mutex guards everything in the struct except `limiter`, which is
 * thread-safe on its own and fixed for the queue's life.
 */
#ifndef FG_WORKQUEUE_QUEUE_INT_H
#define FG_WORKQUEUE_QUEUE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "operator/workqueue/keymap.h"
#include "operator/workqueue/workqueue.h"

struct fg__delayed {
    uint64_t due_ns;
    uint64_t seq;       /* insertion order: equal deadlines leave in the order they came */
    const char *key;    /* borrowed from fg_workqueue.waiting, which owns it */
};

struct fg_workqueue {
    char *name;
    pthread_mutex_t lock;
    pthread_cond_t ready;       /* a key entered the FIFO, or shutdown */
    pthread_cond_t idle;        /* a done() left the FIFO and the processing set empty */
    pthread_cond_t delay_wake;  /* the waiting thread's: a new earliest deadline, or shutdown */
    bool shutting_down;

    char **fifo;                /* ring of owned keys */
    size_t fifo_head, fifo_len, fifo_cap;
    struct fg__keymap dirty;
    struct fg__keymap processing;
    uint64_t adds, retries;

    struct fg__delayed *heap;   /* min-heap on (due_ns, seq) */
    size_t heap_len, heap_cap;
    uint64_t heap_seq;
    struct fg__keymap waiting;  /* key -> its index in heap */
    pthread_t waiter;
    bool waiter_started;

    struct fg_rate_limiter *limiter;
};

/* Queues key as add() does; the caller holds q->lock and has checked the key and shutdown. */
void fg__queue_add_locked(struct fg_workqueue *q, const char *key);

/* delay.c: the waiting thread's body, and the release of the heap at free. */
void *fg__delay_loop(void *arg);
void fg__delay_cleanup(struct fg_workqueue *q);

#endif
