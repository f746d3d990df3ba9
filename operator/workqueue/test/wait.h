/*
 * wait — bounded polling for the work-queue tests: the waiting thread moves keys asynchronously,
 * so a test waits (at most a few seconds of real time) for the FIFO to reach an expected length.
 */
#ifndef FG_WORKQUEUE_TEST_WAIT_H
#define FG_WORKQUEUE_TEST_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "operator/workqueue/workqueue.h"

#define WAIT_LIMIT_MS 5000

static inline void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* True once fg_workqueue_len(q) == n; false after WAIT_LIMIT_MS. */
static inline bool wait_len(struct fg_workqueue *q, size_t n)
{
    for (unsigned waited = 0; waited < WAIT_LIMIT_MS; waited++) {
        if (fg_workqueue_len(q) == n)
            return true;
        sleep_ms(1);
    }
    return fg_workqueue_len(q) == n;
}

#endif
