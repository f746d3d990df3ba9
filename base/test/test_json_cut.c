#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

static const char *const managed[] = { "object", "metadata", "managedFields", NULL };

/* Cuts `path` from `in` and checks the text that remains. */
static void expect_cut(const char *in, const char *const *path, const char *want)
{
    char *text = fg_strdup(in);
    size_t n = fg_json_cut_member(text, strlen(text), path);
    text[n] = '\0';
    assert_string_equal(text, want);
    free(text);
}

static void cuts_first_middle_last_and_only_members(void **state)
{
    (void)state;
    const char *const a[] = { "a", NULL };
    expect_cut("{\"a\":1,\"b\":2}", a, "{\"b\":2}");
    expect_cut("{\"b\":2,\"a\":[1,{\"x\":\"]\"}],\"c\":3}", a, "{\"b\":2,\"c\":3}");
    expect_cut("{\"b\":2, \"a\" : {\"y\":{}} }", a, "{\"b\":2 }");
    expect_cut("{\"a\":\"only\"}", a, "{}");
    expect_cut(" { \"a\" : null , \"b\" : true } ", a, " { \"b\" : true } ");
    expect_cut("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p\",\"managedFields\":[{\"f:spec\":{}}],"
               "\"uid\":\"u\"},\"spec\":{}}}",
               managed, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{}}}");
}

static void leaves_lookalikes_alone(void **state)
{
    (void)state;
    /* the key inside a string value, an escaped quote before it, and the key at the wrong depth */
    const char *tricky[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"annotations\":{\"x\":\"\\\"managedFields\\\":[1]\"}}}}",
        "{\"type\":\"ADDED\",\"object\":{\"managedFields\":[1],\"metadata\":{\"name\":\"p\"}}}",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"labels\":{\"managedFields\":\"v\"}}}}",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFieldsX\":1}}}",
        "{\"type\":\"ADDED\",\"object\":\"metadata\"}",
    };
    for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; i++)
        expect_cut(tricky[i], managed, tricky[i]);
}

static void malformed_text_is_untouched(void **state)
{
    (void)state;
    const char *bad[] = {
        "", "{", "[]", "{\"object\":{\"metadata\":{\"managedFields\":[1,2}}",
        "{\"object\":{\"metadata\":{\"managedFields\":\"unterminated}}}",
        "{\"object\" {\"metadata\":{}}}", "{\"object\":{\"metadata\":{\"a\":1 \"managedFields\":2}}}",
        "{\"object\":{\"metadata\":{\"managedFields\":}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_cut(bad[i], managed, bad[i]);
    const char *const empty[] = { NULL };
    expect_cut("{\"a\":1}", empty, "{\"a\":1}");
    expect_cut("{\"a\":1}", NULL, "{\"a\":1}");
}

/* For many generated events: parsing the cut text gives exactly the parsed original minus the member. */
static void cut_equals_parse_then_delete(void **state)
{
    (void)state;
    unsigned seed = 1;
    for (int round = 0; round < 2000; round++) {
        struct fg_buf b = FG_BUF_INIT;
        int pos = (int)(rand_r(&seed) % 4), fields = 1 + (int)(rand_r(&seed) % 4);
        assert_int_equal(fg_buf_puts(&b, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{"), FG_OK);
        for (int f = 0; f < fields; f++) {
            if (f)
                assert_int_equal(fg_buf_puts(&b, rand_r(&seed) % 2 ? "," : " ,\n "), FG_OK);
            if (f == pos % fields)
                assert_int_equal(fg_buf_printf(&b, "\"managedFields\":[{\"manager\":\"k\\\"x\",\"fieldsV1\":"
                                                   "{\"f:spec\":{\"f:c\":{\"k:{\\\"name\\\":\\\"m\\\"}\":{}}}}}]"), FG_OK);
            else
                assert_int_equal(fg_buf_printf(&b, "\"k%d\":%s", f,
                                               rand_r(&seed) % 2 ? "\"v}]\\\\\"" : "[1,{\"a\":null}]"), FG_OK);
        }
        assert_int_equal(fg_buf_puts(&b, "},\"spec\":{\"n\":1.5}}}"), FG_OK);

        json_object *want = NULL, *got = NULL;
        assert_int_equal(fg_json_parse(b.data, b.len, 0, &want, NULL), FG_OK);
        json_object_object_del(fg_json_get(want, "object", "metadata", NULL), "managedFields");
        size_t n = fg_json_cut_member(b.data, b.len, managed);
        assert_true(n < b.len);
        assert_int_equal(fg_json_parse(b.data, n, 0, &got, NULL), FG_OK);
        assert_true(json_object_equal(want, got));
        json_object_put(want);
        json_object_put(got);
        fg_buf_cleanup(&b);
    }
}

static void parser_is_reusable_after_errors(void **state)
{
    (void)state;
    struct fg_json_parser p = FG_JSON_PARSER_INIT;
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fg_json_parser_parse(&p, "{\"a\":[1,2]}\n", 12, 0, &o, msg), FG_OK);
        assert_int_equal(json_object_array_length(fg_json_get(o, "a", NULL)), 2);
        json_object_put(o);
        assert_int_equal(fg_json_parser_parse(&p, "{\"a\":", 5, 0, &o, msg), FG_E_PARSE);
        assert_null(o);
        assert_int_equal(fg_json_parser_parse(&p, "{\"a\":x}", 7, 0, &o, msg), FG_E_PARSE);
    }
    fg_json_parser_cleanup(&p);
    fg_json_parser_cleanup(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cuts_first_middle_last_and_only_members),
        cmocka_unit_test(leaves_lookalikes_alone),
        cmocka_unit_test(malformed_text_is_untouched),
        cmocka_unit_test(cut_equals_parse_then_delete),
        cmocka_unit_test(parser_is_reusable_after_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
