/*
 * ratelimit — the client-side token bucket (client-go's QPS and burst).
 *
 * The bucket holds up to `burst` tokens and refills at `qps` per second, measured on the base clock
 * (base/clock.h) so tests step it with the fake clock. It is shared by every thread of a client:
 * synchronous calls block in fg_kube_ratelimit_wait, the loop thread never blocks and instead asks
 * fg_kube_ratelimit_reserve how long to wait and sets a timer. qps <= 0 disables limiting.
 */
#ifndef FG_KUBE_RATELIMIT_H
#define FG_KUBE_RATELIMIT_H

#include <pthread.h>
#include <stdint.h>

struct fg_kube_ratelimit {
    pthread_mutex_t lock;
    double qps;
    double burst;
    double tokens;
    uint64_t last_ns;
};

void fg_kube_ratelimit_init(struct fg_kube_ratelimit *rl, double qps, unsigned burst);
void fg_kube_ratelimit_cleanup(struct fg_kube_ratelimit *rl);
/* Takes a token and returns 0, or takes nothing and returns the ns until one is free. */
uint64_t fg_kube_ratelimit_reserve(struct fg_kube_ratelimit *rl);
/* Blocks until a token is taken. Not for the loop thread. */
void fg_kube_ratelimit_wait(struct fg_kube_ratelimit *rl);

#endif
