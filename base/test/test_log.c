#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"

static struct fg_buf captured;
static int lines;

static void capture(void *ud, const char *line, unsigned long len)
{
    (void)ud;
    lines++;
    assert_int_equal(fg_buf_append(&captured, line, len), FG_OK);
}

static int evaluated;
static const char *count_eval(void)
{
    evaluated++;
    return "x";
}

static int setup(void **state)
{
    (void)state;
    fg_buf_init(&captured, 0);
    lines = 0;
    fg_log_set_sink(capture, NULL);
    fg_log_set_level(FG_LOG_INFO);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_log_set_sink(NULL, NULL);
    fg_buf_cleanup(&captured);
    return 0;
}

static void line_is_one_json_object_with_fields(void **state)
{
    (void)state;
    fg_log_obj(FG_LOG_WARN, "informer", "Pod", "ml", "llm-0", "relist after %s \"quoted\"\n", "410");
    assert_int_equal(lines, 1);
    assert_int_equal(captured.data[captured.len - 1], '\n');
    assert_null(memchr(captured.data, '\n', captured.len - 1));
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(captured.data, captured.len, 0, &o, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(o, "level", NULL), "warn");
    assert_string_equal(fg_json_get_str(o, "component", NULL), "informer");
    assert_string_equal(fg_json_get_str(o, "msg", NULL), "relist after 410 \"quoted\"\n");
    assert_string_equal(fg_json_get_str(o, "kind", NULL), "Pod");
    assert_string_equal(fg_json_get_str(o, "namespace", NULL), "ml");
    assert_string_equal(fg_json_get_str(o, "name", NULL), "llm-0");
    const char *ts = fg_json_get_str(o, "ts", NULL);
    assert_int_equal(strlen(ts), 24);
    assert_int_equal(ts[23], 'Z');
    json_object_put(o);
}

static void disabled_level_does_not_evaluate_arguments(void **state)
{
    (void)state;
    evaluated = 0;
    fg_log(FG_LOG_DEBUG, "t", "%s", count_eval());
    assert_int_equal(evaluated, 0);
    assert_int_equal(lines, 0);
    fg_log_set_level(FG_LOG_DEBUG);
    fg_log(FG_LOG_DEBUG, "t", "%s", count_eval());
    assert_int_equal(evaluated, 1);
    assert_int_equal(lines, 1);
}

static void parse_level(void **state)
{
    (void)state;
    enum fg_log_level l = FG_LOG_INFO;
    assert_true(fg_log_parse_level("error", &l));
    assert_int_equal(l, FG_LOG_ERROR);
    assert_false(fg_log_parse_level("verbose", &l));
    assert_int_equal(l, FG_LOG_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(line_is_one_json_object_with_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(disabled_level_does_not_evaluate_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(parse_level, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
