/*
 * backoff — retry delays that grow exponentially, with jitter, up to a cap (client-go's
 * ExponentialBackoffManager).
 *
 * Each fg_backoff_next doubles the base delay (initial, 2x, 4x ... max) and adds a random share of
 * up to `jitter` times it, so a fleet of clients that failed together does not retry together. A
 * failure that comes more than `reset_ns` after the previous one starts again from `initial`: the
 * period in between was healthy. Time comes from base/clock.h, so tests drive it with the fake clock.
 * Plain data, owned by its user; not thread-safe.
 */
#ifndef FG_CACHE_BACKOFF_H
#define FG_CACHE_BACKOFF_H

#include <stdint.h>

struct fg_backoff {
    uint64_t initial_ns, max_ns, reset_ns;
    double jitter;
    unsigned attempt;        /* failures since the last reset */
    uint64_t last_ns;        /* clock time of the previous failure */
    uint64_t rng;            /* xorshift state, never 0 */
};

/* seed 0 = seeded from the clock. */
void fg_backoff_init(struct fg_backoff *b, uint64_t initial_ns, uint64_t max_ns, uint64_t reset_ns,
                     double jitter, uint64_t seed);
/* The delay before the next retry, in ns; records a failure now. */
uint64_t fg_backoff_next(struct fg_backoff *b);
/* A uniformly drawn integer in [lo, hi] from the same generator. */
uint64_t fg_backoff_rand_range(struct fg_backoff *b, uint64_t lo, uint64_t hi);

#endif
