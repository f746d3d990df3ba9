/* base64: round trips of every length around a block, whitespace folded into the text, and what is
 * not base64 (stray characters, a bad length, misplaced padding) refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/base64.h"

static void round_trips(void **state)
{
    (void)state;
    unsigned char data[64];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 37 + 1);
    data[5] = 0; /* bytes, not text */
    for (size_t n = 0; n <= 10; n++) {
        char *text = fg_base64_encode(data, n);
        assert_int_equal(strlen(text), 4 * ((n + 2) / 3));
        size_t len = 99;
        unsigned char *back = fg_base64_decode(text, &len);
        assert_non_null(back);
        assert_int_equal(len, n);
        assert_memory_equal(back, data, n);
        assert_int_equal(back[n], 0);
        free(back);
        free(text);
    }
    char *text = fg_base64_encode("hello", 5);
    assert_string_equal(text, "aGVsbG8=");
    free(text);
}

static void whitespace_and_garbage(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = fg_base64_decode("aGVs\n bG8=\r\n", &len);
    assert_non_null(b);
    assert_string_equal((char *)b, "hello");
    free(b);
    const char *bad[] = { "aGVsbG8", "aGVs*G8=", "a=Vs", "aG=sbG8=", "====", "aGVsbG8==" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (fg_base64_decode(bad[i], &len))
            fail_msg("\"%s\" was accepted", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips),
        cmocka_unit_test(whitespace_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
