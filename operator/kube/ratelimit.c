/*
 * ratelimit — token bucket; see ratelimit.h.
 *
 * Tokens are a double refilled lazily on each reservation from the time elapsed since the last one,
 * under a mutex. The bucket starts full, as client-go's does.
 */
#include "operator/kube/ratelimit.h"

#include <time.h>

#include "base/clock.h"

void fg_kube_ratelimit_init(struct fg_kube_ratelimit *rl, double qps, unsigned burst)
{
    pthread_mutex_init(&rl->lock, NULL);
    rl->qps = qps;
    rl->burst = burst ? (double)burst : 1.0;
    rl->tokens = rl->burst;
    rl->last_ns = fg_clock_mono_ns();
}

void fg_kube_ratelimit_cleanup(struct fg_kube_ratelimit *rl)
{
    pthread_mutex_destroy(&rl->lock);
}

uint64_t fg_kube_ratelimit_reserve(struct fg_kube_ratelimit *rl)
{
    if (rl->qps <= 0)
        return 0;
    pthread_mutex_lock(&rl->lock);
    uint64_t now = fg_clock_mono_ns();
    if (now > rl->last_ns) {
        rl->tokens += (double)(now - rl->last_ns) * rl->qps / (double)FG_NS_PER_S;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last_ns = now;
    }
    uint64_t delay = 0;
    if (rl->tokens >= 1.0) {
        rl->tokens -= 1.0;
    } else {
        delay = (uint64_t)((1.0 - rl->tokens) * (double)FG_NS_PER_S / rl->qps) + 1;
    }
    pthread_mutex_unlock(&rl->lock);
    return delay;
}

void fg_kube_ratelimit_wait(struct fg_kube_ratelimit *rl)
{
    uint64_t delay;
    while ((delay = fg_kube_ratelimit_reserve(rl)) != 0) {
        uint64_t ns = fg_clock_sleep_until_hint(fg_clock_mono_ns() + delay);
        struct timespec ts = { .tv_sec = (time_t)(ns / FG_NS_PER_S), .tv_nsec = (long)(ns % FG_NS_PER_S) };
        nanosleep(&ts, NULL);
    }
}
