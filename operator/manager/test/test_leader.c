/*
 * Leader election in-process against the test API server (lease 2 s, renew deadline 1.5 s, retry
 * 250 ms): the Lease written as kube-controller-manager writes it; a second candidate stands by and
 * takes over at once when the leader releases on a clean stop (transitions counted); and a leader cut
 * off from the API server — the server stops answering — stops leading within the renew deadline of
 * the cut, before its lease could expire for anyone else. Bad durations are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "operator/manager/leader.h"

#define LEASE_NS (2 * FG_NS_PER_S)
#define RENEW_NS (1500 * FG_NS_PER_MS)
#define RETRY_NS (250 * FG_NS_PER_MS)

static struct fg_harness h;

static struct fg_leader *candidate(const char *identity)
{
    struct fg_leader_opts o = { .enabled = true, .lease_namespace = "fracgpu-system", .lease_name = "fracgpu-test",
                                .identity = identity, .lease_duration_ns = LEASE_NS, .renew_deadline_ns = RENEW_NS,
                                .retry_period_ns = RETRY_NS };
    struct fg_leader *le = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_leader_new(fg_manager_config(h.manager), &o, &le, msg) != FG_OK)
        fail_msg("leader: %s", msg);
    assert_int_equal(fg_leader_start(le), FG_OK);
    return le;
}

/* Polls until le leads (or stops leading: want false); returns the time it did. */
static uint64_t wait_leading(struct fg_leader *le, bool want, unsigned timeout_ms)
{
    for (unsigned ms = 0; ms <= timeout_ms; ms += 5) {
        if (fg_leader_is_leading(le) == want)
            return fg_clock_mono_ns();
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    fail_msg("%s did not %s within %u ms", fg_leader_identity(le), want ? "lead" : "stop leading", timeout_ms);
    return 0;
}

static json_object *lease(void)
{
    char *path = fg_kube_path(&fg_kube_leases, "fracgpu-system", "fracgpu-test", NULL, NULL);
    json_object *l = NULL;
    assert_int_equal(fg_kube_get(h.client, path, &l, NULL), FG_OK);
    free(path);
    return l;
}

static int setup(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    assert_int_equal(fg_harness_namespace(&h, "fracgpu-system"), FG_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    return 0;
}

static void test_standby_and_release(void **state)
{
    (void)state;
    struct fg_leader *a = candidate("a"), *b = NULL;
    wait_leading(a, true, 5000);
    json_object *l = lease();
    assert_string_equal(fg_json_get_str(l, "spec", "holderIdentity", NULL), "a");
    int64_t v = 0;
    assert_true(fg_json_get_int64(l, &v, "spec", "leaseDurationSeconds", NULL) && v == 2);
    assert_true(fg_json_get_int64(l, &v, "spec", "leaseTransitions", NULL) && v == 0);
    const char *renew = fg_json_get_str(l, "spec", "renewTime", NULL);
    assert_non_null(renew);
    assert_int_equal(strlen(renew), strlen("2026-11-24T05:00:00.123456Z"));   /* MicroTime */
    assert_non_null(fg_json_get_str(l, "spec", "acquireTime", NULL));
    json_object_put(l);

    b = candidate("b");
    struct timespec ts = { 1, 0 };
    nanosleep(&ts, NULL);
    assert_false(fg_leader_is_leading(b));   /* a renews: b stands by */
    assert_int_equal(fg_leader_terms(b), 0);

    uint64_t released = fg_clock_mono_ns();
    fg_leader_free(a);                       /* a clean stop releases the Lease */
    uint64_t led = wait_leading(b, true, 3000);
    printf("released: b led %.3f s later (retry period %.3f s)\n", (double)(led - released) / 1e9,
           (double)RETRY_NS / 1e9);
    assert_true(led - released <= RETRY_NS + 100 * FG_NS_PER_MS);
    l = lease();
    assert_string_equal(fg_json_get_str(l, "spec", "holderIdentity", NULL), "b");
    assert_true(fg_json_get_int64(l, &v, "spec", "leaseTransitions", NULL) && v == 1);
    json_object_put(l);
    fg_leader_free(b);
}

static void test_cut_off_leader_steps_down_in_time(void **state)
{
    (void)state;
    struct fg_leader *a = candidate("a");
    wait_leading(a, true, 5000);
    struct timespec ts = { 0, 600 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    uint64_t cut = fg_clock_mono_ns();
    fg_apiserver_stop(h.server);             /* the server stops answering: a is cut off */
    uint64_t gone = wait_leading(a, false, 5000);
    printf("cut off: a stopped leading %.3f s later (renew deadline %.3f s, lease %.3f s)\n",
           (double)(gone - cut) / 1e9, (double)RENEW_NS / 1e9, (double)LEASE_NS / 1e9);
    assert_true(gone - cut <= RENEW_NS + 20 * FG_NS_PER_MS);
    assert_true(gone - cut < LEASE_NS);
    fg_leader_free(a);                       /* its release times out: nothing hangs */
}

static void test_bad_durations(void **state)
{
    (void)state;
    struct fg_leader_opts o = FG_LEADER_OPTS_DEFAULT;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_leader_opts_check(&o, msg), FG_E_INVAL);   /* no namespace or name */
    o.lease_namespace = "ns";
    o.lease_name = "l";
    assert_int_equal(fg_leader_opts_check(&o, msg), FG_OK);
    o.lease_duration_ns = 1500 * FG_NS_PER_MS;
    assert_int_equal(fg_leader_opts_check(&o, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "whole seconds"));
    o.lease_duration_ns = 10 * FG_NS_PER_S;
    assert_int_equal(fg_leader_opts_check(&o, msg), FG_E_INVAL);   /* renew deadline 10 s is not shorter */
    o.renew_deadline_ns = 5 * FG_NS_PER_S;
    o.retry_period_ns = 5 * FG_NS_PER_S;
    assert_int_equal(fg_leader_opts_check(&o, msg), FG_E_INVAL);
    o.retry_period_ns = 0;
    assert_int_equal(fg_leader_opts_check(&o, msg), FG_E_INVAL);
    struct fg_leader *le = NULL;
    assert_int_equal(fg_leader_new(fg_manager_config(h.manager), &o, &le, msg), FG_E_INVAL);
    assert_null(le);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_standby_and_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_off_leader_steps_down_in_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_durations, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
