/* Tests for the work-queue module's string map: membership, overwrite, deletion with backward
 * shift under heavy collisions, key stability and key validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "operator/workqueue/keymap.h"

static void set_get_overwrite(void **state)
{
    (void)state;
    struct fg__keymap m;
    fg__keymap_init(&m);
    uint64_t v = 0;
    assert_false(fg__keymap_get(&m, "ns/a", &v));
    assert_false(fg__keymap_remove(&m, "ns/a"));
    assert_true(fg__keymap_set(&m, "ns/a", 7, NULL));
    assert_false(fg__keymap_set(&m, "ns/a", 9, NULL));
    assert_int_equal(m.len, 1);
    assert_true(fg__keymap_get(&m, "ns/a", &v));
    assert_int_equal(v, 9);
    assert_true(fg__keymap_get(&m, "ns/a", NULL));
    assert_false(fg__keymap_get(&m, "ns/b", NULL));
    assert_true(fg__keymap_remove(&m, "ns/a"));
    assert_false(fg__keymap_get(&m, "ns/a", NULL));
    assert_int_equal(m.len, 0);
    fg__keymap_cleanup(&m);
}

/* Thousands of keys force many resizes and long probe runs; removing every other key exercises
 * the backward shift, after which every survivor must still be found with its value. */
static void many_keys_survive_growth_and_removal(void **state)
{
    (void)state;
    enum { N = 5000 };
    struct fg__keymap m;
    fg__keymap_init(&m);
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "default/pod-%d", i);
        assert_true(fg__keymap_set(&m, key, (uint64_t)i * 3, NULL));
    }
    assert_int_equal(m.len, N);
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "default/pod-%d", i);
        assert_true(fg__keymap_remove(&m, key));
    }
    assert_int_equal(m.len, N / 2);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "default/pod-%d", i);
        uint64_t v = 0;
        if (i % 2) {
            assert_true(fg__keymap_get(&m, key, &v));
            assert_int_equal(v, (uint64_t)i * 3);
        } else {
            assert_false(fg__keymap_get(&m, key, &v));
        }
    }
    /* Re-insert into the holes: still consistent. */
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "default/pod-%d", i);
        assert_true(fg__keymap_set(&m, key, 1, NULL));
    }
    assert_int_equal(m.len, N);
    fg__keymap_cleanup(&m);
}

static void stored_key_is_stable_until_removed(void **state)
{
    (void)state;
    struct fg__keymap m;
    fg__keymap_init(&m);
    const char *stored = NULL;
    char key[32] = "kube-system/first";
    assert_true(fg__keymap_set(&m, key, 0, &stored));
    key[0] = 'X';   /* the map keeps its own copy */
    for (int i = 0; i < 1000; i++) {
        char other[32];
        snprintf(other, sizeof other, "k/%d", i);
        (void)fg__keymap_set(&m, other, 0, NULL);
    }
    assert_string_equal(stored, "kube-system/first");
    const char *again = NULL;
    assert_false(fg__keymap_set(&m, "kube-system/first", 5, &again));
    assert_ptr_equal(again, stored);
    fg__keymap_cleanup(&m);
}

static void key_validation(void **state)
{
    (void)state;
    char long_key[FG__KEY_MAX + 2];
    memset(long_key, 'a', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    assert_false(fg__key_valid(NULL));
    assert_false(fg__key_valid(""));
    assert_false(fg__key_valid(long_key));
    long_key[FG__KEY_MAX] = '\0';
    assert_true(fg__key_valid(long_key));
    assert_true(fg__key_valid("ns/name"));
    assert_true(fg__key_valid("cluster-scoped"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_get_overwrite),
        cmocka_unit_test(many_keys_survive_growth_and_removal),
        cmocka_unit_test(stored_key_is_stable_until_removed),
        cmocka_unit_test(key_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
