/*
 * base64 — standard base64 (RFC 4648, with padding) through OpenSSL's block coder.
 *
 * Kubernetes carries bytes as base64 in JSON: Secret data, caBundle, kubeconfig *-data fields, an
 * AdmissionReview's patch. The decoder tolerates the whitespace a YAML writer folds into long values
 * and requires the padding the API always writes; its output is NUL-terminated, so PEM text can be
 * used as a C string.
 */
#ifndef FG_BASE_BASE64_H
#define FG_BASE_BASE64_H

#include <stddef.h>

/* The encoding of data[0..len) as a new string. */
char *fg_base64_encode(const void *data, size_t len);
/* The bytes `text` encodes, as a new NUL-terminated buffer; *len (if not NULL) gets their count. NULL
 * when text is not base64 (a stray character, a length that is not a multiple of four, misplaced
 * padding). */
unsigned char *fg_base64_decode(const char *text, size_t *len);

#endif
