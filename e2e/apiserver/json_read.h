/*
 * json_read — strict JSON (RFC 8259) read into json-c trees, for request bodies and webhook replies.
 *
 * It makes the same tree json-c's strict tokener makes (integers as int64, or uint64 past it, other
 * numbers as doubles that keep their text, strings with their escapes decoded to UTF-8, a repeated
 * key's last value kept where the key first appeared), but builds each object with its hash table
 * already sized to its members and each array at its length, and makes every empty {} of a
 * document one shared object: json-c's tokener gives every object 16 slots (640 bytes, each {} of
 * managedFields too) and grows arrays as it goes, which made a 3.7 KB pod cost 128 KB. Sharing is
 * safe because nothing changes a parsed document in place: stored objects are immutable and edits
 * copy what they change (cow.h). Nesting deeper than FG_JSON_MAX_DEPTH, a
 * control byte in a string, trailing commas, comments, single quotes and anything after the value
 * are refused with the byte offset.
 */
#ifndef FG_E2E_APISERVER_JSON_READ_H
#define FG_E2E_APISERVER_JSON_READ_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"

/* The value in data[0..len) (surrounding whitespace allowed): FG_OK with *out (the caller puts it),
 * FG_E_TOO_BIG when len exceeds max_bytes (0: no limit), FG_E_PARSE with the reason in errmsg
 * ("invalid JSON at byte N: ...", "truncated JSON: ...", "invalid JSON: trailing data at byte N"). */
enum fg_err fg__json_read(const char *data, size_t len, size_t max_bytes, json_object **out,
                          char *errmsg) FG_MUST_USE;

#endif
