/*
 * text — immutable, reference-counted byte strings.
 *
 * An object is serialized once when it is stored and a watch event once when it is committed; the
 * resulting fg__text is then shared by every reply that carries it: GET and LIST replies copy from
 * it, watch streams hand it to libevent by reference (evbuffer_add_reference), and the last user's
 * unref frees it. Only the loop thread touches these counts. The JSON is json-c's
 * (json_object_to_json_string_length, plain, '/' not escaped). json-c writes into a print buffer
 * that it keeps on the object it was asked to write until that object is freed, which on a stored
 * object would double what it costs; so the object is written as the one element of a throwaway
 * array, which takes the buffer with it.
 */
#ifndef FG_E2E_APISERVER_TEXT_H
#define FG_E2E_APISERVER_TEXT_H

#include <event2/buffer.h>
#include <json-c/json.h>
#include <stddef.h>

struct fg__text {
    unsigned refs;
    size_t len;
    char data[]; /* NUL-terminated */
};

/* The compact JSON of o as json-c writes it, with one reference; o keeps no print buffer. */
struct fg__text *fg__text_from_json(json_object *o);
struct fg__text *fg__text_ref(struct fg__text *t);
void fg__text_unref(struct fg__text *t);
/* Appends t to buf by reference (zero copy); the buffer holds a reference until it drains. */
void fg__text_add_to_evbuffer(struct fg__text *t, struct evbuffer *buf);

#endif
