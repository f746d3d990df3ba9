/* Tests of the default scheduler's queue: order, backoff, retries on cluster events and after a
 * minute, updates, all with explicit time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "e2e/cluster/sched.h"
#include "e2e/cluster/test/sched_fixture.h"

#define S FG_NS_PER_S

static int setup(void **state)
{
    struct fg_sim_sched_queue *q = test_malloc(sizeof *q);
    fg_sim_sched_queue_init(q);
    *state = q;
    return 0;
}

static int teardown(void **state)
{
    fg_sim_sched_queue_cleanup(*state);
    test_free(*state);
    return 0;
}

static void add(struct fg_sim_sched_queue *q, const char *name, int64_t priority, const char *created, uint64_t now)
{
    char extra[128];
    snprintf(extra, sizeof extra, "{'metadata':{'creationTimestamp':'%s'}}", created);
    struct fg_sim_sched_pod *pod = fixture_pod(name, "100m", NULL, priority, extra);
    fg_sim_sched_queue_upsert(q, pod, now);
    fg_sim_sched_pod_unref(pod);
}

static const char *pop(struct fg_sim_sched_queue *q, uint64_t now)
{
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_pop(q, now);
    return e ? e->pod->name : NULL;
}

static void test_order(void **state)
{
    struct fg_sim_sched_queue *q = *state;
    add(q, "old-low", 0, "2025-01-01T00:00:00Z", 0);
    add(q, "new-high", 10, "2025-01-03T00:00:00Z", 0);
    add(q, "old-high", 10, "2025-01-02T00:00:00Z", 0);
    add(q, "new-low", 0, "2025-01-04T00:00:00Z", 0);
    assert_string_equal(pop(q, 0), "old-high");
    assert_string_equal(pop(q, 0), "new-high");
    assert_string_equal(pop(q, 0), "old-low");
    assert_string_equal(pop(q, 0), "new-low");
    assert_null(pop(q, 0));
}

static void test_backoff_durations(void **state)
{
    (void)state;
    static const uint64_t want[] = { 1, 1, 2, 4, 8, 10, 10 };
    for (unsigned i = 0; i < sizeof want / sizeof *want; i++)
        assert_int_equal(fg_sim_sched_backoff_ns(i), want[i] * S);
}

/* Unschedulable pods wait for an event, then for what is left of their backoff. */
static void test_unschedulable_until_event(void **state)
{
    struct fg_sim_sched_queue *q = *state;
    add(q, "p", 0, "2025-01-01T00:00:00Z", 0);
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_pop(q, 0);
    e->rejected_by = FG_SIM_SCHED_RESOURCES;
    fg_sim_sched_queue_unschedulable(q, e, 0);
    assert_null(pop(q, 5 * S));
    assert_int_equal(fg_sim_sched_queue_next_ns(q), 60 * S);
    /* an event for another filter leaves it */
    fg_sim_sched_queue_move(q, FG_SIM_SCHED_POD_AFFINITY, 5 * S);
    assert_null(pop(q, 5 * S));
    fg_sim_sched_queue_move(q, 0, 5 * S);
    assert_string_equal(pop(q, 5 * S), "p");
    /* second failure: 2 s of backoff; an event at once only moves it to backoff */
    e = fg_sim_sched_queue_get(q, "default/p");
    fg_sim_sched_queue_unschedulable(q, e, 5 * S);
    fg_sim_sched_queue_move(q, 0, 6 * S);
    assert_null(pop(q, 6 * S));
    assert_int_equal(fg_sim_sched_queue_next_ns(q), 7 * S);
    assert_string_equal(pop(q, 7 * S), "p");
}

static void test_flush_after_a_minute(void **state)
{
    struct fg_sim_sched_queue *q = *state;
    add(q, "p", 0, "2025-01-01T00:00:00Z", 0);
    fg_sim_sched_queue_unschedulable(q, fg_sim_sched_queue_pop(q, 0), 0);
    assert_null(pop(q, 59 * S));
    assert_string_equal(pop(q, 60 * S), "p");
}

/* A move request while the pod was out in a cycle sends it to backoff, not to wait for another. */
static void test_move_during_cycle(void **state)
{
    struct fg_sim_sched_queue *q = *state;
    add(q, "p", 0, "2025-01-01T00:00:00Z", 0);
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_pop(q, 0);
    fg_sim_sched_queue_move(q, 0, 0);
    fg_sim_sched_queue_unschedulable(q, e, 0);
    assert_null(pop(q, S / 2));
    assert_string_equal(pop(q, S), "p");
}

/* An update of spec or labels retries the pod; a status update does not. */
static void test_updates(void **state)
{
    struct fg_sim_sched_queue *q = *state;
    add(q, "p", 0, "2025-01-01T00:00:00Z", 0);
    fg_sim_sched_queue_unschedulable(q, fg_sim_sched_queue_pop(q, 0), 0);
    struct fg_sim_sched_pod *status = fixture_pod("p", "100m", NULL, 0,
        "{'metadata':{'creationTimestamp':'2025-01-01T00:00:00Z'},'status':{'conditions':[{'type':'PodScheduled',"
        "'status':'False'}]}}");
    fg_sim_sched_queue_upsert(q, status, 2 * S);
    fg_sim_sched_pod_unref(status);
    assert_null(pop(q, 2 * S));
    struct fg_sim_sched_pod *spec = fixture_pod("p", "50m", NULL, 0, "{'metadata':{'creationTimestamp':'2025-01-01T00:00:00Z'}}");
    fg_sim_sched_queue_upsert(q, spec, 2 * S);
    fg_sim_sched_pod_unref(spec);
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_pop(q, 2 * S);
    assert_non_null(e);
    assert_int_equal(e->pod->cpu, 50);
    /* a higher priority reorders the active heap */
    add(q, "a", 0, "2025-01-01T00:00:00Z", 2 * S);
    add(q, "b", 0, "2025-01-02T00:00:00Z", 2 * S);
    add(q, "b", 50, "2025-01-02T00:00:00Z", 2 * S);
    assert_string_equal(pop(q, 2 * S), "b");
    fg_sim_sched_queue_remove(q, "default/a");
    assert_null(pop(q, 2 * S));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order, setup, teardown),
        cmocka_unit_test(test_backoff_durations),
        cmocka_unit_test_setup_teardown(test_unschedulable_until_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_after_a_minute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_during_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_updates, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
