/*
 * ratelimit_bucket — one token bucket for all keys (client-go's BucketRateLimiter, which wraps
 * golang.org/x/time/rate). The bucket holds at most `burst` tokens and refills at `qps` per second
 * of the base clock. Each call takes a token; when none is left it reserves the next one to come,
 * so the balance goes negative and the returned delay is the time until that token exists. The
 * bucket does not know keys: forget is a no-op and num_requeues is always 0.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/mem.h"
#include "operator/workqueue/ratelimit_int.h"

struct bucket {
    struct fg_rate_limiter base;
    pthread_mutex_t lock;
    double qps;
    double burst;
    double tokens;      /* may be negative: tokens already promised to waiting callers */
    uint64_t last_ns;   /* clock reading of the last refill */
};

static uint64_t bucket_when(struct fg_rate_limiter *rl, const char *key)
{
    (void)key;
    struct bucket *b = (struct bucket *)rl;
    pthread_mutex_lock(&b->lock);
    uint64_t now = fg_clock_mono_ns();
    if (now > b->last_ns) {
        b->tokens = fmin(b->burst, b->tokens + (double)(now - b->last_ns) * b->qps / (double)FG_NS_PER_S);
        b->last_ns = now;
    }
    b->tokens -= 1.0;
    double wait_s = b->tokens < 0 ? -b->tokens / b->qps : 0.0;
    pthread_mutex_unlock(&b->lock);
    return (uint64_t)llround(wait_s * (double)FG_NS_PER_S);
}

static void bucket_forget(struct fg_rate_limiter *rl, const char *key)
{
    (void)rl;
    (void)key;
}

static unsigned bucket_num_requeues(struct fg_rate_limiter *rl, const char *key)
{
    (void)rl;
    (void)key;
    return 0;
}

static void bucket_free(struct fg_rate_limiter *rl)
{
    struct bucket *b = (struct bucket *)rl;
    pthread_mutex_destroy(&b->lock);
    free(b);
}

static const struct fg__rate_limiter_ops bucket_ops = {
    .when = bucket_when,
    .forget = bucket_forget,
    .num_requeues = bucket_num_requeues,
    .free = bucket_free,
};

enum fg_err fg_rate_limiter_new_bucket(double qps, unsigned burst, struct fg_rate_limiter **out)
{
    if (!(qps > 0) || !isfinite(qps) || burst == 0)
        return FG_E_INVAL;
    struct bucket *b = fg_calloc(1, sizeof *b);
    b->base.ops = &bucket_ops;
    pthread_mutex_init(&b->lock, NULL);
    b->qps = qps;
    b->burst = (double)burst;
    b->tokens = (double)burst;
    b->last_ns = fg_clock_mono_ns();
    *out = &b->base;
    return FG_OK;
}
