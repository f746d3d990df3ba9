/* Stored texts (text.h): json-c's compact JSON of the object, every kind of value, escapes and
 * numbers included, with the object left as it was and still its caller's to write and put. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "e2e/apiserver/text.h"

static void same_as_json_c(const char *doc)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(doc, strlen(doc), 0, &o, NULL), FG_OK);
    struct fg__text *t = fg__text_from_json(o);
    assert_int_equal(t->refs, 1);
    assert_int_equal(strlen(t->data), t->len);
    const char *want = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (strlen(want) != t->len || memcmp(want, t->data, t->len))
        fail_msg("got  %s\nwant %s", t->data, want);
    assert_ptr_equal(fg__text_ref(t), t);
    fg__text_unref(t);
    fg__text_unref(t);
    json_object_put(o);
}

static void text_is_json_c_s(void **state)
{
    (void)state;
    same_as_json_c("{}");
    same_as_json_c("[]");
    same_as_json_c("\"top\"");
    same_as_json_c("{\"a\":{},\"b\":[],\"c\":[{},[],null,true,false]}");
    same_as_json_c("{\"n\":[0,1,-1,42,9223372036854775807,-9223372036854775808]}");
    same_as_json_c("{\"d\":[0.5,-1.25e3,3.0,1e-7,12345.678]}");
    same_as_json_c("{\"s\":\"plain /path/ \\\"quoted\\\" back\\\\slash \\b\\f\\n\\r\\t \\u0001\\u001f\\u007f\","
                   "\"u\":\"caf\\u00e9 \\u4e2d \\ud83d\\ude00\",\"k\\n\\\"ey\":\"v\"}");
    same_as_json_c("{\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"web\"},\"managedFields\":[{\"fieldsV1\":"
                   "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}}}}]},\"spec\":{\"priority\":0}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_is_json_c_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
