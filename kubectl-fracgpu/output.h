/*
 * output — how `kubectl fracgpu` prints, as kubectl does: a table whose columns are padded to their
 * widest cell and three spaces apart, headers in capitals; or one object as `-o json` (two-space
 * indented) or `-o yaml` (libyaml's emitter, block style; strings that would read back as another
 * type — numbers, booleans, null — are quoted).
 */
#ifndef FG_KUBECTL_FRACGPU_OUTPUT_H
#define FG_KUBECTL_FRACGPU_OUTPUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct fgk_table {
    size_t cols;
    char **cells;               /* row-major, headers first; owned */
    size_t n, cap;              /* cells */
};

/* A table of cols columns with these headers (copied). */
void fgk_table_init(struct fgk_table *t, size_t cols, const char *const *headers);
/* Appends one cell (copied; NULL prints as "<none>"); rows fill left to right. */
void fgk_table_cell(struct fgk_table *t, const char *text);
void fgk_table_cellf(struct fgk_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fgk_table_print(const struct fgk_table *t, FILE *out);
void fgk_table_cleanup(struct fgk_table *t);

/* Prints o as format ("json" or "yaml"); false for another format. */
bool fgk_print_object(json_object *o, const char *format, FILE *out);

#endif
