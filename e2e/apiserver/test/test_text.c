/* The server's JSON writer (text.h) against json-c's own: the same text for every kind of value,
 * escapes and numbers included. */
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
    const char *want = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (strlen(want) != t->len || memcmp(want, t->data, t->len))
        fail_msg("got  %s\nwant %s", t->data, want);
    fg__text_unref(t);
    json_object_put(o);
}

static void writer_matches_json_c(void **state)
{
    (void)state;
    same_as_json_c("{}");
    same_as_json_c("[]");
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
        cmocka_unit_test(writer_matches_json_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
