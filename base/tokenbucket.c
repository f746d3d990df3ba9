/* tokenbucket — see tokenbucket.h. */
#include "base/tokenbucket.h"

#include <math.h>
#include <time.h>

#include "base/clock.h"

void fg_token_bucket_init(struct fg_token_bucket *tb, double qps, unsigned burst)
{
    pthread_mutex_init(&tb->lock, NULL);
    tb->qps = qps;
    tb->burst = burst ? (double)burst : 1.0;
    tb->tokens = tb->burst;
    tb->last_ns = fg_clock_mono_ns();
}

void fg_token_bucket_cleanup(struct fg_token_bucket *tb)
{
    pthread_mutex_destroy(&tb->lock);
}

/* Adds the tokens earned since the last refill. Lock held. */
static void refill(struct fg_token_bucket *tb)
{
    uint64_t now = fg_clock_mono_ns();
    if (now > tb->last_ns) {
        tb->tokens = fmin(tb->burst, tb->tokens + (double)(now - tb->last_ns) * tb->qps / (double)FG_NS_PER_S);
        tb->last_ns = now;
    }
}

uint64_t fg_token_bucket_try_take(struct fg_token_bucket *tb)
{
    if (tb->qps <= 0)
        return 0;
    pthread_mutex_lock(&tb->lock);
    refill(tb);
    uint64_t delay = 0;
    if (tb->tokens >= 1.0)
        tb->tokens -= 1.0;
    else
        delay = (uint64_t)((1.0 - tb->tokens) * (double)FG_NS_PER_S / tb->qps) + 1;
    pthread_mutex_unlock(&tb->lock);
    return delay;
}

uint64_t fg_token_bucket_reserve(struct fg_token_bucket *tb)
{
    if (tb->qps <= 0)
        return 0;
    pthread_mutex_lock(&tb->lock);
    refill(tb);
    tb->tokens -= 1.0;
    double wait_s = tb->tokens < 0 ? -tb->tokens / tb->qps : 0.0;
    pthread_mutex_unlock(&tb->lock);
    return (uint64_t)llround(wait_s * (double)FG_NS_PER_S);
}

void fg_token_bucket_wait(struct fg_token_bucket *tb)
{
    uint64_t delay;
    while ((delay = fg_token_bucket_try_take(tb)) != 0) {
        uint64_t ns = fg_clock_sleep_until_hint(fg_clock_mono_ns() + delay);
        struct timespec ts = { .tv_sec = (time_t)(ns / FG_NS_PER_S), .tv_nsec = (long)(ns % FG_NS_PER_S) };
        nanosleep(&ts, NULL);
    }
}
