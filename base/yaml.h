/*
 * yaml — YAML documents read into json-c trees, for configuration files people write by hand (the
 * simulated cluster's node groups, test fixtures) where JSON would be unkind.
 *
 * One document per input, not empty or null. Scalars are typed as YAML 1.2's core schema types
 * them: plain `null`, `~` or nothing is null, `true`/`false` (any of the three capitalisations) a
 * boolean, decimal, 0x and 0o integers (digits only after the prefix) and decimal floats (with .inf
 * and .nan) numbers — a float keeps the text it was written with, so 0.1 reads as 0.1 wherever it
 * is read exactly; everything else, and every quoted or block scalar, a string, as is a plain
 * scalar tagged `!!str`. Mapping keys must be scalars and become strings, each once in its mapping. An alias shares the value of the anchor defined before it (an anchor
 * used inside its own node names nothing yet, so there are no cycles); nesting is bounded by
 * FG_JSON_MAX_DEPTH. Errors say the line and column.
 */
#ifndef FG_BASE_YAML_H
#define FG_BASE_YAML_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"

/* Parses text[0..len) (exactly one document) into *out, owned by the caller. FG_E_PARSE with the
 * position and reason in errmsg for malformed YAML, a key defined twice in one mapping, an empty
 * input, a document that is empty or null, or more than one document. */
enum fg_err fg_yaml_parse(const char *text, size_t len, json_object **out, char *errmsg) FG_MUST_USE;
/* The same for a file; FG_E_IO when it cannot be read. Messages name the path. */
enum fg_err fg_yaml_load_file(const char *path, json_object **out, char *errmsg) FG_MUST_USE;

#endif
