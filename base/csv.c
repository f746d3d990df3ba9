/* csv — the traces' plain CSV, split in place; see csv.h. */
#include "base/csv.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* Splits line (modified in place) into cells; returns the count, or -1 past FG_CSV_MAX_CELLS. */
static int split(char *line, char **cells)
{
    int n = 0;
    for (char *s = line;; s++) {
        if (n == FG_CSV_MAX_CELLS)
            return -1;
        cells[n++] = s;
        s = strchr(s, ',');
        if (!s)
            return n;
        *s = '\0';
    }
}

/* The next non-empty line without its end, NULL at the end of the text. */
static char *next_line(struct fg_csv *r)
{
    while (r->next && *r->next) {
        char *line = r->next, *nl = strchr(line, '\n');
        r->next = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        r->line++;
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r')
            line[n - 1] = '\0';
        if (*line)
            return line;
    }
    return NULL;
}

int fg_csv_column(const struct fg_csv *r, const char *name)
{
    for (int i = 0; i < r->ncols; i++)
        if (!strcmp(r->hdr[i], name))
            return i;
    return -1;
}

enum fg_err fg_csv_open(struct fg_csv *r, const char *text, const char *origin, const char *const *need, int *cols,
                        char *errmsg)
{
    memset(r, 0, sizeof *r);
    r->text = r->next = fg_strdup(text);
    r->origin = origin;
    char *hdr = next_line(r);
    if (!hdr)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s: empty file, expected a header", origin);
    r->ncols = split(hdr, r->hdr);
    if (r->ncols < 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: header has more than %d columns", origin, r->line,
                         FG_CSV_MAX_CELLS);
    for (int i = 0; need[i]; i++) {
        cols[i] = fg_csv_column(r, need[i]);
        if (cols[i] < 0)
            return fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: header lacks column '%s'", origin, r->line, need[i]);
    }
    return FG_OK;
}

enum fg_err fg_csv_next(struct fg_csv *r, char **cells, bool *row, char *errmsg)
{
    char *line = next_line(r);
    *row = line != NULL;
    if (!line)
        return FG_OK;
    int n = split(line, cells);
    if (n != r->ncols)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: %d cells, header has %d", r->origin, r->line, n, r->ncols);
    return FG_OK;
}

void fg_csv_close(struct fg_csv *r)
{
    free(r->text);
    r->text = r->next = NULL;
}
