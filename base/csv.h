/*
 * csv — the plain CSV of the public traces under data/: a header line naming the columns, then one
 * row per line, cells separated by ',' and never quoted (no name or number in those files holds a
 * comma). Lines may end in "\r\n"; empty lines are skipped.
 *
 * A reader works on its own copy of the text, splitting it in place, so a row's cells are plain C
 * strings that stay valid until the reader is closed. Readers take columns by their header name,
 * never by position, since files of one trace put them in different orders. Every error names the
 * origin and line ("PATH:LINE: what is wrong"), never a guess; r->origin and r->line let a caller's
 * own checks of a cell say it the same way.
 *
 * Ownership: fg_csv_open allocates the copy, fg_csv_close frees it (also after a failed open).
 */
#ifndef FG_BASE_CSV_H
#define FG_BASE_CSV_H

#include <stdbool.h>

#include "base/err.h"

#define FG_CSV_MAX_CELLS 16

struct fg_csv {
    char *text, *next;
    const char *origin;   /* borrowed: names the input in errors */
    int line;             /* of the row last read (1: the header) */
    int ncols;
    char *hdr[FG_CSV_MAX_CELLS];
};

/* Opens text (copied), reads its header and puts the position of each column of need
 * (NULL-terminated) into cols. FG_E_PARSE naming a missing column, an empty text or a header of
 * more than FG_CSV_MAX_CELLS columns. */
enum fg_err fg_csv_open(struct fg_csv *r, const char *text, const char *origin, const char *const *need, int *cols,
                        char *errmsg) FG_MUST_USE;
/* The next row: *row true and its r->ncols cells in cells (room for FG_CSV_MAX_CELLS); *row false
 * at the end. FG_E_PARSE for a row whose cell count is not the header's. */
enum fg_err fg_csv_next(struct fg_csv *r, char **cells, bool *row, char *errmsg) FG_MUST_USE;
/* The position of the column called name, or -1. */
int fg_csv_column(const struct fg_csv *r, const char *name);
void fg_csv_close(struct fg_csv *r);

#endif
