/*
 * internal — small helpers shared by the files of operator/kube; nothing outside includes it.
 */
#ifndef FG_KUBE_INTERNAL_H
#define FG_KUBE_INTERNAL_H

#include "base/err.h"

/* Largest certificate, key, token or namespace file read. */
#define FG__KUBE_FILE_MAX (1u << 20)

/* Reads a whole small file into *out (caller frees); `what` names it in errors ("certificate-authority"). */
enum fg_err fg__kube_read_small_file(const char *path, const char *what, char **out, char *errmsg) FG_MUST_USE;

/* A copy of s, or NULL for NULL. */
char *fg__kube_dup_opt(const char *s);

#endif
