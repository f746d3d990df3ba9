/*
 * mem — allocation that never returns NULL.
 *
 * fracgpu treats exhausted memory as fatal, as redis does: every allocation goes through these
 * wrappers, which abort with a log line when malloc fails. Callers therefore never test for NULL
 * and never leak on an error path that only existed for OOM. Bad *input* is a different matter:
 * it is reported through enum fg_err, never by aborting.
 */
#ifndef FG_BASE_MEM_H
#define FG_BASE_MEM_H

#include <stddef.h>

void *fg_malloc(size_t n) __attribute__((malloc, returns_nonnull));
void *fg_calloc(size_t nmemb, size_t size) __attribute__((malloc, returns_nonnull));
void *fg_realloc(void *p, size_t n) __attribute__((returns_nonnull));
char *fg_strdup(const char *s) __attribute__((returns_nonnull));
/* Copies at most n bytes of s and NUL-terminates. */
char *fg_strndup(const char *s, size_t n) __attribute__((returns_nonnull));
/* printf into a new string. */
char *fg_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2), returns_nonnull));

/* Frees *p and sets it to NULL. */
#define FG_FREE(p) do { free(p); (p) = NULL; } while (0)

#endif
