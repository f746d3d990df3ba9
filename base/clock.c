/* clock — monotonic clock with a test override; see clock.h. */
#include "clock.h"

#include <stdatomic.h>
#include <time.h>

static atomic_bool fake_on;
static atomic_uint_fast64_t fake_now;

uint64_t fg_clock_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * FG_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t fg_clock_mono_ns(void)
{
    if (atomic_load(&fake_on))
        return (uint64_t)atomic_load(&fake_now);
    return fg_clock_real_ns();
}

int64_t fg_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fg_clock_fake_set(uint64_t now_ns)
{
    atomic_store(&fake_now, now_ns);
    atomic_store(&fake_on, true);
}

void fg_clock_fake_advance(uint64_t delta_ns)
{
    atomic_fetch_add(&fake_now, delta_ns);
}

void fg_clock_fake_clear(void)
{
    atomic_store(&fake_on, false);
}

bool fg_clock_is_fake(void)
{
    return atomic_load(&fake_on);
}

uint64_t fg_clock_sleep_until_hint(uint64_t deadline_ns)
{
    if (fg_clock_is_fake())
        return FG_NS_PER_MS;
    uint64_t now = fg_clock_mono_ns();
    return deadline_ns > now ? deadline_ns - now : 0;
}

void fg_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

void fg_cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t timeout_ns)
{
    if (timeout_ns > 3600 * FG_NS_PER_S)
        timeout_ns = 3600 * FG_NS_PER_S;
    uint64_t deadline = fg_clock_real_ns() + timeout_ns;
    struct timespec ts = { (time_t)(deadline / FG_NS_PER_S), (long)(deadline % FG_NS_PER_S) };
    pthread_cond_timedwait(cond, lock, &ts);
}
