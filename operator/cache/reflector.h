/*
 * reflector — keeps a store equal to a collection on the API server (client-go's Reflector).
 *
 * It lists the collection (items stream in; the store is replaced with the replace protocol, so
 * objects that vanished while we were not watching are deleted), then watches from the list's
 * resourceVersion with bookmarks and a randomized timeoutSeconds. Each event and each bookmark moves
 * the last seen resourceVersion; when a stream ends cleanly it re-watches from there at once. A 410
 * (the watch refused as too old, or an ERROR event with code 410 / reason Expired or Gone) means the
 * history we need is gone: it relists. Other failures retry after an exponential backoff with jitter,
 * capped, reset after a healthy period, and never shorter than the server's Retry-After; a list
 * answered 404 (a CRD not installed yet) is said once, with the command that installs fracgpu's, and
 * retried quietly until the resource is served. A watch
 * still open a minute past its timeoutSeconds sits on a dead connection: it is abandoned and renewed.
 *
 * Every object passes the transform, becomes a struct fg_kobj (with its typed value filled by
 * `decode`, when there is one) and goes into the store; the handler
 * hears what changed. What handlers see never goes back in time: an event older than the stored
 * object is dropped, a relist reports only objects whose resourceVersion changed (and deletes for
 * those that vanished). Everything runs on the lister-watcher's thread, handlers included.
 *
 * Ownership: the reflector borrows its lister-watcher, store and handler; they outlive it.
 */
#ifndef FG_CACHE_REFLECTOR_H
#define FG_CACHE_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"
#include "operator/cache/kobj.h"
#include "operator/cache/listwatch.h"
#include "operator/cache/store.h"
#include "operator/cache/transform.h"

/* What changed (client-go's ResourceEventHandler). Objects are borrowed for the call (fg_kobj_ref to
 * keep one) and must not be modified; on_delete gets the object's last known state. Any may be NULL. */
struct fg_resource_handler {
    void (*on_add)(void *ud, struct fg_kobj *obj);
    void (*on_update)(void *ud, struct fg_kobj *old, struct fg_kobj *obj);
    void (*on_delete)(void *ud, struct fg_kobj *obj);
};

struct fg_reflector_opts {
    fg_transform_fn *transform;      /* NULL: store objects as received */
    void *transform_ud;
    /* NULL, or what fills each cached object's typed value (kobj.h), value_size zeroed bytes, from
     * the transformed object. */
    void (*decode)(void *ud, json_object *obj, void *value);
    void *decode_ud;
    size_t value_size;
    uint64_t backoff_initial_ns;     /* first retry delay */
    uint64_t backoff_max_ns;         /* cap */
    uint64_t backoff_reset_ns;       /* a failure this long after the previous one starts over */
    double backoff_jitter;           /* each delay grows by up to this fraction, at random */
    unsigned watch_timeout_min_s;    /* timeoutSeconds is drawn from [min, max] per watch */
    unsigned watch_timeout_max_s;
    uint64_t min_healthy_watch_ns;   /* a clean close sooner than this with no events counts as failure */
    uint64_t seed;                   /* jitter PRNG seed; 0 = from the clock */
};

#define FG_REFLECTOR_OPTS_DEFAULT                                                                  \
    { .backoff_initial_ns = 800 * FG_NS_PER_MS, .backoff_max_ns = 30 * FG_NS_PER_S,                \
      .backoff_reset_ns = 120 * FG_NS_PER_S, .backoff_jitter = 1.0, .watch_timeout_min_s = 300,    \
      .watch_timeout_max_s = 600, .min_healthy_watch_ns = FG_NS_PER_S }

struct fg_reflector_stats {
    uint64_t events;            /* watch events and list items received */
    uint64_t lists;             /* lists started */
    uint64_t dropped_stale;     /* events older than the stored object */
    uint64_t bad_objects;       /* rejected by the transform or without name / resourceVersion */
    uint64_t failures;          /* failed lists and watches */
    uint64_t last_backoff_ns;   /* the most recent retry delay */
};

struct fg_reflector;

/* opts NULL = defaults. */
struct fg_reflector *fg_reflector_new(struct fg_listwatch *lw, struct fg_store *store,
                                      const struct fg_reflector_opts *opts,
                                      const struct fg_resource_handler *handler, void *handler_ud);
/* Stops first. NULL is ignored. */
void fg_reflector_free(struct fg_reflector *r);

/* Sets the typed decode of opts (decode, ud, value_size) on a reflector not yet started. */
void fg_reflector_set_decode(struct fg_reflector *r, void (*decode)(void *ud, json_object *obj, void *value), void *ud,
                             size_t value_size);
/* Starts the first list. Loop thread. */
void fg_reflector_start(struct fg_reflector *r);
/* Cancels the running call and the retry timer; no callback runs afterwards. Loop thread. */
void fg_reflector_stop(struct fg_reflector *r);

/* True once a list has completed into the store; any thread. */
bool fg_reflector_has_synced(const struct fg_reflector *r);
/* The last resourceVersion seen (list, event or bookmark); 0 before the first list. */
uint64_t fg_reflector_last_rv(const struct fg_reflector *r);
const struct fg_reflector_stats *fg_reflector_stats(const struct fg_reflector *r);

#endif
