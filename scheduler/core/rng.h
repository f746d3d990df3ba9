/*
 * rng — a small seeded random generator (xoshiro256**, seeded through splitmix64).
 *
 * Replays must be repeatable from a seed and independent of the C library's rand(); the state is a
 * plain struct the caller owns.
 */
#ifndef FG_SCHEDULER_CORE_RNG_H
#define FG_SCHEDULER_CORE_RNG_H

#include <stdint.h>

struct fg_sched_rng {
    uint64_t s[4];
};

void fg_sched_rng_seed(struct fg_sched_rng *r, uint64_t seed);
uint64_t fg_sched_rng_next(struct fg_sched_rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t fg_sched_rng_below(struct fg_sched_rng *r, uint64_t n);

#endif
