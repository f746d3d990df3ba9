/* The recommender against hand-computed cases: targets and bounds, minHistory, clamps, peaks leaving
 * the window, the OOM and overuse bumps, hysteresis, a noisy stationary trace, and hostile samples. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rightsizing/recommender.h"

#define MIN_MS (60 * 1000ll)
#define HOUR_MS (60 * MIN_MS)

/* A policy: window 48 h (slots of 1 h), minHistory 2 h, compute p90 + 10% within 50..1000, memory the
 * peak + 10% within 256..81920, cooldown 1 h, threshold 10%. */
static struct fg_rec_opts opts(void)
{
    struct fg_rec_opts o = { .gpu_memory_mib = 81920 };
    fg_gpupolicy_spec_defaults(&o.policy);
    o.policy.history_window_ms = 48 * HOUR_MS;
    o.policy.min_history_ms = 2 * HOUR_MS;
    o.policy.compute = (struct fg_gpupolicy_resource){ 90, 10, 50, 1000 };
    o.policy.memory = (struct fg_gpupolicy_resource){ 100, 10, 256, 81920 };
    o.policy.cooldown_ms = HOUR_MS;
    o.policy.change_threshold_percent = 10;
    return o;
}

static enum fg_rec_refusal add(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t t, double milli, double mib)
{
    struct fg_rec_sample x = { t, true, true, milli, mib };
    return fg_rec_add(s, o, &x);
}

/* One sample a minute from `from` to `to` (exclusive). */
static void feed(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t from, int64_t to, double milli,
                 double mib)
{
    for (int64_t t = from; t < to; t += MIN_MS)
        assert_int_equal(add(s, o, t, milli, mib), FG_REC_OK);
}

static void nothing_before_min_history(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, 2 * HOUR_MS, 200, 4000);   /* the last sample is at 1 h 59 m */
    struct fg_rec_result r;
    fg_rec_recommend(&s, &o, 2 * HOUR_MS, &r);
    assert_false(r.ready);
    struct fg_rec_decision d;
    fg_rec_decide(&s, &o, 2 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_KEEP);
    assert_string_equal(d.reason, "InsufficientHistory");
    assert_false(s.applied.set);
    feed(&s, &o, 2 * HOUR_MS, 2 * HOUR_MS + MIN_MS, 200, 4000);
    fg_rec_decide(&s, &o, 2 * HOUR_MS + MIN_MS, &d);
    assert_int_equal(d.action, FG_REC_FIRST);
    assert_true(s.applied.set);
}

/* 200 milli falls in bucket 22 of the compute histogram (starts 100·(1.05^i − 1): 195.3, 207.1), whose
 * end 207.15 × 1.1 = 227.9 → 228. Memory's peak is exact: 3000 × 1.1 = 3300. */
static void targets_from_percentile_and_peak(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, HOUR_MS, 200, 1000);
    feed(&s, &o, HOUR_MS, HOUR_MS + MIN_MS, 200, 3000);
    feed(&s, &o, HOUR_MS + MIN_MS, 4 * HOUR_MS, 200, 2000);
    struct fg_rec_result r;
    fg_rec_recommend(&s, &o, 4 * HOUR_MS, &r);
    assert_true(r.ready);
    assert_int_equal(r.compute_milli, 228);
    assert_int_equal(r.memory_mib, 3300);
    /* 239 minutes of a 48 h window: confidence 239/2880, spread 2 − 239/2880 = 5521/2880 */
    assert_true(fabs(r.confidence - 239.0 / 2880) < 1e-9);
    assert_int_equal(r.compute_upper, 438);   /* 228 × 5521/2880 = 437.08 */
    assert_int_equal(r.compute_lower, 119);   /* 228 × 2880/5521 = 118.93 */
    assert_int_equal(r.memory_upper, 6327);   /* 3300 × 5521/2880 = 6326.15 */
    struct fg_rec_usage u;
    fg_rec_usage(&s, &o, 4 * HOUR_MS, &u);
    assert_int_equal(u.samples, 240);
    assert_int_equal(u.covered_ms, 4 * HOUR_MS - MIN_MS);
    assert_true(u.memory_peak_mib == 3000);
    assert_true(fabs(u.compute_p90 - 207.1525) < 0.01);
}

/* The p90 of 95 samples at 100 and 5 at 800: the 90th lies in 100's bucket (98.0..107.9), end 107.89
 * → × 1.1 = 118.7 → 119. */
static void percentile_ignores_the_tail_above_it(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    o.policy.min_history_ms = 0;
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    for (int i = 0; i < 100; i++)
        assert_int_equal(add(&s, &o, i * MIN_MS, i % 20 == 19 ? 800 : 100, 1000), FG_REC_OK);
    struct fg_rec_result r;
    fg_rec_recommend(&s, &o, 100 * MIN_MS, &r);
    assert_int_equal(r.compute_milli, 119);
}

static void clamped_to_policy_and_gpu(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    o.policy.min_history_ms = 0;
    o.policy.compute.max = 500;
    o.policy.memory.min = 8192;
    o.gpu_memory_mib = 40960;
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, HOUR_MS, 900, 100);
    struct fg_rec_result r;
    fg_rec_recommend(&s, &o, HOUR_MS, &r);
    assert_int_equal(r.compute_milli, 500);
    assert_int_equal(r.memory_mib, 8192);
    feed(&s, &o, HOUR_MS, 2 * HOUR_MS, 10, 40000);   /* 40000 × 1.1 is above the GPU's 40960 */
    fg_rec_recommend(&s, &o, 2 * HOUR_MS, &r);
    assert_int_equal(r.memory_mib, 40960);
    assert_int_equal(r.memory_upper, 40960);
    /* compute 10 milli, below the policy's minimum of 50, once the 900s have faded far enough? no: p90
     * of an hour of 900 and an hour of 10 is still 900's bucket */
    assert_int_equal(r.compute_milli, 500);
}

static void peaks_leave_the_window(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, HOUR_MS, 100, 20000);
    feed(&s, &o, HOUR_MS, 47 * HOUR_MS, 100, 5000);
    struct fg_rec_result r;
    fg_rec_recommend(&s, &o, 47 * HOUR_MS, &r);
    assert_int_equal(r.memory_mib, 22000);   /* the first hour is still within 48 h */
    feed(&s, &o, 47 * HOUR_MS, 60 * HOUR_MS, 100, 5000);
    fg_rec_recommend(&s, &o, 60 * HOUR_MS, &r);
    assert_int_equal(r.memory_mib, 5500);
    assert_true(r.confidence == 1.0);
    assert_int_equal(r.memory_upper, 5500);   /* a full window: the bounds close on the target */
}

/* Applied 3300 MiB; an OOM kill at 3200 MiB used raises the floor to 3300 × 1.2 = 3960, at once,
 * within the cooldown and below the threshold's reach. */
static void oom_raises_memory_at_once(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, 3 * HOUR_MS, 200, 3000);
    struct fg_rec_decision d;
    fg_rec_decide(&s, &o, 3 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_FIRST);
    assert_int_equal(s.applied.memory_mib, 3300);
    fg_rec_oom(&s, &o, 3 * HOUR_MS + MIN_MS, 3200);
    fg_rec_decide(&s, &o, 3 * HOUR_MS + MIN_MS, &d);
    assert_int_equal(d.action, FG_REC_BUMP);
    assert_string_equal(d.reason, "OutOfMemory");
    assert_int_equal(d.before.memory_mib, 3300);
    assert_int_equal(d.after.memory_mib, 3960);
    assert_int_equal(s.ooms, 1);
    /* the floor holds: more of the same use does not bring memory back down */
    feed(&s, &o, 3 * HOUR_MS + MIN_MS, 10 * HOUR_MS, 200, 3000);
    fg_rec_decide(&s, &o, 10 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_KEEP);
    assert_int_equal(s.applied.memory_mib, 3960);
}

/* Applied 1100 MiB (a 1000 MiB peak); a sample of 1200 overruns it: the floor is 1200 × 1.1 = 1320, the
 * target of that peak, at once. */
static void overuse_raises_memory_at_once(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, 3 * HOUR_MS, 200, 1000);
    struct fg_rec_decision d;
    fg_rec_decide(&s, &o, 3 * HOUR_MS, &d);
    assert_int_equal(s.applied.memory_mib, 1100);
    assert_int_equal(add(&s, &o, 3 * HOUR_MS, 200, 1200), FG_REC_OK);
    fg_rec_decide(&s, &o, 3 * HOUR_MS + 1, &d);
    assert_int_equal(d.action, FG_REC_BUMP);
    assert_string_equal(d.reason, "MemoryOveruse");
    assert_int_equal(d.after.memory_mib, 1320);
    assert_int_equal(s.overuses, 1);
}

/* Use falls from 500 to 0 right after the first allocation: the target falls within a few
 * half-lives (1 h), but the allocation comes down only once the 6 h cooldown has passed. */
static void down_waits_for_the_cooldown(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    o.policy.history_window_ms = 4 * HOUR_MS;
    o.policy.min_history_ms = HOUR_MS;
    o.policy.cooldown_ms = 6 * HOUR_MS;
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, 2 * HOUR_MS, 500, 1000);
    struct fg_rec_decision d;
    fg_rec_decide(&s, &o, 2 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_FIRST);
    int held = 0;
    for (int64_t t = 2 * HOUR_MS; t < 12 * HOUR_MS; t += 5 * MIN_MS) {
        feed(&s, &o, t, t + 5 * MIN_MS, 0, 1000);
        fg_rec_decide(&s, &o, t + 5 * MIN_MS, &d);
        if (d.action == FG_REC_KEEP) {
            held += !strcmp(d.reason, "Cooldown");
            continue;
        }
        assert_int_equal(d.action, FG_REC_DOWN);
        assert_int_equal(t + 5 * MIN_MS, 8 * HOUR_MS);   /* the first decision past the cooldown */
        assert_int_equal(d.after.compute_milli, 50);      /* the policy's minimum */
        break;
    }
    assert_true(held > 0);
    assert_int_equal(s.applied.compute_milli, 50);
}

/* Within the threshold nothing moves; beyond it, up goes at once, inside the cooldown. */
static void small_changes_wait_and_rises_are_prompt(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    o.policy.history_window_ms = 4 * HOUR_MS;
    o.policy.min_history_ms = HOUR_MS;
    o.policy.change_threshold_percent = 15;
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 0, 2 * HOUR_MS, 100, 1000);
    struct fg_rec_decision d;
    fg_rec_decide(&s, &o, 2 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_FIRST);
    assert_int_equal(s.applied.compute_milli, 119);
    /* 109 is in the next bucket up (107.9..118.3): 118.3 × 1.1 → 131, a rise of 10%, below the 15% threshold */
    feed(&s, &o, 2 * HOUR_MS, 5 * HOUR_MS, 109, 1000);
    fg_rec_decide(&s, &o, 5 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_KEEP);
    assert_string_equal(d.reason, "BelowThreshold");
    assert_int_equal(s.applied.compute_milli, 119);
    /* a jump to 600 within the cooldown of nothing (the last change was 3 h ago, but rises never wait) */
    feed(&s, &o, 5 * HOUR_MS, 7 * HOUR_MS, 600, 1000);
    fg_rec_decide(&s, &o, 7 * HOUR_MS, &d);
    assert_int_equal(d.action, FG_REC_UP);
    assert_string_equal(d.reason, "ScaledUp");
    assert_true(s.applied.compute_milli > 600);
}

/* Noise around a stationary level for 20 days: after its first allocation, changes at most once per
 * cooldown (and, once settled, not at all). */
static void noisy_stationary_trace_does_not_thrash(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    srand(7);
    int64_t last_change = -1;
    int changes = 0;
    for (int64_t t = 0; t < 20 * 24 * HOUR_MS; t += MIN_MS) {
        double u = (double)rand() / RAND_MAX, v = (double)rand() / RAND_MAX;
        assert_int_equal(add(&s, &o, t, 150 + 300 * u * u, 6000 + 2000 * v), FG_REC_OK);
        if (t % (5 * MIN_MS))
            continue;
        struct fg_rec_decision d;
        fg_rec_decide(&s, &o, t, &d);
        if (d.action == FG_REC_KEEP || d.action == FG_REC_FIRST)
            continue;
        changes++;
        if (last_change >= 0 && t - last_change < o.policy.cooldown_ms)
            fail_msg("two changes %lld ms apart, within the cooldown", (long long)(t - last_change));
        last_change = t;
    }
    assert_true(s.applied.set);
    assert_true(changes <= 3);
}

static void hostile_samples_are_refused_and_counted(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, 100, 1000), FG_REC_OK);
    struct fg_rec_state before = s;
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, NAN, 1000), FG_REC_NOT_FINITE);
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, 100, INFINITY), FG_REC_NOT_FINITE);
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, -1, 1000), FG_REC_NEGATIVE);
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, 100, -0.5), FG_REC_NEGATIVE);
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, 1000.5, 1000), FG_REC_COMPUTE_ABOVE_GPU);
    assert_int_equal(add(&s, &o, 10 * HOUR_MS, 100, 81921), FG_REC_MEMORY_ABOVE_GPU);
    assert_int_equal(add(&s, &o, 10 * HOUR_MS - FG_REC_REORDER_MS - 1, 100, 1000), FG_REC_TIME_BACKWARDS);
    assert_int_equal(s.refused[FG_REC_NOT_FINITE], 2);
    assert_int_equal(s.refused[FG_REC_NEGATIVE], 2);
    assert_int_equal(s.refused[FG_REC_COMPUTE_ABOVE_GPU], 1);
    assert_int_equal(s.refused[FG_REC_MEMORY_ABOVE_GPU], 1);
    assert_int_equal(s.refused[FG_REC_TIME_BACKWARDS], 1);
    /* nothing else moved */
    memcpy(s.refused, before.refused, sizeof s.refused);
    assert_memory_equal(&s, &before, sizeof s);
    /* a little out of order (another pod's scrape) is taken; a dimension not measured is not judged */
    assert_int_equal(add(&s, &o, 10 * HOUR_MS - MIN_MS, 100, 1000), FG_REC_OK);
    struct fg_rec_sample only_memory = { 10 * HOUR_MS, false, true, NAN, 500 };
    assert_int_equal(fg_rec_add(&s, &o, &only_memory), FG_REC_OK);
    assert_string_equal(fg_rec_refusal_name(FG_REC_TIME_BACKWARDS), "TimeBackwards");
}

static void unusable_window_is_refused(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    o.policy.history_window_ms = FG_REC_PEAK_SLOTS - 1;
    struct fg_rec_state s;
    assert_false(fg_rec_init(&s, &o));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_before_min_history),
        cmocka_unit_test(targets_from_percentile_and_peak),
        cmocka_unit_test(percentile_ignores_the_tail_above_it),
        cmocka_unit_test(clamped_to_policy_and_gpu),
        cmocka_unit_test(peaks_leave_the_window),
        cmocka_unit_test(oom_raises_memory_at_once),
        cmocka_unit_test(overuse_raises_memory_at_once),
        cmocka_unit_test(down_waits_for_the_cooldown),
        cmocka_unit_test(small_changes_wait_and_rises_are_prompt),
        cmocka_unit_test(noisy_stationary_trace_does_not_thrash),
        cmocka_unit_test(hostile_samples_are_refused_and_counted),
        cmocka_unit_test(unusable_window_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
