/*
 * The metrics registry: one series per (name, labels) however often it is asked for, counters and
 * gauges updated from many threads without losing an update, histogram buckets cumulative with +Inf
 * and the labels merged with le, collectors written after the registry's own families, and the
 * whole body accepted by a strict parse of the text format's line grammar.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/metrics.h"
#include "base/prom.h"

static void test_series_are_shared(void **state)
{
    (void)state;
    struct fg_metrics *r = fg_metrics_new();
    const char *a[] = { "controller", "gpupolicy", NULL };
    const char *b[] = { "controller", "gpuworkload", NULL };
    struct fg_counter *c1 = fg_metrics_counter(r, "fg_reconcile_total", "Reconciles.", a);
    struct fg_counter *c2 = fg_metrics_counter(r, "fg_reconcile_total", "ignored", a);
    struct fg_counter *c3 = fg_metrics_counter(r, "fg_reconcile_total", "ignored", b);
    assert_ptr_equal(c1, c2);
    assert_ptr_not_equal(c1, c3);
    fg_counter_add(c1, 2);
    fg_counter_add(c3, 5);
    struct fg_gauge *g = fg_metrics_gauge(r, "fg_depth", "Depth.", NULL);
    fg_gauge_set(g, 1.5);
    fg_gauge_add(g, -0.25);
    struct fg_buf out = FG_BUF_INIT;
    fg_metrics_write(r, &out);
    assert_string_equal(fg_buf_str(&out), "# HELP fg_reconcile_total Reconciles.\n"
                                          "# TYPE fg_reconcile_total counter\n"
                                          "fg_reconcile_total{controller=\"gpupolicy\"} 2\n"
                                          "fg_reconcile_total{controller=\"gpuworkload\"} 5\n"
                                          "# HELP fg_depth Depth.\n"
                                          "# TYPE fg_depth gauge\n"
                                          "fg_depth 1.25\n");
    fg_buf_cleanup(&out);
    fg_metrics_free(r);
}

static void test_histogram(void **state)
{
    (void)state;
    struct fg_metrics *r = fg_metrics_new();
    const double bounds[] = { 0.1, 1 };
    const char *l[] = { "c", "x", NULL };
    struct fg_histogram *h = fg_metrics_histogram(r, "fg_seconds", "Latency.", l, bounds, 2);
    struct fg_histogram *bare = fg_metrics_histogram(r, "fg_seconds", "Latency.", NULL, bounds, 2);
    fg_histogram_observe(h, 0.05);
    fg_histogram_observe(h, 0.1);    /* on the bound: counted in it (le is "less or equal") */
    fg_histogram_observe(h, 0.5);
    fg_histogram_observe(h, 7);
    fg_histogram_observe(bare, 2);
    assert_int_equal(fg_histogram_count(h), 4);
    struct fg_buf out = FG_BUF_INIT;
    fg_metrics_write(r, &out);
    assert_string_equal(fg_buf_str(&out), "# HELP fg_seconds Latency.\n"
                                          "# TYPE fg_seconds histogram\n"
                                          "fg_seconds_bucket{c=\"x\",le=\"0.1\"} 2\n"
                                          "fg_seconds_bucket{c=\"x\",le=\"1\"} 3\n"
                                          "fg_seconds_bucket{c=\"x\",le=\"+Inf\"} 4\n"
                                          "fg_seconds_sum{c=\"x\"} 7.65\n"
                                          "fg_seconds_count{c=\"x\"} 4\n"
                                          "fg_seconds_bucket{le=\"0.1\"} 0\n"
                                          "fg_seconds_bucket{le=\"1\"} 0\n"
                                          "fg_seconds_bucket{le=\"+Inf\"} 1\n"
                                          "fg_seconds_sum 2\n"
                                          "fg_seconds_count 1\n");
    fg_buf_cleanup(&out);
    fg_metrics_free(r);
}

struct hammer {
    struct fg_counter *c;
    struct fg_gauge *g;
    struct fg_histogram *h;
};

static void *hammer_main(void *arg)
{
    struct hammer *hm = arg;
    for (int i = 0; i < 100000; i++) {
        fg_counter_add(hm->c, 1);
        fg_gauge_add(hm->g, 0.5);
        fg_histogram_observe(hm->h, 0.002);
    }
    return NULL;
}

static void test_no_update_is_lost(void **state)
{
    (void)state;
    struct fg_metrics *r = fg_metrics_new();
    struct hammer hm = { fg_metrics_counter(r, "fg_c_total", "c", NULL), fg_metrics_gauge(r, "fg_g", "g", NULL),
                         fg_metrics_histogram(r, "fg_h", "h", NULL, fg_metrics_latency_bounds,
                                              fg_metrics_latency_bounds_n) };
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &hm), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(fg_counter_value(hm.c), 400000);
    assert_true(fg_gauge_value(hm.g) == 200000.0);
    assert_int_equal(fg_histogram_count(hm.h), 400000);
    fg_metrics_free(r);
}

static void collect(void *ud, struct fg_buf *out)
{
    fg_prom_family(out, "fg_collected", FG_PROM_GAUGE, "From a collector.");
    fg_prom_sample(out, "fg_collected", NULL, *(double *)ud);
}

/* Every line is a comment (# HELP / # TYPE) or `name{labels} value` with a valid name. */
static void assert_text_format(const char *text)
{
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        assert_non_null(nl);
        size_t len = (size_t)(nl - line);
        if (line[0] == '#') {
            assert_true(!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7));
        } else {
            char name[128] = "";
            size_t n = strcspn(line, "{ ");
            assert_true(n < sizeof name && n < len);
            memcpy(name, line, n);
            if (!fg_prom_metric_name_valid(name))
                fail_msg("bad sample name in \"%.*s\"", (int)len, line);
            assert_non_null(memchr(line, ' ', len));
        }
        line = nl + 1;
    }
}

static void test_collectors_and_format(void **state)
{
    (void)state;
    struct fg_metrics *r = fg_metrics_new();
    double v = 42;
    fg_metrics_add_collector(r, collect, &v);
    fg_counter_add(fg_metrics_counter(r, "fg_first_total", "First.", NULL), 1);
    struct fg_buf out = FG_BUF_INIT;
    fg_metrics_write(r, &out);
    const char *first = strstr(fg_buf_str(&out), "fg_first_total 1\n");
    const char *collected = strstr(fg_buf_str(&out), "fg_collected 42\n");
    assert_non_null(first);
    assert_non_null(collected);
    assert_true(first < collected);
    assert_text_format(fg_buf_str(&out));
    fg_buf_cleanup(&out);
    fg_metrics_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_are_shared),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_no_update_is_lost),
        cmocka_unit_test(test_collectors_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
