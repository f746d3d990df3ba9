/*
 * ratelimit_int — the vtable every rate-limiter kind implements (internal to operator/workqueue).
 *
 * Each kind embeds `struct fg_rate_limiter` as its first member and supplies the four operations;
 * ratelimit.c validates keys once and dispatches, so implementations see only valid keys.
 */
#ifndef FG_WORKQUEUE_RATELIMIT_INT_H
#define FG_WORKQUEUE_RATELIMIT_INT_H

#include <stdint.h>

#include "operator/workqueue/ratelimit.h"

struct fg__rate_limiter_ops {
    uint64_t (*when)(struct fg_rate_limiter *rl, const char *key);
    void (*forget)(struct fg_rate_limiter *rl, const char *key);
    unsigned (*num_requeues)(struct fg_rate_limiter *rl, const char *key);
    void (*free)(struct fg_rate_limiter *rl);
};

struct fg_rate_limiter {
    const struct fg__rate_limiter_ops *ops;
};

#endif
