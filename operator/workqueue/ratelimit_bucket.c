/*
 * ratelimit_bucket — one token bucket for all keys (client-go's BucketRateLimiter, which wraps
 * golang.org/x/time/rate): base/tokenbucket's reserve, behind the rate-limiter interface. Each call
 * takes a token; when none is left it reserves the next one to come and returns the time until that
 * token exists. The bucket does not know keys: forget is a no-op and num_requeues is always 0.
 */
#include <math.h>
#include <stdlib.h>

#include "base/mem.h"
#include "base/tokenbucket.h"
#include "operator/workqueue/ratelimit_int.h"

struct bucket {
    struct fg_rate_limiter base;
    struct fg_token_bucket tb;
};

static uint64_t bucket_when(struct fg_rate_limiter *rl, const char *key)
{
    (void)key;
    return fg_token_bucket_reserve(&((struct bucket *)rl)->tb);
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
    fg_token_bucket_cleanup(&b->tb);
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
    fg_token_bucket_init(&b->tb, qps, burst);
    *out = &b->base;
    return FG_OK;
}
