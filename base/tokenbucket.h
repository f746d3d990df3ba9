/*
 * tokenbucket — a token bucket on the base clock: client-go's QPS and burst, Go's rate.Limiter.
 *
 * The bucket holds at most `burst` tokens and refills at `qps` per second of fg_clock_mono_ns(), so
 * tests step it with the fake clock. Callers use it in one of two ways:
 *   - try_take: take a token now, or take nothing and learn how long until one exists (the kube
 *     loop, which must not block, sets a timer for that long and tries again);
 *   - reserve: take a token now or promise the next one to come, which drives the balance negative,
 *     and learn how long until the promised token exists (the work queue's global limiter).
 * wait blocks until a token is taken (synchronous API calls). Thread-safe. qps <= 0 means unlimited.
 */
#ifndef FG_BASE_TOKENBUCKET_H
#define FG_BASE_TOKENBUCKET_H

#include <pthread.h>
#include <stdint.h>

struct fg_token_bucket {
    pthread_mutex_t lock;
    double qps;
    double burst;
    double tokens;      /* may be negative: tokens promised by reserve */
    uint64_t last_ns;   /* clock reading of the last refill */
};

/* burst 0 is taken as 1. */
void fg_token_bucket_init(struct fg_token_bucket *tb, double qps, unsigned burst);
void fg_token_bucket_cleanup(struct fg_token_bucket *tb);

/* Takes a token and returns 0, or takes nothing and returns the ns until one is free. */
uint64_t fg_token_bucket_try_take(struct fg_token_bucket *tb);
/* Takes a token, now or the next to come; returns the ns until it exists (0: now). */
uint64_t fg_token_bucket_reserve(struct fg_token_bucket *tb);
/* Blocks until a token is taken. */
void fg_token_bucket_wait(struct fg_token_bucket *tb);

#endif
