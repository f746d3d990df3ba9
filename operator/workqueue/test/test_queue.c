/* Tests for the work queue's FIFO: de-duplication, order, the never-twice-at-once rule, re-adds
 * during processing, shutdown (waking waiters, handing out what was queued) and drain, and the
 * rejection of bad keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operator/workqueue/test/wait.h"
#include "operator/workqueue/workqueue.h"

static int setup_queue(void **state)
{
    struct fg_workqueue *q;
    if (fg_workqueue_new("test", NULL, &q) != FG_OK)
        return -1;
    *state = q;
    return 0;
}

static int teardown_queue(void **state)
{
    fg_workqueue_free(*state);
    return 0;
}

static void get_expect(struct fg_workqueue *q, const char *want)
{
    char *key = NULL;
    assert_int_equal(fg_workqueue_get(q, &key), FG_OK);
    assert_string_equal(key, want);
    free(key);
}

static void done_ok(struct fg_workqueue *q, const char *key)
{
    assert_int_equal(fg_workqueue_done(q, key), FG_OK);
}

static void add_ok(struct fg_workqueue *q, const char *key)
{
    assert_int_equal(fg_workqueue_add(q, key), FG_OK);
}

static void dedup_and_fifo_order(void **state)
{
    struct fg_workqueue *q = *state;
    add_ok(q, "ns/a");
    add_ok(q, "ns/b");
    add_ok(q, "ns/a");
    add_ok(q, "ns/c");
    add_ok(q, "ns/b");
    assert_int_equal(fg_workqueue_len(q), 3);
    get_expect(q, "ns/a");
    get_expect(q, "ns/b");
    get_expect(q, "ns/c");
    assert_int_equal(fg_workqueue_len(q), 0);
    struct fg_workqueue_stats st;
    fg_workqueue_stats_get(q, &st);
    assert_int_equal(st.processing, 3);
    assert_int_equal(st.adds, 3);
    done_ok(q, "ns/a");
    done_ok(q, "ns/b");
    done_ok(q, "ns/c");
    fg_workqueue_stats_get(q, &st);
    assert_int_equal(st.processing, 0);
}

static void readd_while_processing_is_deferred_to_done(void **state)
{
    struct fg_workqueue *q = *state;
    add_ok(q, "ns/a");
    get_expect(q, "ns/a");
    /* Added twice while a worker holds it: not handed out again, and queued once on done. */
    add_ok(q, "ns/a");
    add_ok(q, "ns/a");
    assert_int_equal(fg_workqueue_len(q), 0);
    done_ok(q, "ns/a");
    assert_int_equal(fg_workqueue_len(q), 1);
    get_expect(q, "ns/a");
    done_ok(q, "ns/a");
    assert_int_equal(fg_workqueue_len(q), 0);
    /* A done without a re-add leaves nothing behind, and a second done is refused. */
    assert_int_equal(fg_workqueue_done(q, "ns/a"), FG_E_INVAL);
}

static void done_of_unknown_key_is_refused(void **state)
{
    struct fg_workqueue *q = *state;
    add_ok(q, "ns/queued");
    /* Queued but not handed out: done must not steal it. */
    assert_int_equal(fg_workqueue_done(q, "ns/queued"), FG_E_INVAL);
    assert_int_equal(fg_workqueue_done(q, "ns/never"), FG_E_INVAL);
    assert_int_equal(fg_workqueue_len(q), 1);
}

static void bad_keys_are_rejected(void **state)
{
    struct fg_workqueue *q = *state;
    char long_key[600];
    memset(long_key, 'x', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    const char *bad[] = { NULL, "", long_key };
    unsigned n = 99;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(fg_workqueue_add(q, bad[i]), FG_E_INVAL);
        assert_int_equal(fg_workqueue_add_after(q, bad[i], 1000), FG_E_INVAL);
        assert_int_equal(fg_workqueue_add_rate_limited(q, bad[i]), FG_E_INVAL);
        assert_int_equal(fg_workqueue_done(q, bad[i]), FG_E_INVAL);
        assert_int_equal(fg_workqueue_forget(q, bad[i]), FG_E_INVAL);
        assert_int_equal(fg_workqueue_num_requeues(q, bad[i], &n), FG_E_INVAL);
    }
    assert_int_equal(n, 99);
    struct fg_workqueue_stats st;
    fg_workqueue_stats_get(q, &st);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(st.retries, 0);
}

struct getter {
    struct fg_workqueue *q;
    atomic_int *returned;
    enum fg_err err;
};

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    char *key = NULL;
    g->err = fg_workqueue_get(g->q, &key);
    free(key);
    atomic_fetch_add(g->returned, 1);
    return NULL;
}

static void shutdown_wakes_every_waiter(void **state)
{
    struct fg_workqueue *q = *state;
    enum { N = 4 };
    atomic_int returned = 0;
    struct getter g[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        g[i] = (struct getter){ .q = q, .returned = &returned, .err = FG_OK };
        assert_int_equal(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
    }
    sleep_ms(50);
    assert_int_equal(atomic_load(&returned), 0);    /* all blocked: nothing queued */
    fg_workqueue_shut_down(q);
    for (unsigned ms = 0; ms < WAIT_LIMIT_MS && atomic_load(&returned) < N; ms++)
        sleep_ms(1);
    assert_int_equal(atomic_load(&returned), N);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(g[i].err, FG_E_SHUTDOWN);
    }
    assert_true(fg_workqueue_shutting_down(q));
}

static void shutdown_hands_out_queued_keys_then_refuses(void **state)
{
    struct fg_workqueue *q = *state;
    add_ok(q, "ns/a");
    add_ok(q, "ns/b");
    get_expect(q, "ns/a");
    add_ok(q, "ns/a");      /* dirty while processing */
    fg_workqueue_shut_down(q);
    fg_workqueue_shut_down(q);  /* idempotent */
    assert_int_equal(fg_workqueue_add(q, "ns/c"), FG_E_SHUTDOWN);
    assert_int_equal(fg_workqueue_add_after(q, "ns/c", 10), FG_E_SHUTDOWN);
    get_expect(q, "ns/b");
    done_ok(q, "ns/b");
    done_ok(q, "ns/a");     /* re-queued: it was added before shutdown */
    get_expect(q, "ns/a");
    done_ok(q, "ns/a");
    char *key = NULL;
    assert_int_equal(fg_workqueue_get(q, &key), FG_E_SHUTDOWN);
    assert_null(key);
}

struct finisher {
    struct fg_workqueue *q;
    const char *key;
    unsigned after_ms;
    enum fg_err err;
};

static void *finisher_main(void *arg)
{
    struct finisher *f = arg;
    sleep_ms(f->after_ms);
    f->err = fg_workqueue_done(f->q, f->key);
    return NULL;
}

static void drain_waits_for_processing_keys(void **state)
{
    struct fg_workqueue *q = *state;
    add_ok(q, "ns/slow");
    get_expect(q, "ns/slow");
    /* Nobody finishes it: the drain times out, and the shutdown stays. */
    assert_int_equal(fg_workqueue_shut_down_with_drain(q, 20 * 1000000ull), FG_E_TIMEOUT);
    assert_int_equal(fg_workqueue_add(q, "ns/other"), FG_E_SHUTDOWN);

    struct finisher f = { .q = q, .key = "ns/slow", .after_ms = 100, .err = FG_E_INTERNAL };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, finisher_main, &f), 0);
    assert_int_equal(fg_workqueue_shut_down_with_drain(q, 5 * 1000000000ull), FG_OK);
    struct fg_workqueue_stats st;
    fg_workqueue_stats_get(q, &st);
    assert_int_equal(st.processing, 0);
    pthread_join(th, NULL);
    assert_int_equal(f.err, FG_OK);
}

static void drain_of_idle_queue_returns_at_once(void **state)
{
    struct fg_workqueue *q = *state;
    assert_int_equal(fg_workqueue_shut_down_with_drain(q, 5 * 1000000000ull), FG_OK);
}

static void discard_drops_what_no_worker_holds(void **state)
{
    struct fg_workqueue *q = *state;
    add_ok(q, "ns/held");
    get_expect(q, "ns/held");
    add_ok(q, "ns/held");      /* dirty again while processing: done() would queue it */
    add_ok(q, "ns/a");
    add_ok(q, "ns/b");
    assert_int_equal(fg_workqueue_add_after(q, "ns/later", 1000000ull), FG_OK);
    fg_workqueue_shut_down_discard(q);
    char *key = NULL;
    assert_int_equal(fg_workqueue_get(q, &key), FG_E_SHUTDOWN);
    assert_int_equal(fg_workqueue_done(q, "ns/held"), FG_OK);
    assert_int_equal(fg_workqueue_get(q, &key), FG_E_SHUTDOWN);
    assert_null(key);
    assert_int_equal(fg_workqueue_len(q), 0);
    assert_int_equal(fg_workqueue_add(q, "ns/c"), FG_E_SHUTDOWN);
    assert_int_equal(fg_workqueue_shut_down_with_drain(q, 1000000000ull), FG_OK);
}

/* Stress: producers add a few hot keys as fast as they can while workers process them; a worker
 * that is handed a key another worker still holds counts a violation. Every key added must also
 * be processed after its last add (nothing lost). */
enum { STRESS_KEYS = 8, STRESS_WORKERS = 6, STRESS_PRODUCERS = 2, STRESS_ADDS = 20000 };

struct stress {
    struct fg_workqueue *q;
    atomic_int in_flight[STRESS_KEYS];
    atomic_int violations;
    atomic_uint_fast64_t ticket;
    atomic_uint_fast64_t last_add[STRESS_KEYS];
    atomic_uint_fast64_t last_start[STRESS_KEYS];
};

static void *stress_worker(void *arg)
{
    struct stress *s = arg;
    char *key;
    while (fg_workqueue_get(s->q, &key) == FG_OK) {
        int k = atoi(strchr(key, '/') + 1);
        if (atomic_exchange(&s->in_flight[k], 1) != 0)
            atomic_fetch_add(&s->violations, 1);
        uint64_t t = atomic_fetch_add(&s->ticket, 1);
        if (t > atomic_load(&s->last_start[k]))
            atomic_store(&s->last_start[k], t);
        for (volatile int spin = 0; spin < 200; spin++) {
        }
        atomic_store(&s->in_flight[k], 0);
        if (fg_workqueue_done(s->q, key) != FG_OK)
            atomic_fetch_add(&s->violations, 1);
        free(key);
    }
    return NULL;
}

static void *stress_producer(void *arg)
{
    struct stress *s = arg;
    char key[32];
    for (int i = 0; i < STRESS_ADDS; i++) {
        int k = rand() % STRESS_KEYS;
        snprintf(key, sizeof key, "ns/%d", k);
        uint64_t t = atomic_fetch_add(&s->ticket, 1);
        if (fg_workqueue_add(s->q, key) != FG_OK)
            atomic_fetch_add(&s->violations, 1);
        uint64_t prev = atomic_load(&s->last_add[k]);
        while (t > prev && !atomic_compare_exchange_weak(&s->last_add[k], &prev, t)) {
        }
    }
    return NULL;
}

static void stress_never_two_workers_on_one_key(void **state)
{
    static struct stress s;
    memset(&s, 0, sizeof s);
    s.q = *state;
    s.ticket = 1;
    pthread_t workers[STRESS_WORKERS], producers[STRESS_PRODUCERS];
    for (int i = 0; i < STRESS_WORKERS; i++)
        assert_int_equal(pthread_create(&workers[i], NULL, stress_worker, &s), 0);
    for (int i = 0; i < STRESS_PRODUCERS; i++)
        assert_int_equal(pthread_create(&producers[i], NULL, stress_producer, &s), 0);
    for (int i = 0; i < STRESS_PRODUCERS; i++)
        pthread_join(producers[i], NULL);
    /* Everything added is queued or processing; shutting down lets workers finish it. */
    assert_int_equal(fg_workqueue_shut_down_with_drain(s.q, 10 * 1000000000ull), FG_OK);
    for (int i = 0; i < STRESS_WORKERS; i++)
        pthread_join(workers[i], NULL);
    assert_int_equal(atomic_load(&s.violations), 0);
    for (int k = 0; k < STRESS_KEYS; k++)
        assert_true(atomic_load(&s.last_start[k]) > atomic_load(&s.last_add[k]));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_queue, teardown_queue)
    const struct CMUnitTest tests[] = {
        T(dedup_and_fifo_order),
        T(readd_while_processing_is_deferred_to_done),
        T(done_of_unknown_key_is_refused),
        T(bad_keys_are_rejected),
        T(shutdown_wakes_every_waiter),
        T(shutdown_hands_out_queued_keys_then_refuses),
        T(drain_waits_for_processing_keys),
        T(drain_of_idle_queue_returns_at_once),
        T(discard_drops_what_no_worker_holds),
        T(stress_never_two_workers_on_one_key),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
