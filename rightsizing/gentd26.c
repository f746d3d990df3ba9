/*
 * gentd26 — the GenTD26 trace's two CSV files into one series per pod; see gentd26.h.
 *
 * Every row of both files is read into one array (pod hash, kind, time, value), sorted by hash,
 * kind and time, and cut into series; times become seconds after the earliest sample of either
 * file. A row is refused unless its hash is 32 hex digits, its time a number of seconds (within
 * 1e15 of 0, so that no time or period of a series overflows) and its value a finite number from 0
 * (at most 100 for a utilization). Reading files (plain or compressed) is gentd26_file.c's.
 */
#include "rightsizing/gentd26.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/csv.h"
#include "base/mem.h"

#define STEP_S 60                       /* the trace samples about once a minute */
#define TIME_MAX_S 1e15                 /* |timestamp_anon| bound: far past any trace, and series times
                                           (differences of two) and periods stay far inside int64 */

enum kind { UTIL, MEM };

struct row {
    char id[FG_GENTD26_ID_LEN + 1];
    unsigned char kind;
    double t, v;
};

struct rows {
    struct row *v;
    size_t n, cap;
};

static bool number(const char *s, double *out)
{
    if (!*s)
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* A timestamp_anon cell: a number of seconds within TIME_MAX_S of 0. */
static bool time_cell(const char *s, double *out)
{
    return number(s, out) && fabs(*out) <= TIME_MAX_S;
}

static bool hash_id(const char *s)
{
    if (strlen(s) != FG_GENTD26_ID_LEN)
        return false;
    for (const char *p = s; *p; p++)
        if (!isxdigit((unsigned char)*p))
            return false;
    return true;
}

static void push(struct rows *rows, const struct row *row)
{
    if (rows->n == rows->cap) {
        rows->cap = rows->cap ? 2 * rows->cap : 4096;
        rows->v = fg_realloc(rows->v, rows->cap * sizeof *rows->v);
    }
    rows->v[rows->n++] = *row;
}

/* Checks one value cell of kind into *v; FG_E_PARSE naming column and line otherwise. */
static enum fg_err value_cell(const struct fg_csv *r, const char *column, const char *text, enum kind kind, double *v,
                              char *errmsg)
{
    if (!number(text, v) || *v < 0 || (kind == UTIL && *v > 100))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: %s '%s' is not a number from 0%s", r->origin, r->line, column,
                         text, kind == UTIL ? " to 100" : "");
    return FG_OK;
}

/* Appends every row of one file to rows. */
static enum fg_err read_file(struct rows *rows, const char *text, const char *origin, enum kind kind, char *errmsg)
{
    static const char *const need[] = { "value", "timestamp_anon", "container_ip", NULL };
    int col[3];
    struct fg_csv r;
    enum fg_err err = fg_csv_open(&r, text, origin, need, col, errmsg);
    char *cells[FG_CSV_MAX_CELLS];
    bool more = !err;
    while (!err && !(err = fg_csv_next(&r, cells, &more, errmsg)) && more) {
        struct row row = { .kind = (unsigned char)kind };
        const char *value = cells[col[0]], *time = cells[col[1]], *id = cells[col[2]];
        if ((err = value_cell(&r, "value", value, kind, &row.v, errmsg)))
            break;
        if (!time_cell(time, &row.t))
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: timestamp_anon '%s' is not a number of seconds (at most "
                            "1e15 either side of 0)", origin, r.line, time);
        else if (!hash_id(id))
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: container_ip '%s' is not %d hex digits", origin, r.line, id,
                            FG_GENTD26_ID_LEN);
        if (err)
            break;
        memcpy(row.id, id, FG_GENTD26_ID_LEN + 1);
        push(rows, &row);
    }
    fg_csv_close(&r);
    return err;
}

/* Appends every row of a combined file to rows: one row per value present. */
static enum fg_err read_combined(struct rows *rows, const char *text, const char *origin, size_t *nutil, char *errmsg)
{
    static const char *const need[] = { "timestamp_anon", "container_ip", "duty_cycle", "memory_bytes", NULL };
    int col[4];
    struct fg_csv r;
    enum fg_err err = fg_csv_open(&r, text, origin, need, col, errmsg);
    char *cells[FG_CSV_MAX_CELLS];
    bool more = !err;
    while (!err && !(err = fg_csv_next(&r, cells, &more, errmsg)) && more) {
        const char *time = cells[col[0]], *id = cells[col[1]], *util = cells[col[2]], *mem = cells[col[3]];
        struct row row = { .kind = UTIL };
        if (!time_cell(time, &row.t))
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: timestamp_anon '%s' is not a number of seconds (at most "
                            "1e15 either side of 0)", origin, r.line, time);
        else if (!hash_id(id))
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: container_ip '%s' is not %d hex digits", origin, r.line, id,
                            FG_GENTD26_ID_LEN);
        else if (!*util && !*mem)
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: neither duty_cycle nor memory_bytes is given", origin, r.line);
        if (err)
            break;
        memcpy(row.id, id, FG_GENTD26_ID_LEN + 1);
        if (*util) {
            if ((err = value_cell(&r, "duty_cycle", util, UTIL, &row.v, errmsg)))
                break;
            push(rows, &row);
            ++*nutil;
        }
        if (*mem) {
            row.kind = MEM;
            if ((err = value_cell(&r, "memory_bytes", mem, MEM, &row.v, errmsg)))
                break;
            push(rows, &row);
        }
    }
    fg_csv_close(&r);
    return err;
}

static int row_order(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c)
        return c;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* Cuts the sorted rows into series. */
static void build(struct fg_gentd26 *t, const struct rows *rows)
{
    double t0 = 0;
    for (size_t i = 0; i < rows->n; i++)
        if (i == 0 || rows->v[i].t < t0)
            t0 = rows->v[i].t;
    for (size_t i = 0; i < rows->n;) {
        size_t j = i;
        while (j < rows->n && !strcmp(rows->v[j].id, rows->v[i].id))
            j++;
        t->series = fg_realloc(t->series, (t->n + 1) * sizeof *t->series);
        struct fg_gentd26_series *s = &t->series[t->n++];
        memset(s, 0, sizeof *s);
        memcpy(s->id, rows->v[i].id, sizeof s->id);
        for (size_t k = i; k < j; k++)
            *(rows->v[k].kind == UTIL ? &s->nutil : &s->nmem) += 1;
        s->util = fg_calloc(s->nutil ? s->nutil : 1, sizeof *s->util);
        s->mem = fg_calloc(s->nmem ? s->nmem : 1, sizeof *s->mem);
        size_t nu = 0, nm = 0;
        int64_t first = INT64_MAX, last = 0;
        for (size_t k = i; k < j; k++) {
            struct fg_gentd26_point p = { (int64_t)llround(rows->v[k].t - t0), rows->v[k].v };
            if (rows->v[k].kind == UTIL)
                s->util[nu++] = p;
            else
                s->mem[nm++] = p;
            first = p.t < first ? p.t : first;
            last = p.t > last ? p.t : last;
        }
        s->start = first;
        s->period = last - first + STEP_S;
        i = j;
    }
}

enum fg_err fg_gentd26_parse(struct fg_gentd26 *t, const char *util_csv, const char *util_origin, const char *mem_csv,
                             const char *mem_origin, char *errmsg)
{
    memset(t, 0, sizeof *t);
    struct rows rows = { 0 };
    enum fg_err err = read_file(&rows, util_csv, util_origin, UTIL, errmsg);
    t->util_rows = rows.n;
    if (!err)
        err = read_file(&rows, mem_csv, mem_origin, MEM, errmsg);
    t->mem_rows = rows.n - t->util_rows;
    if (!err) {
        if (rows.n) /* files without rows leave rows.v NULL, which qsort may not be given */
            qsort(rows.v, rows.n, sizeof *rows.v, row_order);
        build(t, &rows);
    } else {
        t->util_rows = t->mem_rows = 0;
    }
    free(rows.v);
    return err;
}

enum fg_err fg_gentd26_parse_combined(struct fg_gentd26 *t, const char *csv, const char *origin, char *errmsg)
{
    memset(t, 0, sizeof *t);
    struct rows rows = { 0 };
    size_t nutil = 0;
    enum fg_err err = read_combined(&rows, csv, origin, &nutil, errmsg);
    if (!err) {
        t->util_rows = nutil;
        t->mem_rows = rows.n - nutil;
        if (rows.n)
            qsort(rows.v, rows.n, sizeof *rows.v, row_order);
        build(t, &rows);
    }
    free(rows.v);
    return err;
}

void fg_gentd26_cleanup(struct fg_gentd26 *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->series[i].util);
        free(t->series[i].mem);
    }
    free(t->series);
    memset(t, 0, sizeof *t);
}

const struct fg_gentd26_series *fg_gentd26_find(const struct fg_gentd26 *t, const char *name, char *errmsg)
{
    size_t len = strlen(name);
    if (len && len < FG_GENTD26_PREFIX_MIN && strspn(name, "0123456789") == len) {
        unsigned long i = strtoul(name, NULL, 10);
        if (i < t->n)
            return &t->series[i];
        fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "series %s: the trace has %zu series (0 to %zu)", name, t->n,
                  t->n ? t->n - 1 : 0);
        return NULL;
    }
    if (len < FG_GENTD26_PREFIX_MIN || len > FG_GENTD26_ID_LEN) {
        fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "series \"%s\": a position, or a pod's hash (or %d or more of its "
                  "first digits), is expected", name, FG_GENTD26_PREFIX_MIN);
        return NULL;
    }
    const struct fg_gentd26_series *found = NULL;
    for (size_t i = 0; i < t->n; i++) {
        if (strncasecmp(t->series[i].id, name, len))
            continue;
        if (found) {
            fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "series %s: more than one pod's hash starts so", name);
            return NULL;
        }
        found = &t->series[i];
    }
    if (!found)
        fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "series %s: no pod of the trace has that hash", name);
    return found;
}

/* The value of the last point at or before t; 0 before the first. */
static double step_at(const struct fg_gentd26_point *p, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;   /* the first point after t is at hi */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].t <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return hi ? p[hi - 1].v : 0;
}

void fg_gentd26_at(const struct fg_gentd26_series *s, double offset, double *util, double *mem)
{
    double into = fmod(offset > 0 ? offset : 0, (double)s->period);
    int64_t t = s->start + (int64_t)into;
    *util = step_at(s->util, s->nutil, t);
    *mem = step_at(s->mem, s->nmem, t);
}
