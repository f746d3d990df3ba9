/*
 * The Prometheus text writer: family headers with escaped help, label escaping, values that read back
 * exactly (and the special values), pairs with NULL values left out, and name validation.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/prom.h"

static void test_family_and_samples(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    fg_prom_family(&b, "fg_x_total", FG_PROM_COUNTER, "Things counted.\nTwo lines \\ here.");
    const char *labels[] = { "a", "1", "skipped", NULL, "b", "q\"uo\\te\nnl", NULL };
    fg_prom_sample_u64(&b, "fg_x_total", labels, 18446744073709551615ull);
    fg_prom_sample(&b, "fg_y", NULL, 0.35);
    assert_string_equal(fg_buf_str(&b), "# HELP fg_x_total Things counted.\\nTwo lines \\\\ here.\n"
                                        "# TYPE fg_x_total counter\n"
                                        "fg_x_total{a=\"1\",b=\"q\\\"uo\\\\te\\nnl\"} 18446744073709551615\n"
                                        "fg_y 0.35\n");
    fg_buf_cleanup(&b);
}

static void test_values(void **state)
{
    (void)state;
    const struct {
        double v;
        const char *text;
    } cases[] = {
        { 0, "0" },          { -3, "-3" },          { 1e15, "1000000000000000" }, { 0.1, "0.1" },
        { 1.0 / 3, "0.333333333333333" /* prefix: 17 digits follow */ }, { NAN, "NaN" },
        { INFINITY, "+Inf" }, { -INFINITY, "-Inf" }, { 1e300, "1e+300" }, { 2.5e-7, "2.5e-07" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fg_buf b = FG_BUF_INIT;
        fg_prom_value(&b, cases[i].v);
        if (strncmp(fg_buf_str(&b), cases[i].text, strlen(cases[i].text)))
            fail_msg("%.17g printed as %s, want %s", cases[i].v, fg_buf_str(&b), cases[i].text);
        if (isfinite(cases[i].v) && strtod(fg_buf_str(&b), NULL) != cases[i].v)
            fail_msg("%s does not read back as %.17g", fg_buf_str(&b), cases[i].v);
        fg_buf_cleanup(&b);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_true(fg_prom_metric_name_valid("fracgpu_x:rate5m"));
    assert_true(fg_prom_metric_name_valid("_x"));
    assert_false(fg_prom_metric_name_valid(""));
    assert_false(fg_prom_metric_name_valid("9x"));
    assert_false(fg_prom_metric_name_valid("a-b"));
    assert_false(fg_prom_metric_name_valid(NULL));
    assert_true(fg_prom_label_name_valid("le"));
    assert_false(fg_prom_label_name_valid("__name__"));
    assert_false(fg_prom_label_name_valid("a:b"));
    assert_false(fg_prom_label_name_valid("1a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_and_samples),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
