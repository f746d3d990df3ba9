/*
 * text — immutable, reference-counted byte strings.
 *
 * An object is serialized once when it is stored and a watch event once when it is committed; the
 * resulting fg__text is then shared by every reply that carries it: GET and LIST replies copy from
 * it, watch streams hand it to libevent by reference (evbuffer_add_reference), and the last user's
 * unref frees it. Only the loop thread touches these counts. The JSON is written by this module's
 * own writer of json-c trees: the text json-c writes with JSON_C_TO_STRING_PLAIN |
 * JSON_C_TO_STRING_NOSLASHESCAPE, escapes and all, at about a third of the instructions, straight
 * into the text it becomes, and without json-c's habit of leaving a print buffer the size of the
 * text on every object it serializes.
 */
#ifndef FG_E2E_APISERVER_TEXT_H
#define FG_E2E_APISERVER_TEXT_H

#include <event2/buffer.h>
#include <json-c/json.h>
#include <stddef.h>

#include "base/buf.h"

struct fg__text {
    unsigned refs;
    size_t len;
    char data[]; /* NUL-terminated */
};

/* The compact JSON of o, with one reference. */
struct fg__text *fg__text_from_json(json_object *o);
/* The same, calling visit (when not NULL) on every JSON object of o, o itself included, before
 * writing it: one walk for what the store does to an object it keeps and for its text. */
struct fg__text *fg__text_from_json_visiting(json_object *o, void (*visit)(json_object *object));
/* Appends the compact JSON of o to b. */
void fg__json_write(struct fg_buf *b, json_object *o);
/* Appends s (len bytes) as a JSON string, escaped as fg__json_write escapes strings. */
void fg__json_write_string(struct fg_buf *b, const char *s, size_t len);
struct fg__text *fg__text_ref(struct fg__text *t);
void fg__text_unref(struct fg__text *t);
/* Appends t to buf by reference (zero copy); the buffer holds a reference until it drains. */
void fg__text_add_to_evbuffer(struct fg__text *t, struct evbuffer *buf);

#endif
