/* Tests of label and field selector parsing and matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "operator/kube/selector.h"

static const char *const fields[] = { "metadata.name", "metadata.namespace", "spec.nodeName", "spec.schedulerName",
                                       "status.phase", "reason", "involvedObject.name", NULL };

static json_object *obj(void)
{
    const char *s = "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\",\"labels\":{\"app\":\"web\",\"tier\":\"fe\","
                    "\"example.com/role\":\"x\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}";
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(s, strlen(s), 0, &o, NULL), FG_OK);
    return o;
}

static bool labels_match(const char *sel, json_object *o)
{
    struct fg_selector s;
    char msg[FG_ERRMSG_MAX];
    if (fg_selector_parse_labels(sel, &s, msg) != FG_OK)
        fail_msg("parse %s: %s", sel, msg);
    bool m = fg_selector_match_labels(&s, o);
    fg_selector_cleanup(&s);
    return m;
}

static bool fields_match(const char *sel, json_object *o)
{
    struct fg_selector s;
    char msg[FG_ERRMSG_MAX];
    if (fg_selector_parse_fields(sel, fields, &s, msg) != FG_OK)
        fail_msg("parse %s: %s", sel, msg);
    bool m = fg_selector_match_fields(&s, o);
    fg_selector_cleanup(&s);
    return m;
}

static void label_operators(void **state)
{
    (void)state;
    json_object *o = obj();
    assert_true(labels_match("", o));
    assert_true(labels_match("app=web", o));
    assert_true(labels_match("app==web,tier=fe", o));
    assert_false(labels_match("app=web,tier=be", o));
    assert_true(labels_match("app!=db", o));
    assert_true(labels_match("missing!=x", o));
    assert_false(labels_match("app!=web", o));
    assert_true(labels_match("app in (db, web)", o));
    assert_false(labels_match("app in (db)", o));
    assert_true(labels_match("app notin (db,cache)", o));
    assert_false(labels_match("app notin (web)", o));
    assert_true(labels_match("missing notin (web)", o));
    assert_true(labels_match("app", o));
    assert_true(labels_match("example.com/role", o));
    assert_false(labels_match("missing", o));
    assert_true(labels_match("!missing", o));
    assert_false(labels_match("!app", o));
    assert_true(labels_match(" app = web , !gone ", o));
    json_object_put(o);
}

static void label_syntax_errors(void **state)
{
    (void)state;
    static const char *const bad[] = { "app===web", "=web", "app in web", "app in (a", "app=web,", "app web",
                                       "a/b/c=1", "app=x y", "-bad!=1=2" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct fg_selector s;
        char msg[FG_ERRMSG_MAX] = "";
        if (fg_selector_parse_labels(bad[i], &s, msg) != FG_E_PARSE)
            fail_msg("accepted bad selector %s", bad[i]);
        assert_true(strlen(msg) > 0);
        assert_null(s.reqs);
    }
}

static void field_selectors(void **state)
{
    (void)state;
    json_object *o = obj();
    assert_true(fields_match("metadata.name=p1", o));
    assert_true(fields_match("metadata.name==p1,metadata.namespace=ns", o));
    assert_false(fields_match("metadata.name=p2", o));
    assert_true(fields_match("spec.nodeName!=n2", o));
    assert_false(fields_match("spec.nodeName!=n1", o));
    assert_true(fields_match("spec.schedulerName=", o)); /* absent reads as "" */
    assert_true(fields_match("status.phase=Running", o));
    json_object_put(o);
    /* a top-level field and a nested one, as an Event's are selected */
    const char *event = "{\"reason\":\"Scheduled\",\"involvedObject\":{\"name\":\"web-1\",\"kind\":\"Pod\"}}";
    assert_int_equal(fg_json_parse(event, strlen(event), 0, &o, NULL), FG_OK);
    assert_true(fields_match("reason=Scheduled,involvedObject.name=web-1", o));
    assert_false(fields_match("reason=FailedScheduling", o));
    assert_true(fields_match("involvedObject.name!=web-2", o));
    struct fg_selector s;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_selector_parse_fields("spec.foo=1", fields, &s, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, "field label not supported: spec.foo"));
    assert_int_equal(fg_selector_parse_fields("metadata.name", fields, &s, msg), FG_E_PARSE);
    assert_int_equal(fg_selector_parse_fields("=x", fields, &s, msg), FG_E_PARSE);
    json_object_put(o);
}

static void label_selector_objects(void **state)
{
    (void)state;
    json_object *o = obj();
    static const struct { const char *sel; bool match; } cases[] = {
        { "{}", true },
        { "{\"matchLabels\":{\"app\":\"web\",\"tier\":\"fe\"}}", true },
        { "{\"matchLabels\":{\"app\":\"db\"}}", false },
        { "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"db\",\"web\"]}]}", true },
        { "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"NotIn\",\"values\":[\"web\"]}]}", false },
        { "{\"matchExpressions\":[{\"key\":\"gone\",\"operator\":\"DoesNotExist\"},"
          "{\"key\":\"tier\",\"operator\":\"Exists\"}]}", true },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_object *j = NULL;
        assert_int_equal(fg_json_parse(cases[i].sel, strlen(cases[i].sel), 0, &j, NULL), FG_OK);
        struct fg_selector s;
        assert_int_equal(fg_selector_from_json(j, &s, NULL), FG_OK);
        if (fg_selector_match_labels(&s, o) != cases[i].match)
            fail_msg("selector %s: want %d", cases[i].sel, cases[i].match);
        fg_selector_cleanup(&s);
        json_object_put(j);
    }
    static const char *const bad[] = { "[]", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}",
                                       "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        json_object *j = NULL;
        assert_int_equal(fg_json_parse(bad[i], strlen(bad[i]), 0, &j, NULL), FG_OK);
        struct fg_selector s;
        char msg[FG_ERRMSG_MAX];
        assert_int_equal(fg_selector_from_json(j, &s, msg), FG_E_PARSE);
        assert_null(s.reqs);
        json_object_put(j);
    }
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(label_operators),
        cmocka_unit_test(label_syntax_errors),
        cmocka_unit_test(field_selectors),
        cmocka_unit_test(label_selector_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
