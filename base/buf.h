/*
 * buf — a growable byte buffer and the string helpers built on it.
 *
 * A `struct fg_buf` owns `data`, which is always NUL-terminated (so text can be used as a C string)
 * while `len` counts the bytes without that terminator; binary content is allowed. Growth is
 * geometric. `fg_buf_take` hands the bytes to the caller and leaves the buffer empty. Appends never
 * fail (allocation failure aborts, see mem.h); a buffer may carry a size cap, and appends past it
 * return FG_E_TOO_BIG and leave the content unchanged, which is how readers bound hostile input.
 */
#ifndef FG_BASE_BUF_H
#define FG_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct fg_buf {
    char *data;     /* NUL-terminated; NULL until the first append */
    size_t len;     /* bytes used, not counting the terminator */
    size_t cap;     /* bytes allocated */
    size_t limit;   /* 0 = unlimited; otherwise appends beyond `limit` bytes fail */
};

#define FG_BUF_INIT { NULL, 0, 0, 0 }

void fg_buf_init(struct fg_buf *b, size_t limit);
void fg_buf_cleanup(struct fg_buf *b);
/* Empties the buffer, keeping its memory. */
void fg_buf_reset(struct fg_buf *b);
/* Returns the content ("" when empty); the pointer is valid until the next append or cleanup. */
const char *fg_buf_str(const struct fg_buf *b);
/* Returns the content and leaves the buffer empty; the caller frees. Never NULL. */
char *fg_buf_take(struct fg_buf *b);

enum fg_err fg_buf_append(struct fg_buf *b, const void *data, size_t n) FG_MUST_USE;
enum fg_err fg_buf_puts(struct fg_buf *b, const char *s) FG_MUST_USE;
enum fg_err fg_buf_printf(struct fg_buf *b, const char *fmt, ...) FG_MUST_USE __attribute__((format(printf, 2, 3)));
/* The same for a buffer without a limit, where an append cannot fail (asserted). */
void fg_buf_put(struct fg_buf *b, const void *data, size_t n);
void fg_buf_put_str(struct fg_buf *b, const char *s);
/* Removes the first n bytes (n > len empties it). */
void fg_buf_consume(struct fg_buf *b, size_t n);

/* String helpers. */
bool fg_str_has_prefix(const char *s, const char *prefix);
bool fg_str_has_suffix(const char *s, const char *suffix);
/* Equal, treating NULL as equal only to NULL. */
bool fg_str_eq(const char *a, const char *b);
/* Go's strconv.ParseBool, which Kubernetes uses for boolean flags and query parameters: 1 t T TRUE
 * true True and 0 f F FALSE false False; false (and *out untouched) for anything else. */
bool fg_parse_bool(const char *s, bool *out);

/* Reads a whole file into b (appending). FG_E_IO with errno text in errmsg; FG_E_TOO_BIG past b->limit. */
enum fg_err fg_buf_read_file(struct fg_buf *b, const char *path, char *errmsg) FG_MUST_USE;

/* Runs cmd with /bin/sh, replacing b's content with what it writes to standard output (past b->limit:
 * cut). Returns its exit status; -1 when it could not run or a signal ended it. */
int fg_buf_run_command(struct fg_buf *b, const char *cmd);

#endif
