/* Table cells computed without a server: ages as apimachinery's HumanDuration writes them, at each
 * boundary between its forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/apiserver/server.h"

static void expect_age(long long seconds, const char *want)
{
    json_object *cell = fg__human_duration(seconds);
    if (strcmp(json_object_get_string(cell), want))
        fail_msg("%lld s: got %s, want %s", seconds, json_object_get_string(cell), want);
    json_object_put(cell);
}

static void human_duration_boundaries(void **state)
{
    (void)state;
    const long long m = 60, h = 3600, d = 24 * h, y = 365 * d;
    expect_age(-2, "<invalid>");
    expect_age(-1, "0s");
    expect_age(0, "0s");
    expect_age(119, "119s");
    expect_age(120, "2m");
    expect_age(121, "2m1s");
    expect_age(10 * m - 1, "9m59s");
    expect_age(10 * m, "10m");
    expect_age(10 * m + 59, "10m");
    expect_age(3 * h - 1, "179m");
    expect_age(3 * h, "3h");
    expect_age(3 * h + m, "3h1m");
    expect_age(8 * h - 1, "7h59m");
    expect_age(8 * h, "8h");
    expect_age(48 * h - 1, "47h");
    expect_age(48 * h, "2d");
    expect_age(2 * d + h, "2d1h");
    expect_age(8 * d - 1, "7d23h");
    expect_age(8 * d, "8d");
    expect_age(2 * y - 1, "729d");
    expect_age(2 * y, "2y");
    expect_age(2 * y + d, "2y1d");
    expect_age(8 * y - 1, "7y364d");
    expect_age(8 * y, "8y");
    expect_age(8 * y + d, "8y");
    expect_age(20 * y + 100 * d, "20y");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(human_duration_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
