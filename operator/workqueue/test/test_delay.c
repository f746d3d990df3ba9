/* Tests for add_after and add_rate_limited on the fake clock: deadline order, ties, the earlier of
 * two deadlines winning, immediate adds, de-duplication with queued keys, shutdown dropping parked
 * keys, and a retry's delay following the queue's limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "operator/workqueue/test/wait.h"
#include "operator/workqueue/workqueue.h"

#define MS FG_NS_PER_MS

static int setup_fake_clock_queue(void **state)
{
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fg_workqueue *q;
    if (fg_workqueue_new("delay-test", NULL, &q) != FG_OK)
        return -1;
    *state = q;
    return 0;
}

static int teardown_queue(void **state)
{
    fg_workqueue_free(*state);
    fg_clock_fake_clear();
    return 0;
}

static void get_expect(struct fg_workqueue *q, const char *want)
{
    char *key = NULL;
    assert_int_equal(fg_workqueue_get(q, &key), FG_OK);
    assert_string_equal(key, want);
    assert_int_equal(fg_workqueue_done(q, key), FG_OK);
    free(key);
}

static size_t waiting(struct fg_workqueue *q)
{
    struct fg_workqueue_stats st;
    fg_workqueue_stats_get(q, &st);
    return st.waiting;
}

static void keys_leave_in_deadline_order(void **state)
{
    struct fg_workqueue *q = *state;
    assert_int_equal(fg_workqueue_add_after(q, "ns/c", 300 * MS), FG_OK);
    assert_int_equal(fg_workqueue_add_after(q, "ns/a", 100 * MS), FG_OK);
    assert_int_equal(fg_workqueue_add_after(q, "ns/b", 200 * MS), FG_OK);
    assert_int_equal(waiting(q), 3);
    sleep_ms(20);
    assert_int_equal(fg_workqueue_len(q), 0);   /* the fake clock has not moved */

    fg_clock_fake_advance(99 * MS);
    sleep_ms(20);
    assert_int_equal(fg_workqueue_len(q), 0);   /* a millisecond early is early */
    fg_clock_fake_advance(1 * MS);
    assert_true(wait_len(q, 1));
    get_expect(q, "ns/a");
    fg_clock_fake_advance(100 * MS);
    assert_true(wait_len(q, 1));
    get_expect(q, "ns/b");
    fg_clock_fake_advance(100 * MS);
    assert_true(wait_len(q, 1));
    get_expect(q, "ns/c");
    assert_int_equal(waiting(q), 0);
}

static void many_random_deadlines_come_out_sorted(void **state)
{
    struct fg_workqueue *q = *state;
    enum { N = 300 };
    char key[32];
    srand(42);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/%d", i);
        assert_int_equal(fg_workqueue_add_after(q, key, (uint64_t)(1 + rand() % 1000) * MS), FG_OK);
    }
    assert_int_equal(waiting(q), N);
    fg_clock_fake_advance(1000 * MS);
    assert_true(wait_len(q, N));
    /* Re-derive the deadlines with the same seed and check the FIFO is ordered by them, ties in
     * insertion order. */
    uint64_t delay[N];
    srand(42);
    for (int i = 0; i < N; i++)
        delay[i] = (uint64_t)(1 + rand() % 1000);
    uint64_t prev_delay = 0;
    int prev_index = -1;
    for (int i = 0; i < N; i++) {
        char *k = NULL;
        assert_int_equal(fg_workqueue_get(q, &k), FG_OK);
        int idx = atoi(k + 3);
        assert_true(delay[idx] > prev_delay || (delay[idx] == prev_delay && idx > prev_index));
        prev_delay = delay[idx];
        prev_index = idx;
        assert_int_equal(fg_workqueue_done(q, k), FG_OK);
        free(k);
    }
}

static void earlier_deadline_wins(void **state)
{
    struct fg_workqueue *q = *state;
    /* Later first, then earlier: the earlier one counts. */
    assert_int_equal(fg_workqueue_add_after(q, "ns/x", 500 * MS), FG_OK);
    assert_int_equal(fg_workqueue_add_after(q, "ns/x", 100 * MS), FG_OK);
    /* Earlier first, then later: the later one is ignored. */
    assert_int_equal(fg_workqueue_add_after(q, "ns/y", 100 * MS), FG_OK);
    assert_int_equal(fg_workqueue_add_after(q, "ns/y", 500 * MS), FG_OK);
    assert_int_equal(waiting(q), 2);
    fg_clock_fake_advance(100 * MS);
    assert_true(wait_len(q, 2));
    assert_int_equal(waiting(q), 0);
    get_expect(q, "ns/x");
    get_expect(q, "ns/y");
    /* Nothing is left parked to come back at 500 ms. */
    fg_clock_fake_advance(500 * MS);
    sleep_ms(20);
    assert_int_equal(fg_workqueue_len(q), 0);
}

static void zero_delay_adds_at_once_and_dedups(void **state)
{
    struct fg_workqueue *q = *state;
    assert_int_equal(fg_workqueue_add_after(q, "ns/now", 0), FG_OK);
    assert_int_equal(fg_workqueue_len(q), 1);
    assert_int_equal(waiting(q), 0);
    /* A parked copy of a key that is already queued does not queue it twice. */
    assert_int_equal(fg_workqueue_add_after(q, "ns/now", 10 * MS), FG_OK);
    fg_clock_fake_advance(10 * MS);
    for (unsigned ms = 0; ms < WAIT_LIMIT_MS && waiting(q) > 0; ms++)
        sleep_ms(1);
    assert_int_equal(waiting(q), 0);
    assert_int_equal(fg_workqueue_len(q), 1);
    get_expect(q, "ns/now");
}

static void huge_delay_saturates(void **state)
{
    struct fg_workqueue *q = *state;
    assert_int_equal(fg_workqueue_add_after(q, "ns/far", UINT64_MAX), FG_OK);
    fg_clock_fake_advance(3600 * FG_NS_PER_S);
    sleep_ms(20);
    assert_int_equal(fg_workqueue_len(q), 0);
    assert_int_equal(waiting(q), 1);
}

static void shutdown_drops_parked_keys(void **state)
{
    struct fg_workqueue *q = *state;
    assert_int_equal(fg_workqueue_add_after(q, "ns/later", 10 * MS), FG_OK);
    fg_workqueue_shut_down(q);
    assert_int_equal(fg_workqueue_add_after(q, "ns/later2", 10 * MS), FG_E_SHUTDOWN);
    assert_int_equal(fg_workqueue_add_rate_limited(q, "ns/later3"), FG_E_SHUTDOWN);
    fg_clock_fake_advance(20 * MS);
    sleep_ms(20);
    char *key = NULL;
    assert_int_equal(fg_workqueue_get(q, &key), FG_E_SHUTDOWN);
}

static void rate_limited_retry_follows_backoff(void **state)
{
    struct fg_workqueue *q = *state;
    unsigned n = 0;
    assert_int_equal(fg_workqueue_add_rate_limited(q, "ns/flaky"), FG_OK);   /* 5 ms */
    assert_int_equal(fg_workqueue_num_requeues(q, "ns/flaky", &n), FG_OK);
    assert_int_equal(n, 1);
    fg_clock_fake_advance(4 * MS);
    sleep_ms(20);
    assert_int_equal(fg_workqueue_len(q), 0);
    fg_clock_fake_advance(1 * MS);
    assert_true(wait_len(q, 1));
    get_expect(q, "ns/flaky");

    assert_int_equal(fg_workqueue_add_rate_limited(q, "ns/flaky"), FG_OK);   /* 10 ms */
    fg_clock_fake_advance(9 * MS);
    sleep_ms(20);
    assert_int_equal(fg_workqueue_len(q), 0);
    fg_clock_fake_advance(1 * MS);
    assert_true(wait_len(q, 1));
    get_expect(q, "ns/flaky");

    assert_int_equal(fg_workqueue_num_requeues(q, "ns/flaky", &n), FG_OK);
    assert_int_equal(n, 2);
    assert_int_equal(fg_workqueue_forget(q, "ns/flaky"), FG_OK);
    assert_int_equal(fg_workqueue_num_requeues(q, "ns/flaky", &n), FG_OK);
    assert_int_equal(n, 0);
    struct fg_workqueue_stats st;
    fg_workqueue_stats_get(q, &st);
    assert_int_equal(st.retries, 2);

    /* After forget the backoff starts again at 5 ms. */
    assert_int_equal(fg_workqueue_add_rate_limited(q, "ns/flaky"), FG_OK);
    fg_clock_fake_advance(5 * MS);
    assert_true(wait_len(q, 1));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_fake_clock_queue, teardown_queue)
    const struct CMUnitTest tests[] = {
        T(keys_leave_in_deadline_order),
        T(many_random_deadlines_come_out_sorted),
        T(earlier_deadline_wins),
        T(zero_delay_adds_at_once_and_dedups),
        T(huge_delay_saturates),
        T(shutdown_drops_parked_keys),
        T(rate_limited_retry_follows_backoff),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
