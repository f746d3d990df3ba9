/*
 * ratelimit — how long a key that failed waits before it is retried.
 *
 * A `struct fg_rate_limiter` answers three questions about a key, as client-go's RateLimiter does:
 * when (the delay before the next retry, counting this call as one more failure), forget (the key
 * succeeded: start over) and num_requeues (failures counted since the last forget). Three kinds:
 *   - backoff: per-key exponential failure backoff, base·2^failures capped at max;
 *   - bucket: one token bucket shared by every key (qps refill, burst capacity); a call that finds no
 *     token reserves a future one, so the delays of a burst grow 1/qps apart;
 *   - max_of: the largest delay of its children (it calls each, so each keeps its own count).
 * fg_rate_limiter_new_default is client-go's DefaultControllerRateLimiter: max of backoff(5 ms,
 * 1000 s) and bucket(10 qps, burst 100). Delays are computed on base/clock.h's monotonic clock, so
 * tests drive them with the fake clock. Every limiter is thread-safe. A limiter is owned by whoever
 * created it until handed to max_of or a work queue, which then free it.
 */
#ifndef FG_WORKQUEUE_RATELIMIT_H
#define FG_WORKQUEUE_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct fg_rate_limiter;

#define FG_RATE_LIMIT_DEFAULT_BASE_NS (5 * 1000000ull)
#define FG_RATE_LIMIT_DEFAULT_MAX_NS (1000 * 1000000000ull)
#define FG_RATE_LIMIT_DEFAULT_QPS 10.0
#define FG_RATE_LIMIT_DEFAULT_BURST 100u

/* FG_E_INVAL when base_ns is 0 or max_ns < base_ns. */
enum fg_err fg_rate_limiter_new_backoff(uint64_t base_ns, uint64_t max_ns,
                                        struct fg_rate_limiter **out) FG_MUST_USE;
/* FG_E_INVAL unless qps > 0 (and finite) and burst >= 1. The bucket starts full. */
enum fg_err fg_rate_limiter_new_bucket(double qps, unsigned burst, struct fg_rate_limiter **out) FG_MUST_USE;
/* Takes the n children (all of them, also on failure); FG_E_INVAL when n is 0 or one is NULL. */
enum fg_err fg_rate_limiter_new_max_of(struct fg_rate_limiter **children, size_t n,
                                       struct fg_rate_limiter **out) FG_MUST_USE;
/* max_of(backoff(5 ms, 1000 s), bucket(10 qps, burst 100)). Never fails. */
struct fg_rate_limiter *fg_rate_limiter_new_default(void);
void fg_rate_limiter_free(struct fg_rate_limiter *rl);

/* Counts one more failure of key and sets *delay_ns to the wait before its retry.
 * FG_E_INVAL for a NULL, empty or over-long key (nothing counted). */
enum fg_err fg_rate_limiter_when(struct fg_rate_limiter *rl, const char *key, uint64_t *delay_ns) FG_MUST_USE;
/* Drops key's failure count. FG_E_INVAL for a bad key. */
enum fg_err fg_rate_limiter_forget(struct fg_rate_limiter *rl, const char *key) FG_MUST_USE;
/* Failures of key since its last forget. FG_E_INVAL for a bad key. */
enum fg_err fg_rate_limiter_num_requeues(struct fg_rate_limiter *rl, const char *key, unsigned *out) FG_MUST_USE;

#endif
