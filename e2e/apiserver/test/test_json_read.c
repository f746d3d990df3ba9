/* The server's JSON reader (json_read.h) against json-c's strict tokener: the same trees and the
 * same text written back for valid documents, a refusal for invalid ones, objects made with their
 * hash tables sized to their members, and one {} for all the empty objects of a document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "e2e/apiserver/json_read.h"
#include "e2e/apiserver/text.h"

static void same_as_json_c(const char *doc)
{
    json_object *mine = NULL, *theirs = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg__json_read(doc, strlen(doc), 0, &mine, msg) != FG_OK)
        fail_msg("refused %s: %s", doc, msg);
    assert_int_equal(fg_json_parse(doc, strlen(doc), 0, &theirs, NULL), FG_OK);
    if (!json_object_equal(mine, theirs))
        fail_msg("%s: got %s", doc, json_object_to_json_string(mine));
    struct fg__text *a = fg__text_from_json(mine), *b = fg__text_from_json(theirs);
    if (a->len != b->len || memcmp(a->data, b->data, a->len))
        fail_msg("%s: writes back as %s, json-c's as %s", doc, a->data, b->data);
    fg__text_unref(a);
    fg__text_unref(b);
    json_object_put(mine);
    json_object_put(theirs);
}

static void refused(const char *doc, const char *why)
{
    json_object *mine = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg__json_read(doc, strlen(doc), 0, &mine, msg) == FG_OK)
        fail_msg("accepted %s", doc);
    assert_null(mine);
    if (!strstr(msg, why))
        fail_msg("%s: \"%s\" lacks \"%s\"", doc, msg, why);
}

static void valid_documents(void **state)
{
    (void)state;
    same_as_json_c("{}");
    same_as_json_c("[]");
    same_as_json_c(" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } }\n");
    same_as_json_c("{\"n\":[0,-0,7,-7,9223372036854775807,-9223372036854775808,18446744073709551615]}");
    same_as_json_c("{\"d\":[0.5,-1.25e3,3.0,1e-7,1E+2,12345.678,-0.0]}");
    same_as_json_c("[true,false,null,\"\",[[[]]],{\"x\":{\"y\":{}}}]");
    same_as_json_c("{\"s\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0001\\u00e9\\u4e2d\\ud83d\\ude00 caf\xc3\xa9\"}");
    same_as_json_c("{\"lone\":[\"\\ud83dx\",\"\\ude00\"],\"nul\":\"a\\u0000b\"}");
    same_as_json_c("{\"dup\":1,\"other\":2,\"dup\":3}");
    same_as_json_c("{\"k\\u00e9y\":\"v\",\"esc\\\"aped\":1}");
    same_as_json_c("\"top\""); /* json-c reads a bare number or word at the top only with more to come */
    /* a long object and array grow nothing once made */
    char big[4096] = "{";
    for (int i = 0; i < 100; i++)
        snprintf(big + strlen(big), sizeof(big) - strlen(big), "%s\"k%d\":[%d]", i ? "," : "", i, i);
    strcat(big, "}");
    same_as_json_c(big);
}

static void invalid_documents(void **state)
{
    (void)state;
    refused("", "truncated JSON");
    refused("{\"a\":1", "truncated JSON");
    refused("{\"a\":\"b", "truncated JSON");
    refused("not json at all", "invalid JSON at byte 0");
    refused("{\"a\":1,}", "invalid JSON at byte 7");
    refused("[1,2,]", "invalid JSON");
    refused("{'a':1}", "invalid JSON at byte 1");
    refused("{\"a\":01}", "invalid JSON");
    refused("{\"a\":1} x", "trailing data at byte 8");
    refused("{\"a\":1}{}", "trailing data");
    refused("/* c */ {}", "invalid JSON");
    refused("{\"a\":\"tab\there\"}", "control character");
    refused("{\"a\":\"\\x\"}", "bad escape");
    refused("{\"a\":\"\\u12g4\"}", "bad \\u escape");
    refused("{\"a\" 1}", "expected ':'");
    refused("{1:2}", "expected a string");
    refused("[1 2]", "expected ',' or ']'");
    refused("{\"a\":1 \"b\":2}", "expected ',' or '}'");
    refused("-", "truncated JSON");
    refused("1.", "truncated JSON");
    refused("1.e5", "bad number");
    refused("tru", "invalid JSON");
    char deep[200] = "";
    for (int i = 0; i < 65; i++)
        strcat(deep, "[");
    refused(deep, "nesting too deep");
    json_object *o = NULL;
    assert_int_equal(fg__json_read("{\"a\":1}", 7, 6, &o, NULL), FG_E_TOO_BIG);
}

/* Objects come with hash tables sized to their members, and the empty ones of a document are one. */
static void right_sized(void **state)
{
    (void)state;
    json_object *o = NULL;
    const char *doc = "{\"empty\":{},\"one\":{\"a\":1,\"b\":{}},\"list\":[1,2,3]}";
    assert_int_equal(fg__json_read(doc, strlen(doc), 0, &o, NULL), FG_OK);
    assert_ptr_equal(fg_json_get(o, "empty", NULL), fg_json_get(o, "one", "b", NULL));
    assert_true(json_object_get_object(fg_json_get(o, "one", NULL))->size <= 4);
    assert_true(json_object_get_object(o)->size <= 5);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_documents),
        cmocka_unit_test(invalid_documents),
        cmocka_unit_test(right_sized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
