/* Tests of csv: columns taken by name in any order, "\r\n" and empty lines, and every malformed input
 * refused with its origin and line named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/csv.h"

static void test_rows(void **state)
{
    (void)state;
    static const char *const need[] = { "value", "id", NULL };
    struct fg_csv r;
    int col[2];
    char msg[FG_ERRMSG_MAX] = "", *cells[FG_CSV_MAX_CELLS];
    bool row;
    assert_int_equal(fg_csv_open(&r, "ts,value,id\r\n1,2.5,a\r\n\r\n3,,b\n", "t.csv", need, col, msg), FG_OK);
    assert_int_equal(col[0], 1);
    assert_int_equal(col[1], 2);
    assert_int_equal(fg_csv_column(&r, "ts"), 0);
    assert_int_equal(fg_csv_column(&r, "other"), -1);
    assert_int_equal(fg_csv_next(&r, cells, &row, msg), FG_OK);
    assert_true(row);
    assert_string_equal(cells[col[0]], "2.5");
    assert_string_equal(cells[col[1]], "a");
    assert_int_equal(r.line, 2);
    assert_int_equal(fg_csv_next(&r, cells, &row, msg), FG_OK);
    assert_true(row);
    assert_string_equal(cells[col[0]], "");   /* an empty cell is a cell */
    assert_int_equal(r.line, 4);               /* the empty line counted, not returned */
    assert_int_equal(fg_csv_next(&r, cells, &row, msg), FG_OK);
    assert_false(row);
    fg_csv_close(&r);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const need[] = { "value", NULL };
    struct fg_csv r;
    int col[1];
    char msg[FG_ERRMSG_MAX] = "", *cells[FG_CSV_MAX_CELLS];
    bool row;
    assert_int_equal(fg_csv_open(&r, "", "e.csv", need, col, msg), FG_E_PARSE);
    assert_string_equal(msg, "e.csv: empty file, expected a header");
    fg_csv_close(&r);
    assert_int_equal(fg_csv_open(&r, "ts,id\n1,a\n", "m.csv", need, col, msg), FG_E_PARSE);
    assert_string_equal(msg, "m.csv:1: header lacks column 'value'");
    fg_csv_close(&r);
    assert_int_equal(fg_csv_open(&r, "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\n", "w.csv", need, col, msg), FG_E_PARSE);
    assert_string_equal(msg, "w.csv:1: header has more than 16 columns");
    fg_csv_close(&r);
    assert_int_equal(fg_csv_open(&r, "value,id\n1,a\n2\n", "c.csv", need, col, msg), FG_OK);
    assert_int_equal(fg_csv_next(&r, cells, &row, msg), FG_OK);
    assert_int_equal(fg_csv_next(&r, cells, &row, msg), FG_E_PARSE);
    assert_string_equal(msg, "c.csv:3: 1 cells, header has 2");
    fg_csv_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
