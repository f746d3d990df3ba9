/* Tests for the reflector against the fake lister-watcher: list+watch, relists on 410, re-watch from
 * the last resourceVersion, bookmarks, backoff and Retry-After, and monotonic resourceVersions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/fake_listwatch.h"
#include "operator/cache/reflector.h"

#define MAX_RECORDS 256
#define MAX_KEYS 64

struct record {
    char type;   /* 'a', 'u', 'd' */
    char key[64];
    uint64_t rv, old_rv;
};

struct fixture {
    struct fg_fake_listwatch *fake;
    struct fg_store *store;
    struct fg_reflector *r;
    struct record rec[MAX_RECORDS];
    size_t nrec;
    /* the highest resourceVersion handlers saw per key: it must never go down */
    char keys[MAX_KEYS][64];
    uint64_t max_rv[MAX_KEYS];
    size_t nkeys;
};

static void check_monotonic(struct fixture *f, struct fg_kobj *obj)
{
    size_t i = 0;
    while (i < f->nkeys && strcmp(f->keys[i], fg_kobj_key(obj)) != 0)
        i++;
    if (i == f->nkeys) {
        assert_true(f->nkeys < MAX_KEYS);
        snprintf(f->keys[f->nkeys++], sizeof(f->keys[0]), "%s", fg_kobj_key(obj));
    }
    assert_true(fg_kobj_rv(obj) >= f->max_rv[i]);
    f->max_rv[i] = fg_kobj_rv(obj);
}

static void record(struct fixture *f, char type, struct fg_kobj *old, struct fg_kobj *obj)
{
    check_monotonic(f, obj);
    assert_true(f->nrec < MAX_RECORDS);
    struct record *r = &f->rec[f->nrec++];
    r->type = type;
    snprintf(r->key, sizeof(r->key), "%s", fg_kobj_key(obj));
    r->rv = fg_kobj_rv(obj);
    r->old_rv = old ? fg_kobj_rv(old) : 0;
}

static void on_add(void *ud, struct fg_kobj *obj) { record(ud, 'a', NULL, obj); }
static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    assert_true(fg_kobj_rv(old) < fg_kobj_rv(obj));
    record(ud, 'u', old, obj);
}
static void on_delete(void *ud, struct fg_kobj *obj) { record(ud, 'd', NULL, obj); }

static const struct fg_resource_handler handler = { on_add, on_update, on_delete };

static uint64_t apply(struct fixture *f, enum fg_watch_type type, const char *name, const char *node)
{
    char *json = fg_asprintf("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"%s\",\"resourceVersion\":\"0\"},"
                             "\"spec\":{\"nodeName\":\"%s\"}}", name, node);
    uint64_t rv = fg_fake_listwatch_apply_json(f->fake, type, json);
    assert_true(rv > 0);
    free(json);
    return rv;
}

static int setup(void **state)
{
    struct fixture *f = fg_calloc(1, sizeof(*f));
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    f->fake = fg_fake_listwatch_new("Pod");
    f->store = fg_store_new();
    struct fg_reflector_opts opts = FG_REFLECTOR_OPTS_DEFAULT;
    opts.backoff_initial_ns = FG_NS_PER_S;
    opts.backoff_jitter = 0.5;
    opts.seed = 42;
    f->r = fg_reflector_new(fg_fake_listwatch_base(f->fake), f->store, &opts, &handler, f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fg_reflector_free(f->r);
    fg_listwatch_free(fg_fake_listwatch_base(f->fake));
    fg_store_free(f->store);
    free(f);
    fg_clock_fake_clear();
    return 0;
}

static size_t count(const struct fixture *f, char type)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nrec; i++)
        n += f->rec[i].type == type;
    return n;
}

static const struct record *find(const struct fixture *f, char type, const char *key)
{
    for (size_t i = 0; i < f->nrec; i++)
        if (f->rec[i].type == type && strcmp(f->rec[i].key, key) == 0)
            return &f->rec[i];
    return NULL;
}

static uint64_t stored_rv(struct fixture *f, const char *key)
{
    struct fg_kobj *k = fg_store_get(f->store, key);
    uint64_t rv = k ? fg_kobj_rv(k) : 0;
    fg_kobj_unref(k);
    return rv;
}

/* Seconds until the earliest armed timer. */
static double timer_in_s(struct fixture *f)
{
    uint64_t next = fg_fake_listwatch_next_timer_ns(f->fake);
    assert_true(next != UINT64_MAX);
    return (double)(next - fg_clock_mono_ns()) / 1e9;
}

/* Moves the clock to the earliest timer and runs. */
static void fire_next_timer(struct fixture *f)
{
    uint64_t next = fg_fake_listwatch_next_timer_ns(f->fake);
    assert_true(next != UINT64_MAX);
    fg_clock_fake_advance(next - fg_clock_mono_ns());
    fg_fake_listwatch_run(f->fake);
}

static void start_synced(struct fixture *f)
{
    fg_reflector_start(f->r);
    fg_fake_listwatch_run(f->fake);
    assert_true(fg_reflector_has_synced(f->r));
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);
}

static void test_list_then_watch(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    apply(f, FG_WATCH_ADDED, "b", "n1");
    uint64_t rv_c = apply(f, FG_WATCH_ADDED, "c", "n2");
    assert_false(fg_reflector_has_synced(f->r));
    start_synced(f);
    const struct fg_fake_listwatch_stats *st = fg_fake_listwatch_stats(f->fake);
    assert_int_equal(st->lists, 1);
    assert_int_equal(st->watches, 1);
    char want[24];
    snprintf(want, sizeof(want), "%llu", (unsigned long long)rv_c);
    assert_string_equal(st->last_watch_rv, want);
    assert_true(st->last_timeout_s >= 300 && st->last_timeout_s <= 600);
    assert_int_equal(count(f, 'a'), 3);
    assert_int_equal(fg_store_len(f->store), 3);
    assert_int_equal(fg_reflector_last_rv(f->r), rv_c);

    uint64_t rv = apply(f, FG_WATCH_MODIFIED, "a", "n3");
    const struct record *u = find(f, 'u', "ns/a");
    assert_non_null(u);
    assert_int_equal(u->rv, rv);
    assert_true(u->old_rv < rv);
    assert_int_equal(stored_rv(f, "ns/a"), rv);
    rv = apply(f, FG_WATCH_DELETED, "b", "n1");
    assert_non_null(find(f, 'd', "ns/b"));
    assert_int_equal(fg_store_len(f->store), 2);
    apply(f, FG_WATCH_ADDED, "d", "n1");
    assert_int_equal(fg_store_len(f->store), 3);
    assert_int_equal(fg_reflector_last_rv(f->r), fg_fake_listwatch_rv(f->fake));
    assert_int_equal(st->lists, 1);
}

static void test_stale_events_dropped(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    uint64_t rv = apply(f, FG_WATCH_MODIFIED, "a", "n2");
    size_t before = f->nrec;
    /* A replayed older version, then an older delete: both ignored. */
    json_object *old = json_tokener_parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"3\"}}");
    assert_true(fg_fake_listwatch_deliver(f->fake, FG_WATCH_MODIFIED, old));
    assert_true(fg_fake_listwatch_deliver(f->fake, FG_WATCH_DELETED, old));
    json_object_put(old);
    assert_int_equal(f->nrec, before);
    assert_int_equal(stored_rv(f, "ns/a"), rv);
    assert_true(fg_reflector_stats(f->r)->dropped_stale >= 1);
}

static void test_bad_objects_skipped(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    uint64_t last = fg_reflector_last_rv(f->r);
    static const char *const bad[] = {
        "{\"foo\":1}",
        "{\"metadata\":{\"name\":\"x\"}}",
        "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"abc\"}}",
        "{\"metadata\":{\"name\":7,\"resourceVersion\":\"900\"}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_object *o = json_tokener_parse(bad[i]);
        assert_true(fg_fake_listwatch_deliver(f->fake, FG_WATCH_MODIFIED, o));
        json_object_put(o);
    }
    /* A bookmark without a resourceVersion moves nothing. */
    json_object *bm = json_tokener_parse("{\"kind\":\"Pod\"}");
    assert_true(fg_fake_listwatch_deliver(f->fake, FG_WATCH_BOOKMARK, bm));
    json_object_put(bm);
    assert_int_equal(fg_reflector_stats(f->r)->bad_objects, 4);
    assert_int_equal(f->nrec, 1);
    assert_int_equal(fg_store_len(f->store), 1);
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);
    /* The unnamed object's resourceVersion still counts as seen; nothing else moved it. */
    assert_int_equal(fg_reflector_last_rv(f->r), 900);
    assert_true(last < 900);
}

static void test_relist_on_watch_410_with_outage_changes(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "same", "n1");
    apply(f, FG_WATCH_ADDED, "changed", "n1");
    apply(f, FG_WATCH_ADDED, "deleted", "n1");
    start_synced(f);
    size_t before = f->nrec;

    /* The stream drops; while we are away things change and the history is compacted. */
    fg_clock_fake_advance(10 * FG_NS_PER_S);
    assert_true(fg_fake_listwatch_drop(f->fake, FG_E_CLOSED));
    uint64_t rv_changed = apply(f, FG_WATCH_MODIFIED, "changed", "n2");
    apply(f, FG_WATCH_DELETED, "deleted", "n1");
    apply(f, FG_WATCH_ADDED, "new", "n1");
    fg_fake_listwatch_compact(f->fake);
    fire_next_timer(f);   /* re-watch from the old rv: refused with 410, so it relists */

    const struct fg_fake_listwatch_stats *st = fg_fake_listwatch_stats(f->fake);
    assert_int_equal(st->lists, 2);
    assert_true(st->watching);
    /* Exactly: an update for "changed", a delete for "deleted", an add for "new"; "same" is silent. */
    assert_int_equal(f->nrec - before, 3);
    const struct record *u = find(f, 'u', "ns/changed");
    assert_non_null(u);
    assert_int_equal(u->rv, rv_changed);
    assert_non_null(find(f, 'd', "ns/deleted"));
    assert_non_null(find(f, 'a', "ns/new"));
    assert_null(find(f, 'u', "ns/same"));
    assert_int_equal(fg_store_len(f->store), 3);
    assert_int_equal(stored_rv(f, "ns/deleted"), 0);
}

static void test_relist_on_injected_410(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    fg_clock_fake_advance(10 * FG_NS_PER_S);
    fg_fake_listwatch_fail_watch(f->fake, FG_E_KUBE_GONE, 0);
    assert_true(fg_fake_listwatch_drop(f->fake, FG_OK));   /* clean close: re-watch at once, refused */
    fg_fake_listwatch_run(f->fake);
    assert_int_equal(fg_fake_listwatch_stats(f->fake)->lists, 2);
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);
    assert_int_equal(count(f, 'a'), 1);   /* the relist found nothing new */
}

static void test_relist_on_error_event(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    assert_true(fg_fake_listwatch_send_expired(f->fake));
    assert_false(fg_fake_listwatch_stats(f->fake)->watching);
    /* The relist starts at once, without a backoff. */
    assert_true(fg_fake_listwatch_next_timer_ns(f->fake) == UINT64_MAX);
    fg_fake_listwatch_run(f->fake);
    assert_int_equal(fg_fake_listwatch_stats(f->fake)->lists, 2);
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);
    assert_int_equal(fg_reflector_stats(f->r)->failures, 0);
}

static void test_other_error_event_rewatches(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    json_object *st = json_tokener_parse("{\"kind\":\"Status\",\"code\":500,\"reason\":\"InternalError\","
                                         "\"message\":\"etcd unhappy\"}");
    assert_false(fg_fake_listwatch_deliver(f->fake, FG_WATCH_ERROR, st));
    json_object_put(st);
    assert_false(fg_fake_listwatch_stats(f->fake)->watching);
    fire_next_timer(f);
    assert_int_equal(fg_fake_listwatch_stats(f->fake)->lists, 1);
    assert_int_equal(fg_fake_listwatch_stats(f->fake)->watches, 2);
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);
}

static void test_rewatch_from_last_rv_and_bookmarks(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    apply(f, FG_WATCH_MODIFIED, "a", "n2");
    assert_true(fg_fake_listwatch_bookmark(f->fake));
    uint64_t bm = fg_fake_listwatch_rv(f->fake);
    assert_int_equal(fg_reflector_last_rv(f->r), bm);

    /* A clean close after a healthy while: re-watch at once from the bookmark. */
    fg_clock_fake_advance(300 * FG_NS_PER_S);
    assert_true(fg_fake_listwatch_drop(f->fake, FG_OK));
    fg_fake_listwatch_run(f->fake);
    const struct fg_fake_listwatch_stats *st = fg_fake_listwatch_stats(f->fake);
    char want[24];
    snprintf(want, sizeof(want), "%llu", (unsigned long long)bm);
    assert_string_equal(st->last_watch_rv, want);
    assert_true(st->watching);

    /* A broken stream: re-watch after a backoff, from the last event, replaying what was missed. */
    uint64_t rv = apply(f, FG_WATCH_MODIFIED, "a", "n3");
    assert_true(fg_fake_listwatch_drop(f->fake, FG_E_CLOSED));
    uint64_t missed = apply(f, FG_WATCH_MODIFIED, "a", "n4");
    assert_int_equal(stored_rv(f, "ns/a"), rv);
    double delay = timer_in_s(f);
    assert_true(delay >= 1.0 && delay <= 1.5);
    fire_next_timer(f);
    snprintf(want, sizeof(want), "%llu", (unsigned long long)rv);
    assert_string_equal(st->last_watch_rv, want);
    assert_int_equal(stored_rv(f, "ns/a"), missed);
    assert_int_equal(st->lists, 1);
}

static void test_quick_clean_close_backs_off(void **state)
{
    struct fixture *f = *state;
    start_synced(f);
    assert_true(fg_fake_listwatch_drop(f->fake, FG_OK));   /* closed at once, no events */
    fg_fake_listwatch_run(f->fake);
    assert_false(fg_fake_listwatch_stats(f->fake)->watching);
    assert_true(timer_in_s(f) >= 1.0);
    fire_next_timer(f);
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);
}

static void test_backoff_grows_and_honours_retry_after(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    for (int i = 0; i < 7; i++)
        fg_fake_listwatch_fail_list(f->fake, FG_E_KUBE_INTERNAL, 0);
    fg_reflector_start(f->r);
    fg_fake_listwatch_run(f->fake);
    assert_false(fg_reflector_has_synced(f->r));
    double base = 1.0;
    for (int i = 0; i < 7; i++) {
        double d = timer_in_s(f);
        double lo = base > 30 ? 30 : base, hi = base * 1.5 > 30 ? 30 : base * 1.5;
        assert_true(d >= lo && d <= hi + 1e-9);
        fire_next_timer(f);
        base *= 2;
    }
    assert_true(fg_reflector_has_synced(f->r));
    assert_int_equal(fg_fake_listwatch_stats(f->fake)->lists, 8);

    /* Throttled: the server's Retry-After wins over a shorter backoff. */
    fg_clock_fake_advance(600 * FG_NS_PER_S);   /* healthy for long: the backoff resets */
    fg_fake_listwatch_fail_list(f->fake, FG_E_KUBE_TOO_MANY_REQUESTS, 45);
    assert_true(fg_fake_listwatch_send_expired(f->fake));
    fg_fake_listwatch_run(f->fake);
    assert_true(timer_in_s(f) == 45.0);
    fire_next_timer(f);
    assert_true(fg_fake_listwatch_stats(f->fake)->watching);

    /* After the reset the next failure waits the initial delay again. */
    fg_clock_fake_advance(600 * FG_NS_PER_S);
    fg_fake_listwatch_fail_list(f->fake, FG_E_KUBE_INTERNAL, 0);
    assert_true(fg_fake_listwatch_send_expired(f->fake));
    fg_fake_listwatch_run(f->fake);
    double d = timer_in_s(f);
    assert_true(d >= 1.0 && d <= 1.5);
}

static void test_watchdog_renews_dead_watch(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    start_synced(f);
    const struct fg_fake_listwatch_stats *st = fg_fake_listwatch_stats(f->fake);
    unsigned timeout_s = st->last_timeout_s;
    /* Nothing arrives and the server never closes: before timeout + 60 s the watch is left alone. */
    fg_clock_fake_advance((uint64_t)(timeout_s + 59) * FG_NS_PER_S);
    fg_fake_listwatch_run(f->fake);
    assert_int_equal(st->watches, 1);
    fg_clock_fake_advance(1 * FG_NS_PER_S);
    fg_fake_listwatch_run(f->fake);
    assert_int_equal(st->watches, 2);
    assert_true(st->watching);
    assert_int_equal(st->lists, 1);
    assert_int_equal(fg_reflector_stats(f->r)->failures, 1);
    /* Events still flow on the new stream. */
    uint64_t rv = apply(f, FG_WATCH_MODIFIED, "a", "n2");
    assert_int_equal(stored_rv(f, "ns/a"), rv);
}

static void test_stop_silences(void **state)
{
    struct fixture *f = *state;
    apply(f, FG_WATCH_ADDED, "a", "n1");
    fg_fake_listwatch_fail_list(f->fake, FG_E_KUBE_UNAVAILABLE, 0);
    fg_reflector_start(f->r);
    fg_fake_listwatch_run(f->fake);
    fg_reflector_stop(f->r);
    assert_true(fg_fake_listwatch_next_timer_ns(f->fake) == UINT64_MAX);
    fg_clock_fake_advance(3600 * FG_NS_PER_S);
    fg_fake_listwatch_run(f->fake);
    assert_int_equal(fg_fake_listwatch_stats(f->fake)->lists, 1);
    assert_int_equal(f->nrec, 0);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_then_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_events_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_objects_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relist_on_watch_410_with_outage_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relist_on_injected_410, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relist_on_error_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_error_event_rewatches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewatch_from_last_rv_and_bookmarks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quick_clean_close_backs_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backoff_grows_and_honours_retry_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_renews_dead_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_silences, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
