/* Tests of YAML documents read into json-c: the core schema's typing, structure, and refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/yaml.h"

static json_object *load(const char *text)
{
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_yaml_parse(text, strlen(text), &o, msg) != FG_OK)
        fail_msg("%s", msg);
    return o;
}

static void test_scalars(void **state)
{
    (void)state;
    json_object *o = load("a: 1\nb: -2.5\nc: true\nd: False\ne: ~\nf: null\ng: hello world\nh: \"1\"\n"
                          "i: '2'\nj: 0x1F\nk: 0o17\nl: 1e3\nm: .inf\nn: 64Mi\no: !!str 7\np: yes\nq:\nr: 08\n"
                          "s: |\n  line\n");
    int64_t i = 0;
    assert_true(fg_json_get_int64(o, &i, "a", NULL));
    assert_int_equal(i, 1);
    assert_true(json_object_is_type(fg_json_get(o, "b", NULL), json_type_double));
    assert_true(json_object_get_boolean(fg_json_get(o, "c", NULL)));
    assert_true(json_object_is_type(fg_json_get(o, "d", NULL), json_type_boolean));
    assert_false(json_object_get_boolean(fg_json_get(o, "d", NULL)));
    assert_true(json_object_object_get_ex(o, "e", NULL));
    assert_null(fg_json_get(o, "e", NULL));
    assert_null(fg_json_get(o, "f", NULL));
    assert_string_equal(fg_json_get_str(o, "g", NULL), "hello world");
    assert_string_equal(fg_json_get_str(o, "h", NULL), "1");
    assert_string_equal(fg_json_get_str(o, "i", NULL), "2");
    assert_true(fg_json_get_int64(o, &i, "j", NULL));
    assert_int_equal(i, 31);
    assert_true(fg_json_get_int64(o, &i, "k", NULL));
    assert_int_equal(i, 15);
    assert_true(json_object_is_type(fg_json_get(o, "l", NULL), json_type_double));
    assert_true(isinf(json_object_get_double(fg_json_get(o, "m", NULL))));
    assert_string_equal(fg_json_get_str(o, "n", NULL), "64Mi");
    assert_string_equal(fg_json_get_str(o, "o", NULL), "7");
    assert_string_equal(fg_json_get_str(o, "p", NULL), "yes");   /* YAML 1.2: not a boolean */
    assert_null(fg_json_get(o, "q", NULL));
    assert_true(fg_json_get_int64(o, &i, "r", NULL));
    assert_int_equal(i, 8);
    assert_string_equal(fg_json_get_str(o, "s", NULL), "line\n");
    json_object_put(o);
}

/* Integers are digits only after their prefix; floats keep their text. */
static void test_numbers(void **state)
{
    (void)state;
    json_object *o = load("a: 0x-5\nb: \"0x 5\"\nc: 0o+7\nd: +1\ne: 0.1\nf: .5\ng: -0.25e1\nh: 99999999999999999999\n"
                          "i: 0x\n");
    assert_string_equal(fg_json_get_str(o, "a", NULL), "0x-5");
    assert_string_equal(fg_json_get_str(o, "b", NULL), "0x 5");
    assert_string_equal(fg_json_get_str(o, "c", NULL), "0o+7");
    int64_t i = 0;
    assert_true(fg_json_get_int64(o, &i, "d", NULL));
    assert_int_equal(i, 1);
    assert_string_equal(json_object_to_json_string(fg_json_get(o, "e", NULL)), "0.1");
    assert_string_equal(json_object_to_json_string(fg_json_get(o, "f", NULL)), "0.5");   /* JSON spells it so */
    assert_string_equal(json_object_to_json_string(fg_json_get(o, "g", NULL)), "-0.25e1");
    assert_true(json_object_is_type(fg_json_get(o, "h", NULL), json_type_double));   /* too big for an integer */
    assert_string_equal(fg_json_get_str(o, "i", NULL), "0x");
    json_object_put(o);
}

static void test_structure(void **state)
{
    (void)state;
    json_object *o = load("groups:\n  - name: gpu\n    labels: &l {a: b}\n    taints: []\n  - name: cpu\n"
                          "    labels: *l\n");
    json_object *groups = fg_json_get(o, "groups", NULL);
    assert_int_equal(json_object_array_length(groups), 2);
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(groups, 1), "labels", "a", NULL), "b");
    assert_int_equal(json_object_array_length(fg_json_get(json_object_array_get_idx(groups, 0), "taints", NULL)), 0);
    json_object_put(o);
    o = load("[1, 2, {x: y}]");
    assert_int_equal(json_object_array_length(o), 3);
    json_object_put(o);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "", "a: [1, 2", "a: b\n c: d\n", "? [1]\n: x\n", "a: 1\n---\nb: 2\n",
                                       "a: *nowhere\n", "a: b: c\n", "a: 1\nb: 2\na: 3\n", "---\n", "~\n",
                                       "# only a comment\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_object *o = (json_object *)1;
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_yaml_parse(bad[i], strlen(bad[i]), &o, msg), FG_E_PARSE);
        assert_null(o);
        assert_true(msg[0] != '\0');
    }
    /* a self-referencing alias is refused: an anchor names its node only once the node is complete */
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    const char *cycle = "a: &x [*x]\n";
    enum fg_err err = fg_yaml_parse(cycle, strlen(cycle), &o, msg);
    assert_int_equal(err, FG_E_PARSE);
    assert_null(o);
}

static void test_file(void **state)
{
    (void)state;
    char path[] = "/tmp/fg-yaml-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x: [1]\n", 7), 7);
    close(fd);
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_yaml_load_file(path, &o, msg), FG_OK);
    assert_int_equal(json_object_array_length(fg_json_get(o, "x", NULL)), 1);
    json_object_put(o);
    unlink(path);
    assert_int_equal(fg_yaml_load_file(path, &o, msg), FG_E_IO);
    assert_non_null(strstr(msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
