/*
 * clock — the time source every module reads, and that tests can drive.
 *
 * fg_clock_mono_ns() is CLOCK_MONOTONIC unless a test has frozen it with fg_clock_fake_set(); from
 * then on it returns the fake value, which only fg_clock_fake_advance() moves. Backoffs, rate
 * limiters, delayed queues and resyncs compute their deadlines from this clock, so a test can step
 * through an hour of backoff in microseconds. Threads that must sleep until such a deadline use
 * fg_clock_sleep_until_hint(): with a real clock it is the true remaining time, with a fake one a
 * short poll, so sleepers notice an advance promptly.
 */
#ifndef FG_BASE_CLOCK_H
#define FG_BASE_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define FG_NS_PER_MS 1000000ull
#define FG_NS_PER_S 1000000000ull

uint64_t fg_clock_mono_ns(void);
/* Wall clock in milliseconds since the epoch (never faked: used for timestamps only). */
int64_t fg_clock_wall_ms(void);

/* Freezes the monotonic clock at now_ns (tests only). */
void fg_clock_fake_set(uint64_t now_ns);
void fg_clock_fake_advance(uint64_t delta_ns);
/* Returns to the real clock. */
void fg_clock_fake_clear(void);
bool fg_clock_is_fake(void);

/* How long (ns) a thread waiting for `deadline_ns` should block before looking again. */
uint64_t fg_clock_sleep_until_hint(uint64_t deadline_ns);

/* Real time, never the fake clock: CLOCK_MONOTONIC in ns, for timeouts that bound a real wait. */
uint64_t fg_clock_real_ns(void);
/* A condition variable whose timed waits run on CLOCK_MONOTONIC, so they do not jump with the wall
 * clock. */
void fg_cond_init_monotonic(pthread_cond_t *cond);
/* pthread_cond_wait bounded by timeout_ns of real time (an hour at most); the caller holds lock and,
 * since wake-ups may be spurious, loops and looks again. */
void fg_cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t timeout_ns);

#endif
