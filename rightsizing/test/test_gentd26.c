/* Tests of the GenTD26 reader: two small files in the real files' column orders joined into series,
 * the step-function replay (before the first sample, between samples, looping), finding a series
 * by hash, prefix and position, malformed rows named by file and line, and the real trace the
 * build decompresses (its published counts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rightsizing/gentd26.h"

#define A "aaaaaaaa000000000000000000000001"
#define B "aaaaaaab000000000000000000000002"
#define C "cccccccc000000000000000000000003"

/* Utilization: value, timestamp, id. Memory: timestamp, value, id — as in the real files. */
static const char util_csv[] =
    "value,timestamp_anon,container_ip\n"
    "10.0,1000.0," A "\n"
    "0.0,1000.0," B "\n"
    "30.5,1060.0," A "\n"
    "50.0,1180.0," A "\n";
static const char mem_csv[] =
    "timestamp_anon,value,container_ip\r\n"
    "1060.0,2147483648.0," A "\r\n"
    "1000.0,1073741824.0," A "\r\n"
    "940.0,5.0," C "\r\n";

static void test_series(void **state)
{
    (void)state;
    struct fg_gentd26 t;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_gentd26_parse(&t, util_csv, "util.csv", mem_csv, "mem.csv", msg) != FG_OK)
        fail_msg("%s", msg);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.util_rows, 4);
    assert_int_equal(t.mem_rows, 3);
    const struct fg_gentd26_series *a = &t.series[0];
    assert_string_equal(a->id, A);
    assert_string_equal(t.series[1].id, B);
    assert_string_equal(t.series[2].id, C);
    assert_int_equal(a->nutil, 3);
    assert_int_equal(a->nmem, 2);
    assert_int_equal(a->mem[0].t, 60);      /* sorted; seconds after the trace's first sample (C's, 940) */
    assert_int_equal(a->start, 60);
    assert_int_equal(a->period, 240 - 60 + 60);
    assert_int_equal(t.series[2].nutil, 0);  /* in the memory file only */

    double util, mem;
    fg_gentd26_at(a, 0, &util, &mem);
    assert_true(util == 10.0 && mem == 1073741824.0);
    fg_gentd26_at(a, 59.9, &util, &mem);
    assert_true(util == 10.0);
    fg_gentd26_at(a, 60, &util, &mem);
    assert_true(util == 30.5 && mem == 2147483648.0);
    fg_gentd26_at(a, 179, &util, &mem);      /* a gap: the last sample holds */
    assert_true(util == 30.5);
    fg_gentd26_at(a, 180, &util, &mem);
    assert_true(util == 50.0 && mem == 2147483648.0);
    fg_gentd26_at(a, 240 + 60, &util, &mem); /* one loop later */
    assert_true(util == 30.5);
    fg_gentd26_at(a, -5, &util, &mem);
    assert_true(util == 10.0);
    fg_gentd26_at(&t.series[2], 0, &util, &mem);
    assert_true(util == 0 && mem == 5.0);
    const struct fg_gentd26_series *b = &t.series[1];
    fg_gentd26_at(b, 30, &util, &mem);       /* no memory samples: none used */
    assert_true(util == 0 && mem == 0);

    assert_ptr_equal(fg_gentd26_find(&t, A, msg), a);
    assert_ptr_equal(fg_gentd26_find(&t, "AAAAAAAB", msg), b);   /* a prefix, any case */
    assert_ptr_equal(fg_gentd26_find(&t, "2", msg), &t.series[2]);
    assert_null(fg_gentd26_find(&t, "aaaaaa", msg));
    assert_non_null(strstr(msg, "more than one"));
    assert_null(fg_gentd26_find(&t, "3", msg));
    assert_non_null(strstr(msg, "the trace has 3 series (0 to 2)"));
    assert_null(fg_gentd26_find(&t, "abc", msg));
    assert_non_null(strstr(msg, "a position, or a pod's hash"));
    assert_null(fg_gentd26_find(&t, "dddddddd", msg));
    assert_non_null(strstr(msg, "no pod of the trace"));
    fg_gentd26_cleanup(&t);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct { const char *util, *mem, *says; } bad[] = {
        { "value,timestamp_anon\n1,2\n", mem_csv, "util.csv:1: header lacks column 'container_ip'" },
        { "value,timestamp_anon,container_ip\n101,1000," A "\n", mem_csv, "util.csv:2: value '101' is not a number from 0 to 100" },
        { "value,timestamp_anon,container_ip\n-1,1000," A "\n", mem_csv, "util.csv:2: value '-1'" },
        { "value,timestamp_anon,container_ip\nnan,1000," A "\n", mem_csv, "util.csv:2: value 'nan'" },
        { util_csv, "timestamp_anon,value,container_ip\nsoon,1," A "\n", "mem.csv:2: timestamp_anon 'soon'" },
        { util_csv, "timestamp_anon,value,container_ip\n1,1,10.0.0.1\n", "mem.csv:2: container_ip '10.0.0.1' is not 32 hex digits" },
        { util_csv, "timestamp_anon,value,container_ip\n1,1\n", "mem.csv:2: 2 cells, header has 3" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct fg_gentd26 t;
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_gentd26_parse(&t, bad[i].util, "util.csv", bad[i].mem, "mem.csv", msg), FG_E_PARSE);
        if (strcmp(msg, bad[i].says) && !strstr(msg, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, msg, bad[i].says);
        assert_int_equal(t.n, 0);
        fg_gentd26_cleanup(&t);
    }
    struct fg_gentd26 t;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_gentd26_load(&t, "/nonexistent", msg), FG_E_IO);
    assert_non_null(strstr(msg, "/nonexistent/" FG_GENTD26_UTIL_FILE));
    fg_gentd26_cleanup(&t);
}

/* The files the build decompresses into FG_DATA_DIR: the counts their PROVENANCE.md gives. */
static void test_real_trace(void **state)
{
    (void)state;
    const char *data = getenv("FG_DATA_DIR");
    if (!data)
        fail_msg("FG_DATA_DIR is not set: run this test through ctest, which points it at <build>/data");
    char dir[1024], msg[FG_ERRMSG_MAX] = "";
    snprintf(dir, sizeof dir, "%s/alibaba-genai-2026-gpu-util", data);
    struct fg_gentd26 t;
    if (fg_gentd26_load(&t, dir, msg) != FG_OK)
        fail_msg("%s (the fg_data build target decompresses data/ into %s)", msg, data);
    assert_int_equal(t.util_rows, 157417);
    assert_int_equal(t.mem_rows, 161413);
    assert_int_equal(t.n, 144);
    size_t with_util = 0, long_util = 0, with_mem = 0;
    int64_t longest = 0;
    for (size_t i = 0; i < t.n; i++) {
        with_util += t.series[i].nutil > 0;
        long_util += t.series[i].nutil > 100;
        with_mem += t.series[i].nmem > 0;
        longest = t.series[i].period > longest ? t.series[i].period : longest;
    }
    assert_int_equal(with_util, 143);
    assert_int_equal(with_mem, 144);
    assert_int_equal(long_util, 129);
    assert_true(longest > 22 * 3600 && longest < 23 * 3600);   /* 22.8 hours */
    fg_gentd26_cleanup(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_real_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
