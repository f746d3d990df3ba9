/*
 * text — immutable, reference-counted byte strings.
 *
 * An object is serialized once when it is stored and a watch event once when it is committed; the
 * resulting fg__text is then shared by every reply that carries it: GET and LIST replies copy from
 * it, watch streams hand it to libevent by reference (evbuffer_add_reference), and the last user's
 * unref frees it. Only the loop thread touches these counts.
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

/* A new text holding a copy of data[0..len), with one reference. */
struct fg__text *fg__text_new(const char *data, size_t len);
/* The compact JSON of o. */
struct fg__text *fg__text_from_json(json_object *o);
struct fg__text *fg__text_ref(struct fg__text *t);
void fg__text_unref(struct fg__text *t);
/* Appends t to buf by reference (zero copy); the buffer holds a reference until it drains. */
void fg__text_add_to_evbuffer(struct fg__text *t, struct evbuffer *buf);

#endif
