/* Tests for the controller runner: the ok, error (logged once, retried with backoff, forgotten on
 * success) and requeue_after paths on the fake clock; stop with a reconcile in flight; a stress run
 * asserting no key is reconciled by two workers at once and none is lost; bad options and keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "operator/controller/controller.h"

#define MS FG_NS_PER_MS
#define WAIT_LIMIT_MS 5000
#define N_KEYS 16

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* What the test reconcilers see and record. Keys are "ns/<index>". */
struct fixture {
    atomic_int calls[N_KEYS];
    atomic_int in_flight[N_KEYS];
    atomic_int violations;
    atomic_int fail_first[N_KEYS];      /* this many calls fail with FG_E_KUBE_CONFLICT */
    atomic_int requeue_on_call[N_KEYS]; /* the call with this number asks for requeue_after */
    atomic_uint slow_ms[N_KEYS];        /* real time each call takes */
    atomic_int finished[N_KEYS];
    atomic_uint_fast64_t ticket;
    atomic_uint_fast64_t last_add[N_KEYS];
    atomic_uint_fast64_t last_start[N_KEYS];
    atomic_int failure_lines;           /* warn lines naming namespace "ns" */
};

static struct fixture fx;

static int key_index(const char *key)
{
    return atoi(strchr(key, '/') + 1);
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fixture *f = ud;
    int k = key_index(key);
    if (atomic_exchange(&f->in_flight[k], 1) != 0)
        atomic_fetch_add(&f->violations, 1);
    uint64_t t = atomic_fetch_add(&f->ticket, 1);
    uint64_t prev = atomic_load(&f->last_start[k]);
    while (t > prev && !atomic_compare_exchange_weak(&f->last_start[k], &prev, t)) {
    }
    int call = atomic_fetch_add(&f->calls[k], 1) + 1;
    if (atomic_load(&f->slow_ms[k]))
        sleep_ms(atomic_load(&f->slow_ms[k]));
    atomic_fetch_add(&f->finished[k], 1);
    atomic_store(&f->in_flight[k], 0);
    if (call <= atomic_load(&f->fail_first[k]))
        return fg_reconcile_error(FG_E_KUBE_CONFLICT);
    if (call == atomic_load(&f->requeue_on_call[k]))
        return fg_reconcile_requeue_after(50 * MS);
    return fg_reconcile_ok();
}

static void count_failure_lines(void *ud, const char *line, unsigned long len)
{
    (void)ud;
    (void)len;
    if (strstr(line, "\"level\":\"warn\"") && strstr(line, "\"namespace\":\"ns\"") &&
        strstr(line, "FG_E_KUBE_CONFLICT"))
        atomic_fetch_add(&fx.failure_lines, 1);
}

static struct fg_controller *new_controller(unsigned workers)
{
    struct fg_controller_opts opts = {
        .name = "test-controller", .kind = "GPUPolicy", .workers = workers, .reconcile = reconcile, .ud = &fx,
    };
    struct fg_controller *c = NULL;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_controller_new(&opts, &c, errmsg), FG_OK);
    assert_int_equal(fg_controller_start(c), FG_OK);
    return c;
}

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    fx.ticket = 1;
    fg_log_set_sink(count_failure_lines, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_log_set_sink(NULL, NULL);
    fg_clock_fake_clear();
    return 0;
}

/* Waits until the controller has returned from `reconciles` calls and has `waiting` keys parked. */
static bool wait_for(struct fg_controller *c, uint64_t reconciles, size_t waiting)
{
    struct fg_controller_metrics m;
    for (unsigned ms = 0; ms <= WAIT_LIMIT_MS; ms++) {
        fg_controller_metrics_get(c, &m);
        if (m.reconciles_total == reconciles && m.waiting == waiting && m.busy_workers == 0)
            return true;
        sleep_ms(1);
    }
    return false;
}

static unsigned requeues(struct fg_controller *c, const char *key)
{
    unsigned n = 99;
    assert_int_equal(fg_workqueue_num_requeues(fg_controller_queue_get(c), key, &n), FG_OK);
    return n;
}

static void ok_path_reconciles_once_and_forgets(void **state)
{
    (void)state;
    struct fg_controller *c = new_controller(2);
    assert_int_equal(fg_controller_enqueue(c, "ns/0"), FG_OK);
    assert_true(wait_for(c, 1, 0));
    sleep_ms(20);
    assert_int_equal(atomic_load(&fx.calls[0]), 1);
    struct fg_controller_metrics m;
    fg_controller_metrics_get(c, &m);
    assert_int_equal(m.errors_total, 0);
    assert_int_equal(m.requeues_total, 0);
    assert_int_equal(m.queue_depth, 0);
    assert_int_equal(m.longest_running_ns, 0);
    assert_int_equal(requeues(c, "ns/0"), 0);
    assert_int_equal(atomic_load(&fx.failure_lines), 0);
    fg_controller_free(c);
}

static void error_path_backs_off_logs_and_forgets(void **state)
{
    (void)state;
    fg_clock_fake_set(100 * FG_NS_PER_S);
    atomic_store(&fx.fail_first[1], 3);
    struct fg_controller *c = new_controller(2);
    assert_int_equal(fg_controller_enqueue(c, "ns/1"), FG_OK);
    assert_true(wait_for(c, 1, 1));
    assert_int_equal(requeues(c, "ns/1"), 1);
    assert_int_equal(atomic_load(&fx.failure_lines), 1);

    /* Retries come 5, 10, 20 ms apart on the fake clock, not a moment earlier. */
    const uint64_t backoff_ms[] = { 5, 10, 20 };
    for (int i = 0; i < 3; i++) {
        fg_clock_fake_advance((backoff_ms[i] - 1) * MS);
        sleep_ms(20);
        assert_int_equal(atomic_load(&fx.calls[1]), i + 1);
        fg_clock_fake_advance(1 * MS);
        /* Attempts 2 and 3 fail and park the key again; attempt 4 succeeds. */
        assert_true(wait_for(c, (uint64_t)i + 2, i < 2 ? 1 : 0));
        assert_int_equal(atomic_load(&fx.calls[1]), i + 2);
    }
    /* Failures forgotten, each error logged once, and nothing else runs. */
    fg_clock_fake_advance(1000 * MS);
    sleep_ms(20);
    struct fg_controller_metrics m;
    fg_controller_metrics_get(c, &m);
    assert_int_equal(m.reconciles_total, 4);
    assert_int_equal(m.errors_total, 3);
    assert_int_equal(requeues(c, "ns/1"), 0);
    assert_int_equal(atomic_load(&fx.failure_lines), 3);
    fg_controller_free(c);
}

static void requeue_after_forgets_and_comes_back(void **state)
{
    (void)state;
    fg_clock_fake_set(100 * FG_NS_PER_S);
    atomic_store(&fx.fail_first[2], 1);
    atomic_store(&fx.requeue_on_call[2], 2);
    struct fg_controller *c = new_controller(1);
    assert_int_equal(fg_controller_enqueue(c, "ns/2"), FG_OK);
    assert_true(wait_for(c, 1, 1));             /* failed: parked for 5 ms */
    assert_int_equal(requeues(c, "ns/2"), 1);
    fg_clock_fake_advance(5 * MS);
    assert_true(wait_for(c, 2, 1));             /* requeue_after: parked for 50 ms */
    assert_int_equal(requeues(c, "ns/2"), 0);   /* and the failure is forgotten */
    struct fg_controller_metrics m;
    fg_controller_metrics_get(c, &m);
    assert_int_equal(m.requeues_total, 1);
    assert_int_equal(m.errors_total, 1);
    fg_clock_fake_advance(49 * MS);
    sleep_ms(20);
    assert_int_equal(atomic_load(&fx.calls[2]), 2);
    fg_clock_fake_advance(1 * MS);
    assert_true(wait_for(c, 3, 0));
    assert_int_equal(atomic_load(&fx.calls[2]), 3);
    fg_controller_free(c);
}

static void stop_waits_for_in_flight_and_queued_keys(void **state)
{
    (void)state;
    atomic_store(&fx.slow_ms[3], 1000);
    atomic_store(&fx.fail_first[4], 1000);      /* its retry must be dropped, not block stop */
    struct fg_controller *c = new_controller(1);
    assert_int_equal(fg_controller_enqueue(c, "ns/3"), FG_OK);
    struct fg_controller_metrics m = { 0 };
    for (unsigned ms = 0; ms < WAIT_LIMIT_MS && m.busy_workers == 0; ms++) {
        sleep_ms(1);
        fg_controller_metrics_get(c, &m);
    }
    assert_int_equal(m.busy_workers, 1);
    assert_int_equal(fg_controller_enqueue(c, "ns/4"), FG_OK);
    assert_int_equal(fg_controller_enqueue(c, "ns/5"), FG_OK);
    sleep_ms(50);
    fg_controller_metrics_get(c, &m);
    assert_true(m.longest_running_ns >= 40 * MS);
    assert_int_equal(m.queue_depth, 2);

    fg_controller_stop(c);
    /* The in-flight reconcile finished and the keys queued before stop were reconciled. */
    assert_int_equal(atomic_load(&fx.finished[3]), 1);
    assert_int_equal(atomic_load(&fx.calls[4]), 1);
    assert_int_equal(atomic_load(&fx.calls[5]), 1);
    fg_controller_metrics_get(c, &m);
    assert_int_equal(m.busy_workers, 0);
    assert_int_equal(m.reconciles_total, 3);
    assert_int_equal(m.waiting, 0);
    assert_int_equal(fg_controller_enqueue(c, "ns/6"), FG_E_SHUTDOWN);
    assert_int_equal(fg_controller_start(c), FG_E_SHUTDOWN);
    fg_controller_stop(c);
    fg_controller_free(c);
}

static void cancel_waits_only_for_in_flight_keys(void **state)
{
    (void)state;
    atomic_store(&fx.slow_ms[3], 300);
    struct fg_controller *c = new_controller(1);
    assert_int_equal(fg_controller_enqueue(c, "ns/3"), FG_OK);
    struct fg_controller_metrics m = { 0 };
    for (unsigned ms = 0; ms < WAIT_LIMIT_MS && m.busy_workers == 0; ms++) {
        sleep_ms(1);
        fg_controller_metrics_get(c, &m);
    }
    assert_int_equal(m.busy_workers, 1);
    assert_int_equal(fg_controller_enqueue(c, "ns/4"), FG_OK);
    assert_int_equal(fg_controller_enqueue(c, "ns/3"), FG_OK);   /* dirty while in flight */
    fg_controller_cancel(c);
    /* The running reconcile finished; the queued key and the re-queue of the running one were dropped. */
    assert_int_equal(atomic_load(&fx.finished[3]), 1);
    assert_int_equal(atomic_load(&fx.calls[3]), 1);
    assert_int_equal(atomic_load(&fx.calls[4]), 0);
    fg_controller_metrics_get(c, &m);
    assert_int_equal(m.busy_workers, 0);
    assert_int_equal(m.queue_depth, 0);
    assert_int_equal(fg_controller_enqueue(c, "ns/5"), FG_E_SHUTDOWN);
    fg_controller_stop(c);
    fg_controller_free(c);
}

/* Producers hammer a few keys while six workers reconcile them: never two at once per key, and
 * every key's last reconcile starts after its last add. */
enum { STRESS_PRODUCERS = 2, STRESS_ADDS = 5000 };

static void *producer_main(void *arg)
{
    struct fg_controller *c = arg;
    char key[16];
    for (int i = 0; i < STRESS_ADDS; i++) {
        int k = rand() % N_KEYS;
        snprintf(key, sizeof key, "ns/%d", k);
        uint64_t t = atomic_fetch_add(&fx.ticket, 1);
        if (fg_controller_enqueue(c, key) != FG_OK)
            atomic_fetch_add(&fx.violations, 1);
        uint64_t prev = atomic_load(&fx.last_add[k]);
        while (t > prev && !atomic_compare_exchange_weak(&fx.last_add[k], &prev, t)) {
        }
    }
    return NULL;
}

static void stress_one_key_never_reconciled_twice_at_once(void **state)
{
    (void)state;
    struct fg_controller *c = new_controller(6);
    pthread_t producers[STRESS_PRODUCERS];
    for (int i = 0; i < STRESS_PRODUCERS; i++)
        assert_int_equal(pthread_create(&producers[i], NULL, producer_main, c), 0);
    for (int i = 0; i < STRESS_PRODUCERS; i++)
        pthread_join(producers[i], NULL);
    fg_controller_stop(c);
    assert_int_equal(atomic_load(&fx.violations), 0);
    int total = 0;
    for (int k = 0; k < N_KEYS; k++) {
        assert_true(atomic_load(&fx.last_start[k]) > atomic_load(&fx.last_add[k]));
        total += atomic_load(&fx.calls[k]);
    }
    struct fg_controller_metrics m;
    fg_controller_metrics_get(c, &m);
    assert_int_equal(m.reconciles_total, (uint64_t)total);
    assert_true(total <= STRESS_PRODUCERS * STRESS_ADDS);
    fg_controller_free(c);
}

static void bad_options_and_keys_are_rejected(void **state)
{
    (void)state;
    struct fg_controller *c = NULL;
    char errmsg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_controller_new(NULL, &c, errmsg), FG_E_INVAL);
    assert_true(errmsg[0] != '\0');

    struct fg_controller_opts opts = { .name = "x", .workers = 1, .reconcile = NULL };
    assert_int_equal(fg_controller_new(&opts, &c, NULL), FG_E_INVAL);
    opts.reconcile = reconcile;
    opts.name = "";
    assert_int_equal(fg_controller_new(&opts, &c, errmsg), FG_E_INVAL);
    opts.name = "x";
    opts.workers = 0;
    opts.limiter = fg_rate_limiter_new_default();   /* taken even on failure: ASan checks */
    errmsg[0] = '\0';
    assert_int_equal(fg_controller_new(&opts, &c, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "workers"));
    opts.limiter = NULL;
    opts.workers = FG_CONTROLLER_MAX_WORKERS + 1;
    assert_int_equal(fg_controller_new(&opts, &c, errmsg), FG_E_INVAL);
    assert_null(c);

    opts.workers = 1;
    assert_int_equal(fg_controller_new(&opts, &c, errmsg), FG_OK);
    assert_int_equal(fg_controller_enqueue(c, NULL), FG_E_INVAL);
    assert_int_equal(fg_controller_enqueue(c, ""), FG_E_INVAL);
    assert_int_equal(fg_controller_start(c), FG_OK);
    assert_int_equal(fg_controller_start(c), FG_E_BUSY);
    fg_controller_free(c);      /* stops on its own */

    /* Never started: stop and free still work. */
    assert_int_equal(fg_controller_new(&opts, &c, errmsg), FG_OK);
    assert_int_equal(fg_controller_enqueue(c, "ns/7"), FG_OK);
    fg_controller_free(c);
    assert_int_equal(atomic_load(&fx.calls[7]), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(ok_path_reconciles_once_and_forgets),
        T(error_path_backs_off_logs_and_forgets),
        T(requeue_after_forgets_and_comes_back),
        T(stop_waits_for_in_flight_and_queued_keys),
        T(cancel_waits_only_for_in_flight_keys),
        T(stress_one_key_never_reconciled_twice_at_once),
        T(bad_options_and_keys_are_rejected),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
