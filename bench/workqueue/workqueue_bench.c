/*
 * workqueue_bench — how many keys per second the work queue moves.
 *
 * One producer thread adds keys round-robin from a key space of a given size for a fixed time while
 * four workers get and done them (no work in between), so the figures are the queue's own cost:
 * lock, hash sets, FIFO and wake-ups. A small key space shows de-duplication (many adds, few gets);
 * a large one shows the cost per handed-out key. A last run parks keys with add_after and times
 * until the waiting thread has released them all. Figures go to stdout, one line per run.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "operator/workqueue/workqueue.h"

#define WORKERS 4
#define RUN_NS (1500 * FG_NS_PER_MS)

struct run {
    struct fg_workqueue *q;
    unsigned key_space;
    atomic_bool stop;
    uint64_t adds;
    atomic_uint_fast64_t gets;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker_main(void *arg)
{
    struct run *r = arg;
    char *key;
    while (fg_workqueue_get(r->q, &key) == FG_OK) {
        atomic_fetch_add(&r->gets, 1);
        if (fg_workqueue_done(r->q, key) != FG_OK)
            abort();
        free(key);
    }
    return NULL;
}

static void *producer_main(void *arg)
{
    struct run *r = arg;
    char key[64];
    for (uint64_t i = 0; !atomic_load(&r->stop); i++) {
        snprintf(key, sizeof key, "namespace-%u/pod-%u", (unsigned)(i % 97), (unsigned)(i % r->key_space));
        if (fg_workqueue_add(r->q, key) != FG_OK)
            abort();
        r->adds++;
    }
    return NULL;
}

static int run_add_get(unsigned key_space)
{
    struct run r = { .key_space = key_space };
    if (fg_workqueue_new("bench", NULL, &r.q) != FG_OK)
        return 1;
    pthread_t workers[WORKERS], producer;
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&workers[i], NULL, worker_main, &r);
    double t0 = now_s();
    pthread_create(&producer, NULL, producer_main, &r);
    struct timespec run = { .tv_sec = RUN_NS / FG_NS_PER_S, .tv_nsec = (long)(RUN_NS % FG_NS_PER_S) };
    nanosleep(&run, NULL);
    atomic_store(&r.stop, true);
    pthread_join(producer, NULL);
    enum fg_err err = fg_workqueue_shut_down_with_drain(r.q, 10 * FG_NS_PER_S);
    double elapsed = now_s() - t0;
    for (int i = 0; i < WORKERS; i++)
        pthread_join(workers[i], NULL);
    fg_workqueue_free(r.q);
    if (err)
        return 1;
    uint64_t gets = atomic_load(&r.gets);
    printf("workqueue add+get, %d workers, %6u keys: %10.0f adds/s %10.0f gets/s %10.0f adds+gets/s (%.1f adds per get)\n",
           WORKERS, key_space, (double)r.adds / elapsed, (double)gets / elapsed, (double)(r.adds + gets) / elapsed,
           gets ? (double)r.adds / (double)gets : 0.0);
    return 0;
}

static int run_add_after(unsigned n)
{
    struct run r = { .key_space = n };
    if (fg_workqueue_new("bench", NULL, &r.q) != FG_OK)
        return 1;
    pthread_t workers[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&workers[i], NULL, worker_main, &r);
    char key[64];
    double t0 = now_s();
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof key, "default/pod-%u", i);
        /* Spread over 0..100 ms, in scrambled order so the heap works. */
        if (fg_workqueue_add_after(r.q, key, (uint64_t)((i * 7919u) % 100) * FG_NS_PER_MS + 1) != FG_OK)
            return 1;
    }
    double parked = now_s() - t0;
    while (atomic_load(&r.gets) < n && now_s() - t0 < 30.0) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    double elapsed = now_s() - t0;
    fg_workqueue_shut_down(r.q);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(workers[i], NULL);
    fg_workqueue_free(r.q);
    printf("workqueue add_after, %u keys over 100 ms: %10.0f add_after/s, all handed out after %.0f ms\n", n,
           (double)n / parked, elapsed * 1000.0);
    return 0;
}

int main(void)
{
    if (run_add_get(100) || run_add_get(10000) || run_add_get(1000000) || run_add_after(200000)) {
        fprintf(stderr, "workqueue bench failed\n");
        return 1;
    }
    return 0;
}
