#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"

static void parse_and_lookup(void **state)
{
    (void)state;
    const char *text = "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"12\",\"generation\":3,"
                       "\"annotations\":{\"fracgpu.io/policy\":\"batch\"}},\"spec\":{\"x\":2.0}}";
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(o, "metadata", "name", NULL), "p");
    assert_string_equal(fg_json_get_str(o, "metadata", "annotations", "fracgpu.io/policy", NULL), "batch");
    assert_null(fg_json_get_str(o, "metadata", "generation", NULL));
    assert_null(fg_json_get_str(o, "metadata", "name", "deeper", NULL));
    int64_t v = 0;
    assert_true(fg_json_get_int64(o, &v, "metadata", "generation", NULL));
    assert_int_equal(v, 3);
    assert_true(fg_json_get_int64(o, &v, "spec", "x", NULL));
    assert_int_equal(v, 2);
    assert_false(fg_json_get_int64(o, &v, "metadata", "name", NULL));
    assert_false(fg_json_get_int64(o, &v, "nope", NULL));
    json_object_put(o);
}

static void rejects_bad_input_with_location(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX];
    json_object *o = (json_object *)1;
    assert_int_equal(fg_json_parse("{\"a\":", 5, 0, &o, msg), FG_E_PARSE);
    assert_null(o);
    assert_non_null(strstr(msg, "truncated"));
    assert_int_equal(fg_json_parse("{\"a\":1}}", 8, 0, &o, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, "byte 7"));
    assert_int_equal(fg_json_parse("{\"a\":tru}", 9, 0, &o, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, "byte"));
    assert_int_equal(fg_json_parse("", 0, 0, &o, msg), FG_E_PARSE);
    assert_int_equal(fg_json_parse("{\"a\":1}", 7, 3, &o, msg), FG_E_TOO_BIG);
    /* trailing whitespace is fine */
    assert_int_equal(fg_json_parse("{\"a\":1}\n ", 9, 0, &o, msg), FG_OK);
    json_object_put(o);
}

static void rejects_deep_nesting(void **state)
{
    (void)state;
    size_t n = 10000;
    char *deep = fg_malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_json_parse(deep, 2 * n, 0, &o, msg), FG_E_PARSE);
    assert_null(o);
    free(deep);
}

static void ensure_obj_and_set_str(void **state)
{
    (void)state;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "metadata", json_object_new_string("not an object"));
    json_object *md = fg_json_ensure_obj(o, "metadata");
    fg_json_set_str(fg_json_ensure_obj(md, "labels"), "fracgpu.io/managed", "true");
    assert_string_equal(fg_json_text(o, NULL), "{\"metadata\":{\"labels\":{\"fracgpu.io/managed\":\"true\"}}}");
    fg_json_set_str(fg_json_ensure_obj(md, "labels"), "fracgpu.io/managed", NULL);
    assert_string_equal(fg_json_text(o, NULL), "{\"metadata\":{\"labels\":{}}}");
    json_object_put(o);
}

static void pointer_tokens(void **state)
{
    (void)state;
    char out[16];
    assert_true(fg_json_pointer_token("a/b~c", out, sizeof(out)));
    assert_string_equal(out, "a~1b~0c");
    assert_true(fg_json_pointer_token("", out, sizeof(out)));
    assert_string_equal(out, "");
    assert_false(fg_json_pointer_token("fracgpu.io/gpu-share", out, sizeof(out)));
    assert_false(fg_json_pointer_token("0123456789abcd~", out, sizeof(out)));
    assert_true(fg_json_pointer_token("0123456789abcd", out, sizeof(out)));
}

static void tested_patch(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse("{\"metadata\":{\"resourceVersion\":\"42\"}}");
    json_object *ops = fg_json_patch_tested(o);
    assert_string_equal(fg_json_text(ops, NULL), "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"42\"}]");
    json_object_put(ops);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_and_lookup),
        cmocka_unit_test(rejects_bad_input_with_location),
        cmocka_unit_test(rejects_deep_nesting),
        cmocka_unit_test(ensure_obj_and_set_str),
        cmocka_unit_test(pointer_tokens),
        cmocka_unit_test(tested_patch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
