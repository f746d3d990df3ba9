/*
 * metadata — the few header values gRPC gives a format of its own.
 *
 * grpc-message travels percent-encoded: every byte outside printable ASCII (0x20-0x7e), and '%'
 * itself, becomes %XX, so UTF-8 text and control characters survive HPACK and proxies; a decoder
 * keeps a malformed escape as it is rather than failing the call. grpc-timeout is at most eight
 * digits and a unit (H, M, S, m, u, n). content-type is application/grpc, possibly followed by
 * "+proto" or parameters. Internal to nodeagent/grpc; returned strings are the caller's to free.
 */
#ifndef FG_GRPC_METADATA_INT_H
#define FG_GRPC_METADATA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest message text a call sends (longer ones are cut, at a UTF-8 character boundary). */
#define FG__GRPC_MESSAGE_MAX 1024
/* Room for a formatted grpc-timeout ("99999999m" and its NUL). */
#define FG__GRPC_TIMEOUT_MAX 12

/* Percent-encodes s, cut at FG__GRPC_MESSAGE_MAX bytes. Never NULL. */
char *fg__grpc_percent_encode(const char *s);
/* Decodes n bytes of a grpc-message value into a NUL-terminated string. Never NULL. */
char *fg__grpc_percent_decode(const uint8_t *v, size_t n);

/* Parses a grpc-timeout value into nanoseconds (saturating at about 292 years); false when it is
 * not 1-8 digits and a unit. */
bool fg__grpc_timeout_parse(const uint8_t *v, size_t n, uint64_t *ns);
/* Formats ms as a grpc-timeout value in the finest unit that fits eight digits. */
void fg__grpc_timeout_format(uint64_t ms, char out[FG__GRPC_TIMEOUT_MAX]);

/* Whether a content-type value names gRPC: "application/grpc", alone or followed by '+' or ';'. */
bool fg__grpc_content_type_ok(const uint8_t *v, size_t n);

/* Whether the header name (n bytes, not NUL-terminated) is `want`. */
bool fg__grpc_name_is(const uint8_t *name, size_t n, const char *want);

#endif
