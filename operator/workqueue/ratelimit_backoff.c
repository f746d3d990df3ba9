/*
 * ratelimit_backoff — per-key exponential failure backoff (client-go's
 * ItemExponentialFailureRateLimiter): the n-th failure since the last forget waits base·2^(n-1),
 * never more than max. Failure counts live in a keymap under the limiter's own lock and saturate
 * rather than wrap; forget removes the key, so the map holds only keys that are currently failing.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/mem.h"
#include "operator/workqueue/keymap.h"
#include "operator/workqueue/ratelimit_int.h"

struct backoff {
    struct fg_rate_limiter base;
    pthread_mutex_t lock;
    struct fg__keymap failures;     /* key -> failures since forget */
    uint64_t base_ns;
    uint64_t max_ns;
};

static uint64_t backoff_when(struct fg_rate_limiter *rl, const char *key)
{
    struct backoff *b = (struct backoff *)rl;
    uint64_t failures = 0;
    pthread_mutex_lock(&b->lock);
    (void)fg__keymap_get(&b->failures, key, &failures);
    if (failures < UINT32_MAX)
        (void)fg__keymap_set(&b->failures, key, failures + 1, NULL);
    pthread_mutex_unlock(&b->lock);
    /* base·2^failures <= max exactly when base <= max / 2^failures. */
    if (failures >= 63 || b->base_ns > (b->max_ns >> failures))
        return b->max_ns;
    return b->base_ns << failures;
}

static void backoff_forget(struct fg_rate_limiter *rl, const char *key)
{
    struct backoff *b = (struct backoff *)rl;
    pthread_mutex_lock(&b->lock);
    (void)fg__keymap_remove(&b->failures, key);
    pthread_mutex_unlock(&b->lock);
}

static unsigned backoff_num_requeues(struct fg_rate_limiter *rl, const char *key)
{
    struct backoff *b = (struct backoff *)rl;
    uint64_t failures = 0;
    pthread_mutex_lock(&b->lock);
    (void)fg__keymap_get(&b->failures, key, &failures);
    pthread_mutex_unlock(&b->lock);
    return (unsigned)failures;
}

static void backoff_free(struct fg_rate_limiter *rl)
{
    struct backoff *b = (struct backoff *)rl;
    fg__keymap_cleanup(&b->failures);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

static const struct fg__rate_limiter_ops backoff_ops = {
    .when = backoff_when,
    .forget = backoff_forget,
    .num_requeues = backoff_num_requeues,
    .free = backoff_free,
};

enum fg_err fg_rate_limiter_new_backoff(uint64_t base_ns, uint64_t max_ns, struct fg_rate_limiter **out)
{
    if (base_ns == 0 || max_ns < base_ns)
        return FG_E_INVAL;
    struct backoff *b = fg_calloc(1, sizeof *b);
    b->base.ops = &backoff_ops;
    pthread_mutex_init(&b->lock, NULL);
    fg__keymap_init(&b->failures);
    b->base_ns = base_ns;
    b->max_ns = max_ns;
    *out = &b->base;
    return FG_OK;
}
