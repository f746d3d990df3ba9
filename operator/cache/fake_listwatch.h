/*
 * fake_listwatch — an in-memory API server behind the lister-watcher interface, for tests and
 * benchmarks.
 *
 * It keeps a collection of objects and an event history with resourceVersions it assigns itself,
 * serves lists from the collection and watches from the history, and can misbehave on demand: refuse
 * the next lists or watches with any error (429 with Retry-After, 500, 410), expire the history so a
 * watch from an old resourceVersion is refused with 410, send an ERROR event with code 410 in the
 * middle of a stream, drop a stream, send bookmarks. Nothing happens behind the test's back: calls
 * the reflector starts stay pending until fg_fake_listwatch_run, which also fires the timers whose
 * deadline (on base/clock.h's clock, usually faked) has passed. Everything is single-threaded.
 * Objects handed to callbacks (except through fg_fake_listwatch_deliver) are fresh copies the
 * receiver may modify.
 */
#ifndef FG_CACHE_FAKE_LISTWATCH_H
#define FG_CACHE_FAKE_LISTWATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/cache/listwatch.h"

struct fg_fake_listwatch;

struct fg_fake_listwatch_stats {
    unsigned lists;            /* list calls started */
    unsigned watches;          /* watch calls started */
    char last_watch_rv[24];    /* resourceVersion the last watch asked for */
    unsigned last_timeout_s;   /* timeoutSeconds the last watch asked for */
    bool watching;             /* a watch stream is open */
};

struct fg_fake_listwatch *fg_fake_listwatch_new(const char *kind);
/* The interface view; fg_listwatch_free on it frees the fake. */
struct fg_listwatch *fg_fake_listwatch_base(struct fg_fake_listwatch *f);
const struct fg_fake_listwatch_stats *fg_fake_listwatch_stats(const struct fg_fake_listwatch *f);
/* The server's current resourceVersion. */
uint64_t fg_fake_listwatch_rv(const struct fg_fake_listwatch *f);

/* A server-side write: ADDED/MODIFIED store a copy of obj (keyed by namespace/name) with the next
 * resourceVersion, DELETED removes it; the event is recorded and sent to an open watch. Returns the
 * resourceVersion assigned, 0 when obj has no name or type is not one of those three. */
uint64_t fg_fake_listwatch_apply(struct fg_fake_listwatch *f, enum fg_watch_type type, json_object *obj);
/* Same from JSON text; 0 on a parse error too. */
uint64_t fg_fake_listwatch_apply_json(struct fg_fake_listwatch *f, enum fg_watch_type type, const char *json);
/* Forgets the history: watches from any resourceVersion before now are refused with 410. */
void fg_fake_listwatch_compact(struct fg_fake_listwatch *f);

/* The next list / watch start fails with err (queued, in order; at most 16 each). */
void fg_fake_listwatch_fail_list(struct fg_fake_listwatch *f, enum fg_err err, unsigned retry_after_s);
void fg_fake_listwatch_fail_watch(struct fg_fake_listwatch *f, enum fg_err err, unsigned retry_after_s);

/* On the open watch (false when none): an ERROR event carrying Status code 410 / Expired; the end of
 * the stream with err (FG_OK: a clean close at the server's timeout); a BOOKMARK at a new
 * resourceVersion (as if other kinds had changed); or a raw event, which returns what the receiver's
 * callback returned. The raw event is not recorded; obj is handed over as is, for the call, and the
 * receiver may modify it (as with a decoded stream, which is what it is for). */
bool fg_fake_listwatch_send_expired(struct fg_fake_listwatch *f);
bool fg_fake_listwatch_drop(struct fg_fake_listwatch *f, enum fg_err err);
bool fg_fake_listwatch_bookmark(struct fg_fake_listwatch *f);
bool fg_fake_listwatch_deliver(struct fg_fake_listwatch *f, enum fg_watch_type type, json_object *obj);

/* Completes pending list / watch starts and fires due timers until none is left (bounded); returns
 * how many steps ran. */
unsigned fg_fake_listwatch_run(struct fg_fake_listwatch *f);
/* Deadline of the earliest armed timer, UINT64_MAX when none. */
uint64_t fg_fake_listwatch_next_timer_ns(const struct fg_fake_listwatch *f);

#endif
