#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/buf.h"

static void append_grows_and_terminates(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    assert_string_equal(fg_buf_str(&b), "");
    for (int i = 0; i < 1000; i++)
        assert_int_equal(fg_buf_printf(&b, "%d,", i % 10), FG_OK);
    assert_int_equal(b.len, 2000);
    assert_int_equal(b.data[b.len], '\0');
    assert_memory_equal(b.data, "0,1,2,", 6);
    fg_buf_cleanup(&b);
}

static void printf_longer_than_stack_scratch(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(fg_buf_printf(&b, "<%s>", big), FG_OK);
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.data[0], '<');
    assert_int_equal(b.data[1000], '>');
    fg_buf_cleanup(&b);
}

static void limit_rejects_and_keeps_content(void **state)
{
    (void)state;
    struct fg_buf b;
    fg_buf_init(&b, 8);
    assert_int_equal(fg_buf_puts(&b, "12345"), FG_OK);
    assert_int_equal(fg_buf_puts(&b, "6789"), FG_E_TOO_BIG);
    assert_string_equal(fg_buf_str(&b), "12345");
    assert_int_equal(fg_buf_printf(&b, "%s", "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"), FG_E_TOO_BIG);
    assert_int_equal(fg_buf_puts(&b, "678"), FG_OK);
    assert_string_equal(fg_buf_str(&b), "12345678");
    fg_buf_cleanup(&b);
}

static void consume_and_take(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    assert_int_equal(fg_buf_puts(&b, "line1\nline2\n"), FG_OK);
    fg_buf_consume(&b, 6);
    assert_string_equal(fg_buf_str(&b), "line2\n");
    fg_buf_consume(&b, 100);
    assert_int_equal(b.len, 0);
    assert_int_equal(fg_buf_puts(&b, "kept"), FG_OK);
    char *s = fg_buf_take(&b);
    assert_string_equal(s, "kept");
    assert_null(b.data);
    free(s);
    s = fg_buf_take(&b);
    assert_string_equal(s, "");
    free(s);
}

static void string_helpers(void **state)
{
    (void)state;
    assert_true(fg_str_has_prefix("cri-containerd-abc", "cri-containerd-"));
    assert_false(fg_str_has_prefix("cri", "cri-containerd-"));
    assert_true(fg_str_has_suffix("x.scope", ".scope"));
    assert_false(fg_str_has_suffix("scope", ".scope"));
    assert_true(fg_str_eq(NULL, NULL));
    assert_false(fg_str_eq("a", NULL));
    assert_true(fg_str_eq("a", "a"));
}

static void read_file_reports_missing_and_oversized(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX];
    struct fg_buf b = FG_BUF_INIT;
    assert_int_equal(fg_buf_read_file(&b, "/nonexistent/fracgpu", msg), FG_E_IO);
    assert_non_null(strstr(msg, "/nonexistent/fracgpu"));

    char path[] = "/tmp/fg-buf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "0123456789", 10), 10);
    close(fd);
    assert_int_equal(fg_buf_read_file(&b, path, msg), FG_OK);
    assert_string_equal(fg_buf_str(&b), "0123456789");
    fg_buf_cleanup(&b);
    fg_buf_init(&b, 4);
    assert_int_equal(fg_buf_read_file(&b, path, msg), FG_E_TOO_BIG);
    fg_buf_cleanup(&b);
    unlink(path);
}

static void parse_bool_as_go_does(void **state)
{
    (void)state;
    const char *yes[] = { "1", "t", "T", "TRUE", "true", "True" };
    const char *no[] = { "0", "f", "F", "FALSE", "false", "False" };
    for (size_t i = 0; i < 6; i++) {
        bool v = false;
        assert_true(fg_parse_bool(yes[i], &v));
        assert_true(v);
        assert_true(fg_parse_bool(no[i], &v));
        assert_false(v);
    }
    const char *bad[] = { "", "yes", "on", "tRUE", "2", " true", "true ", "falsey", NULL };
    for (size_t i = 0; bad[i]; i++) {
        bool v = true;
        assert_false(fg_parse_bool(bad[i], &v));
        assert_true(v);   /* untouched */
    }
    bool v = true;
    assert_false(fg_parse_bool(NULL, &v));
}

/* A command's standard output replaces the buffer; its exit status comes back, -1 when a signal ended it. */
static void run_command_output_and_status(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    fg_buf_put_str(&b, "old");
    assert_int_equal(fg_buf_run_command(&b, "printf 'one\\ntwo'; echo err >&2; exit 3"), 3);
    assert_string_equal(fg_buf_str(&b), "one\ntwo");
    assert_int_equal(fg_buf_run_command(&b, "true"), 0);
    assert_string_equal(fg_buf_str(&b), "");
    assert_int_equal(fg_buf_run_command(&b, "kill -9 $$"), -1);
    fg_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(append_grows_and_terminates),
        cmocka_unit_test(printf_longer_than_stack_scratch),
        cmocka_unit_test(limit_rejects_and_keeps_content),
        cmocka_unit_test(consume_and_take),
        cmocka_unit_test(string_helpers),
        cmocka_unit_test(read_file_reports_missing_and_oversized),
        cmocka_unit_test(parse_bool_as_go_does),
        cmocka_unit_test(run_command_output_and_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
