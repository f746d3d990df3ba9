/* backoff — exponential retry delays with jitter and reset; see backoff.h. */
#include "backoff.h"

#include "base/clock.h"

#define MAX_DOUBLINGS 40

void fg_backoff_init(struct fg_backoff *b, uint64_t initial_ns, uint64_t max_ns, uint64_t reset_ns,
                     double jitter, uint64_t seed)
{
    *b = (struct fg_backoff){ .initial_ns = initial_ns, .max_ns = max_ns, .reset_ns = reset_ns,
                              .jitter = jitter, .rng = seed };
    if (!b->rng)
        b->rng = fg_clock_mono_ns() | 1;
}

static uint64_t next_rand(struct fg_backoff *b)
{
    uint64_t x = b->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b->rng = x;
    return x;
}

uint64_t fg_backoff_rand_range(struct fg_backoff *b, uint64_t lo, uint64_t hi)
{
    return hi <= lo ? lo : lo + next_rand(b) % (hi - lo + 1);
}

uint64_t fg_backoff_next(struct fg_backoff *b)
{
    uint64_t now = fg_clock_mono_ns();
    if (b->attempt && now - b->last_ns >= b->reset_ns)
        b->attempt = 0;
    b->last_ns = now;
    uint64_t base = b->initial_ns;
    for (unsigned i = 0; i < b->attempt && base < b->max_ns; i++)
        base *= 2;
    if (b->attempt < MAX_DOUBLINGS)
        b->attempt++;
    if (base > b->max_ns)
        base = b->max_ns;
    double share = (double)(next_rand(b) >> 11) / (double)(1ull << 53); /* [0, 1) */
    uint64_t delay = base + (uint64_t)(share * b->jitter * (double)base);
    return delay > b->max_ns ? b->max_ns : delay;
}
