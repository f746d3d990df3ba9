/*
 * json — the few json-c helpers every module wants.
 *
 * Parsing is bounded: a size limit and a nesting limit, trailing garbage rejected, and a message that
 * says where the input broke. Lookups walk a NULL-terminated list of keys, so keys that contain dots
 * ("fracgpu.io/policy") need no escaping; they borrow, never allocate, and return NULL/false when any
 * step is missing or of the wrong type. A json-c object is never shared between threads: hand
 * another thread serialized text or a deep copy.
 */
#ifndef FG_BASE_JSON_H
#define FG_BASE_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define FG_JSON_MAX_DEPTH 64

/* Parses exactly one JSON value from data[0..len). FG_E_TOO_BIG when len > max_bytes (0 = no limit),
 * FG_E_PARSE with the reason and byte offset in errmsg otherwise. *out is owned by the caller. */
enum fg_err fg_json_parse(const char *data, size_t len, size_t max_bytes, json_object **out,
                          char *errmsg) FG_MUST_USE;

/* The same, with a tokener kept between documents: for streams that parse many (watch events). */
struct fg_json_parser {
    json_tokener *tok;   /* created on first use */
};
#define FG_JSON_PARSER_INIT { NULL }
enum fg_err fg_json_parser_parse(struct fg_json_parser *p, const char *data, size_t len, size_t max_bytes,
                                 json_object **out, char *errmsg) FG_MUST_USE;
void fg_json_parser_cleanup(struct fg_json_parser *p);

/* Cuts the member at `path` (object keys from the top, NULL-terminated, e.g. {"object", "metadata",
 * "managedFields", NULL}) out of the JSON text in text[0..len), in place, before it is parsed: a
 * member nobody reads costs nothing to skip here and a great deal to build as json-c objects.
 * Strings are scanned exactly (escapes, keys inside values), so only a real member at that path is
 * removed. Returns the new length; text that is not shaped as expected is left as it was (the parser
 * then reports what is wrong with it). Keys are compared byte for byte, without unescaping. */
size_t fg_json_cut_member(char *text, size_t len, const char *const *path);

/* Borrowed lookup: fg_json_get(pod, "metadata", "annotations", "fracgpu.io/policy", NULL). */
json_object *fg_json_get(json_object *o, ...) __attribute__((sentinel));
/* String at the path, or NULL when absent or not a string. */
const char *fg_json_get_str(json_object *o, ...) __attribute__((sentinel));
/* Integer at the path: true and *out set when present and an integer (or integral double). */
bool fg_json_get_int64(json_object *o, int64_t *out, ...) __attribute__((sentinel));

/* Compact text of o, borrowed from o until o changes or is freed. */
const char *fg_json_text(json_object *o, size_t *len);

/* Child object `key` of o, created (as {}) when absent or not an object. Borrowed. */
json_object *fg_json_ensure_obj(json_object *o, const char *key);
/* The length of array a; 0 when a is NULL or not an array (json-c asserts on those). */
size_t fg_json_array_len(json_object *a);
/* Element i of array a (borrowed); NULL when a is NULL, not an array or shorter (json-c asserts). */
json_object *fg_json_at(json_object *a, size_t i);
/* How many members object o has; 0 when o is NULL or not an object. */
size_t fg_json_object_len(json_object *o);
/* Sets o[key] to a new string (or removes the key when value is NULL). */
void fg_json_set_str(json_object *o, const char *key, const char *value);

/* Escapes `key` as one JSON Pointer (RFC 6901) token into out: "~" → "~0", "/" → "~1". False when it
 * does not fit. */
bool fg_json_pointer_token(const char *key, char *out, size_t size);
/* A new JSON Patch (RFC 6902) array whose first operation tests obj's metadata.resourceVersion, so the
 * operations appended after it apply only to the object as it was read: a write from a cache that
 * lags behind fails instead. */
json_object *fg_json_patch_tested(json_object *obj);

/* Shrinks every object table in tree o to fit its members (json-c gives each object 16 slots, 640
 * bytes, so a 1.3 KB pod parses into about 20 KB), for a tree that is kept and never grows again:
 * json-c's lh_table_resize, the load kept under json-c's 0.66 so that a lookup still finds a free
 * slot. With `empty` (an empty object), every other empty object in the tree is replaced by it. */
void fg_json_shrink(json_object *o, json_object *empty);

#endif
