/*
 * The Prometheus text reader: what prom.h writes reads back exactly (names, labels with every escape,
 * values with NaN and the infinities), timestamps and comments, and hostile bodies — binary junk,
 * unterminated quotes, bad escapes, huge lines, too many or duplicate labels, a missing value, a body
 * over the cap — are refused line by line with the right counts and the first error's line number,
 * never a crash.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/mem.h"
#include "base/prom.h"
#include "base/prom_parse.h"

/* What the callback saw, flattened: "name{k=v,...} value [ts]" per sample, values with %.17g. */
struct seen {
    struct fg_buf text;
    size_t calls, stop_after;
};

static bool record(void *ud, const struct fg_prom_parsed *s)
{
    struct seen *w = ud;
    fg_buf_put_str(&w->text, s->name);
    fg_buf_put_str(&w->text, "{");
    for (size_t i = 0; i < s->nlabels; i++)
        assert_int_equal(fg_buf_printf(&w->text, "%s%s=%s", i ? "," : "", s->labels[i].name, s->labels[i].value), FG_OK);
    assert_int_equal(fg_buf_printf(&w->text, "} %.17g", s->value), FG_OK);
    if (s->has_timestamp)
        assert_int_equal(fg_buf_printf(&w->text, " %lld", (long long)s->timestamp_ms), FG_OK);
    fg_buf_put_str(&w->text, "\n");
    return ++w->calls != w->stop_after;
}

static enum fg_err parse(const char *body, size_t len, const struct fg_prom_parse_opts *o, struct seen *w,
                         struct fg_prom_parse_stats *st, char *errmsg)
{
    fg_buf_reset(&w->text);
    fg_buf_put_str(&w->text, "");
    w->calls = 0;
    return fg_prom_parse(body, len, o, record, w, st, errmsg);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    fg_prom_family(&b, "fracgpu_pod_gpu_utilization_ratio", FG_PROM_GAUGE, "Help with \\ and\nnewline.");
    const char *l1[] = { "node", "n1", "uuid", "GPU-1", "namespace", "ml", "pod", "q\"uo\\te\nnl", "container", "c", NULL };
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", l1, 0.35);
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", NULL, NAN);
    const char *l2[] = { "a", "", NULL };
    fg_prom_sample(&b, "x:y_z", l2, INFINITY);
    fg_prom_sample(&b, "x:y_z", l2, -INFINITY);
    fg_prom_family(&b, "fracgpu_pod_gpu_memory_used_bytes", FG_PROM_COUNTER, "Bytes.");
    fg_prom_sample_u64(&b, "fracgpu_pod_gpu_memory_used_bytes", l1, 123456789012ull);
    fg_prom_sample(&b, "v", NULL, 1.0 / 3);
    struct seen w = { FG_BUF_INIT, 0, 0 };
    struct fg_prom_parse_stats st;
    char errmsg[FG_ERRMSG_MAX] = "";
    assert_int_equal(parse(b.data, b.len, NULL, &w, &st, errmsg), FG_OK);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.samples, 6);
    assert_int_equal(st.comments, 4);
    assert_int_equal(st.lines, 10);
    assert_string_equal(fg_buf_str(&w.text),
                        "fracgpu_pod_gpu_utilization_ratio{node=n1,uuid=GPU-1,namespace=ml,pod=q\"uo\\te\nnl,container=c} "
                        "0.34999999999999998\n"
                        "fracgpu_pod_gpu_utilization_ratio{} nan\n"
                        "x:y_z{a=} inf\n"
                        "x:y_z{a=} -inf\n"
                        "fracgpu_pod_gpu_memory_used_bytes{node=n1,uuid=GPU-1,namespace=ml,pod=q\"uo\\te\nnl,container=c} "
                        "123456789012\n"
                        "v{} 0.33333333333333331\n");
    fg_buf_cleanup(&w.text);
    fg_buf_cleanup(&b);
}

static void test_forms(void **state)
{
    (void)state;
    const char body[] = "# a free comment\r\n"
                        "\n"
                        "  m{ a = \"1\" , b=\"2\", }\t7 1700000000000\r\n"
                        "m_total 1e3 -5\n"
                        "m2{} +Inf\n"
                        "m3 -0.5";   /* no final newline */
    struct seen w = { FG_BUF_INIT, 0, 0 };
    struct fg_prom_parse_stats st;
    assert_int_equal(parse(body, strlen(body), NULL, &w, &st, NULL), FG_OK);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.lines, 6);
    assert_string_equal(fg_buf_str(&w.text), "m{a=1,b=2} 7 1700000000000\n"
                                             "m_total{} 1000 -5\n"
                                             "m2{} inf\n"
                                             "m3{} -0.5\n");
    /* the callback stops the parse */
    w.stop_after = 2;
    assert_int_equal(parse(body, strlen(body), NULL, &w, &st, NULL), FG_OK);
    assert_true(st.stopped);
    assert_int_equal(st.samples, 2);
    const struct fg_prom_label lab[] = { { "a", "1" }, { "b", "2" } };
    const struct fg_prom_parsed p = { .name = "m", .labels = lab, .nlabels = 2 };
    assert_string_equal(fg_prom_parsed_label(&p, "b"), "2");
    assert_null(fg_prom_parsed_label(&p, "c"));
    fg_buf_cleanup(&w.text);
}

/* Every line of `bad` is refused with `why`; the good line after it still reads. */
static void refused(const char *bad, size_t len, const char *why)
{
    struct fg_buf body = FG_BUF_INIT;
    fg_buf_put_str(&body, "ok 1\n");
    fg_buf_put(&body, bad, len);
    fg_buf_put_str(&body, "\nok 2\n");
    struct seen w = { FG_BUF_INIT, 0, 0 };
    struct fg_prom_parse_stats st;
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_prom_parse_opts o = FG_PROM_PARSE_OPTS_DEFAULT;
    o.max_line = 4096;
    o.max_labels = 4;
    assert_int_equal(parse(body.data, body.len, &o, &w, &st, errmsg), FG_OK);
    if (st.errors != 1 || !strstr(errmsg, why) || strncmp(errmsg, "line 2: ", 8))
        fail_msg("\"%.40s\": %zu errors, \"%s\" (want line 2: %s)", bad, st.errors, errmsg, why);
    assert_int_equal(st.first_error_line, 2);
    assert_string_equal(fg_buf_str(&w.text), "ok{} 1\nok{} 2\n");
    /* stopping at the first error */
    o.stop_on_error = true;
    assert_int_equal(parse(body.data, body.len, &o, &w, &st, errmsg), FG_E_PARSE);
    assert_string_equal(fg_buf_str(&w.text), "ok{} 1\n");
    fg_buf_cleanup(&w.text);
    fg_buf_cleanup(&body);
}

#define REFUSED(lit, why) refused(lit, sizeof(lit) - 1, why)

static void test_refused_lines(void **state)
{
    (void)state;
    REFUSED("m{a=\"1} 2", "unterminated label value");
    REFUSED("m{a=\"1\\", "unterminated label value");
    REFUSED("m{a=\"\\t\"} 2", "bad escape");
    REFUSED("m{a=\"1\",a=\"2\"} 3", "label named twice");
    REFUSED("m{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\"} 3", "too many labels");
    REFUSED("m{a=\"1\"}", "missing value");
    REFUSED("m", "missing value");
    REFUSED("m{a=1} 2", "does not start with a quote");
    REFUSED("m{a=\"1\" b=\"2\"} 3", "expected \",\" or \"}\"");
    REFUSED("m{1a=\"1\"} 2", "bad label name");
    REFUSED("m{a\"1\"} 2", "without \"=\"");
    REFUSED("9m 2", "bad metric name");
    REFUSED("m two", "bad value");
    REFUSED("m 0x10", "bad value");
    REFUSED("m 1 12.5", "bad timestamp");
    REFUSED("m 1 99999999999999999999", "bad timestamp");
    REFUSED("m 1 2 3", "text after the timestamp");
    REFUSED("m\0 1", "NUL byte");
    REFUSED("# TYPE m sometimes", "unknown TYPE");
    REFUSED("# TYPE", "TYPE without a metric name");
    REFUSED("# HELP 1m x", "HELP without a metric name");
    REFUSED("# TYPE m gauge extra", "text after the type");
    char *huge = fg_malloc(5000);
    memset(huge, 'm', 4998);
    memcpy(huge + 4998, " 1", 2);
    refused(huge, 5000, "line too long");
    free(huge);
}

static void test_hostile_bodies(void **state)
{
    (void)state;
    struct seen w = { FG_BUF_INIT, 0, 0 };
    struct fg_prom_parse_stats st;
    char errmsg[FG_ERRMSG_MAX] = "";
    /* binary junk: deterministic bytes of every value, newlines included */
    size_t n = 1 << 16;
    unsigned char *junk = fg_malloc(n);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        junk[i] = (unsigned char)x;
    }
    assert_int_equal(parse((const char *)junk, n, NULL, &w, &st, errmsg), FG_OK);
    assert_true(st.errors > 0);
    assert_true(st.lines >= st.errors);
    assert_int_equal(strncmp(errmsg, "line ", 5), 0);
    free(junk);
    /* one enormous line without a newline */
    n = 1 << 20;
    char *big = fg_malloc(n);
    memset(big, 'a', n);
    assert_int_equal(parse(big, n, NULL, &w, &st, errmsg), FG_OK);
    assert_int_equal(st.lines, 1);
    assert_int_equal(st.errors, 1);
    assert_string_equal(errmsg, "line 1: line too long");
    /* over the body cap: refused unread */
    struct fg_prom_parse_opts o = FG_PROM_PARSE_OPTS_DEFAULT;
    o.max_body = n - 1;
    assert_int_equal(parse(big, n, &o, &w, &st, errmsg), FG_E_TOO_BIG);
    assert_int_equal(st.lines, 0);
    o.max_body = 0;
    assert_int_equal(parse(big, 1, &o, &w, &st, errmsg), FG_E_INVAL);
    free(big);
    /* empty body */
    assert_int_equal(parse("", 0, NULL, &w, &st, errmsg), FG_OK);
    assert_int_equal(st.lines, 0);
    assert_int_equal(w.calls, 0);
    fg_buf_cleanup(&w.text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refused_lines),
        cmocka_unit_test(test_hostile_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
