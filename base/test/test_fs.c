/* Tests of fs: mkdir -p of a deep path and over a file; rm -rf of a tree holding files, links and
 * a name a shell would split, leaving what a link points to alone; a file replaced whole, with no
 * temporary file left, and a failed replacement leaving the old file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fs.h"

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
}

static void test_mkdir_p(void **state)
{
    (void)state;
    char root[] = "/tmp/fg-fs-XXXXXX", path[256];
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof path, "%s/a/b c/d", root);
    assert_int_equal(fg_mkdir_p(path), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(fg_mkdir_p(path), 0);   /* already there */
    snprintf(path, sizeof path, "%s/file", root);
    touch(path);
    snprintf(path, sizeof path, "%s/file/below", root);
    assert_int_equal(fg_mkdir_p(path), -1);
    assert_int_equal(errno, ENOTDIR);
    assert_int_equal(fg_mkdir_p(""), -1);
    assert_int_equal(fg_remove_tree(root), 0);
}

static void test_remove_tree(void **state)
{
    (void)state;
    char root[] = "/tmp/fg-fs-XXXXXX", outside[] = "/tmp/fg-fs-out-XXXXXX", path[512], target[512];
    assert_non_null(mkdtemp(root));
    assert_non_null(mkdtemp(outside));
    snprintf(path, sizeof path, "%s/it's a dir/deeper", root);
    assert_int_equal(fg_mkdir_p(path), 0);
    snprintf(path, sizeof path, "%s/it's a dir/deeper/f; rm -rf ~", root);
    touch(path);
    snprintf(target, sizeof target, "%s/kept", outside);
    touch(target);
    snprintf(path, sizeof path, "%s/link", root);
    assert_int_equal(symlink(outside, path), 0);
    assert_int_equal(fg_remove_tree(root), 0);
    assert_int_equal(access(root, F_OK), -1);
    assert_int_equal(access(target, F_OK), 0);   /* the link went, not what it points to */
    assert_int_equal(fg_remove_tree(root), 0);   /* gone already */
    assert_int_equal(fg_remove_tree(outside), 0);
}

static void read_back(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

static void test_write_atomic(void **state)
{
    (void)state;
    char root[] = "/tmp/fg-fs-XXXXXX", path[256], text[64];
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof path, "%s/state.json", root);
    assert_int_equal(fg_write_file_atomic(path, "{\"a\":1}", 7), 0);
    read_back(path, text, sizeof text);
    assert_string_equal(text, "{\"a\":1}");
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(fg_write_file_atomic(path, "{}", 2), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_true(before.st_ino != after.st_ino);   /* a new file renamed in: an open reader keeps the old one */
    read_back(path, text, sizeof text);
    assert_string_equal(text, "{}");
    snprintf(path, sizeof path, "%s/missing/state.json", root);
    errno = 0;
    assert_int_equal(fg_write_file_atomic(path, "x", 1), -1);
    assert_int_equal(errno, ENOENT);
    snprintf(path, sizeof path, "%s", root);   /* a directory cannot be replaced by a file */
    assert_int_equal(fg_write_file_atomic(path, "x", 1), -1);
    assert_int_equal(rmdir(root), -1);   /* still holds state.json, and only that: */
    snprintf(path, sizeof path, "%s/state.json", root);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(root), 0);    /* no temporary file was left behind */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_remove_tree),
        cmocka_unit_test(test_write_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
