/* Tests of Kubernetes quantities: the forms the API writes, rounding up, and what is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "operator/kube/quantity.h"

static int64_t milli(const char *s)
{
    int64_t v = -1;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_quantity_parse(s, &v, msg) != FG_OK)
        fail_msg("\"%s\": %s", s, msg);
    return v;
}

static void test_forms(void **state)
{
    (void)state;
    assert_int_equal(milli("0"), 0);
    assert_int_equal(milli("1"), 1000);
    assert_int_equal(milli("500m"), 500);
    assert_int_equal(milli("1.5"), 1500);
    assert_int_equal(milli(".5"), 500);
    assert_int_equal(milli("2."), 2000);
    assert_int_equal(milli("+3"), 3000);
    assert_int_equal(milli("-250m"), -250);
    assert_int_equal(milli("64Mi"), 64ll * 1024 * 1024 * 1000);
    assert_int_equal(milli("80Gi"), 80ll * 1024 * 1024 * 1024 * 1000);
    assert_int_equal(milli("1.5Gi"), 1536ll * 1024 * 1024 * 1000);
    assert_int_equal(milli("1k"), 1000000);
    assert_int_equal(milli("2G"), 2000000000000ll);
    assert_int_equal(milli("2e3"), 2000000);
    assert_int_equal(milli("25E-1"), 2500);
    assert_int_equal(milli("1Ti"), 1099511627776000ll);
    assert_int_equal(milli("0.000000000000000000000000000000000001"), 1);
    assert_int_equal(milli("007"), 7000);
    assert_int_equal(milli("1000000n"), 1);
    assert_int_equal(milli("2500u"), 3);
    assert_int_equal(milli("1.00000000000000000000Gi"), 1073741824000ll);   /* more digits than kept */
    assert_int_equal(milli("0.5Ki"), 512000);
}

static void test_rounds_up(void **state)
{
    (void)state;
    assert_int_equal(milli("0.1m"), 1);       /* a tenth of a millicore is one millicore */
    assert_int_equal(milli("1.0001"), 1001);
    assert_int_equal(milli("-0.5m"), -1);     /* away from zero, as MilliValue rounds */
    assert_int_equal(milli("-1.0001"), -1001);
    assert_int_equal(milli("500u"), 1);
    assert_int_equal(milli("1.000000000000000000000000000000000000001"), 1001);   /* a digit past the kept ones */
    assert_int_equal(milli("0.3m"), 1);
    assert_int_equal(fg_quantity_units(1500), 2);
    assert_int_equal(fg_quantity_units(2000), 2);
    assert_int_equal(fg_quantity_units(-1500), -1);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "", "-", ".", "m", "1 m", "1mi", "1Kb", "1e", "1e+", "0x10", "1,5",
                                       "1.2.3", "Gi", "1..5", " 1", "1e99999" };
    char msg[FG_ERRMSG_MAX];
    int64_t v = 42;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg[0] = '\0';
        assert_int_equal(fg_quantity_parse(bad[i], &v, msg), FG_E_PARSE);
        assert_non_null(strstr(msg, "quantity"));
    }
    assert_int_equal(fg_quantity_parse(NULL, &v, msg), FG_E_PARSE);
    assert_int_equal(fg_quantity_parse("8Ei", &v, msg), FG_E_TOO_BIG);
    assert_int_equal(fg_quantity_parse("10P", &v, msg), FG_E_TOO_BIG);
    assert_int_equal(fg_quantity_parse("1e30", &v, msg), FG_E_TOO_BIG);
    assert_int_equal(fg_quantity_parse("-1e30", &v, msg), FG_E_TOO_BIG);
    assert_int_equal(fg_quantity_parse("1000000000000000000000000000000000000000", &v, msg), FG_E_TOO_BIG);
    assert_int_equal(fg_quantity_parse("9999999999999999999999999999999Ei", &v, msg), FG_E_TOO_BIG);
    assert_int_equal(v, 42);
}

static void test_json(void **state)
{
    (void)state;
    int64_t v = 0;
    json_object *o = json_object_new_int(4);
    assert_int_equal(fg_quantity_json(o, &v, NULL), FG_OK);
    assert_int_equal(v, 4000);
    json_object_put(o);
    o = json_object_new_double(0.25);
    assert_int_equal(fg_quantity_json(o, &v, NULL), FG_OK);
    assert_int_equal(v, 250);
    json_object_put(o);
    o = json_tokener_parse("0.1");   /* a number as a body writes it: its text, not the nearest double */
    assert_int_equal(fg_quantity_json(o, &v, NULL), FG_OK);
    assert_int_equal(v, 100);
    json_object_put(o);
    o = json_tokener_parse("1.1");
    assert_int_equal(fg_quantity_json(o, &v, NULL), FG_OK);
    assert_int_equal(v, 1100);
    json_object_put(o);
    o = json_object_new_string("2Gi");
    assert_int_equal(fg_quantity_json(o, &v, NULL), FG_OK);
    assert_int_equal(v, 2147483648000ll);
    json_object_put(o);
    o = json_object_new_boolean(1);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_quantity_json(o, &v, msg), FG_E_PARSE);
    json_object_put(o);
    assert_int_equal(fg_quantity_json(NULL, &v, msg), FG_E_PARSE);
}

static void test_format(void **state)
{
    (void)state;
    char out[FG_QUANTITY_MAX];
    fg_quantity_format(250, out);
    assert_string_equal(out, "250m");
    fg_quantity_format(32000, out);
    assert_string_equal(out, "32");
    fg_quantity_format(0, out);
    assert_string_equal(out, "0");
    fg_quantity_format(milli("80Gi"), out);
    assert_string_equal(out, "80Gi");
    fg_quantity_format(milli("1536Mi"), out);
    assert_string_equal(out, "1536Mi");
    fg_quantity_format(milli("1000"), out);
    assert_string_equal(out, "1000");
    int64_t back = 0;
    fg_quantity_format(milli("3Ti"), out);
    assert_int_equal(fg_quantity_parse(out, &back, NULL), FG_OK);
    assert_int_equal(back, milli("3Ti"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms), cmocka_unit_test(test_rounds_up), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_json),  cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
