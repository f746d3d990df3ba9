/*
 * informer — a reflector, its store and the handlers that want to hear about changes (client-go's
 * SharedIndexInformer, one per kind).
 *
 * The informer owns a lister-watcher and a store and runs a reflector between them. Handlers
 * (struct fg_resource_handler) are registered before start and hear every add, update and delete on
 * the lister-watcher's (loop) thread, in order; typical handlers only enqueue the object's key. Every
 * `resync_ns` the informer re-delivers each cached object as an update with old == new, so level-based
 * reconcilers revisit everything now and then even when nothing changed. Other threads read the store
 * (fg_informer_store) and wait for fg_informer_has_synced before trusting it. The store, its
 * indexers and the handlers all see objects as the transform left them.
 *
 * Ownership: the informer owns its lister-watcher, store and reflector; fg_informer_free releases
 * them on the loop thread. Objects handed out stay valid for as long as their holders keep a reference.
 */
#ifndef FG_CACHE_INFORMER_H
#define FG_CACHE_INFORMER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/cache/listwatch.h"
#include "operator/cache/reflector.h"
#include "operator/cache/store.h"

#define FG_INFORMER_MAX_HANDLERS 16

struct fg_informer_opts {
    struct fg_reflector_opts reflector;
    uint64_t resync_ns;   /* 0 = no periodic resync */
};

#define FG_INFORMER_OPTS_DEFAULT { .reflector = FG_REFLECTOR_OPTS_DEFAULT, .resync_ns = 0 }

struct fg_informer;

/* Takes ownership of lw. opts NULL = defaults. */
struct fg_informer *fg_informer_new(struct fg_listwatch *lw, const struct fg_informer_opts *opts);
/* Stops, then frees the lister-watcher and the store; objects readers hold stay valid. NULL ignored. */
void fg_informer_free(struct fg_informer *inf);

/* The cache; borrowed, valid until fg_informer_free. Add indexers before start. */
struct fg_store *fg_informer_store(struct fg_informer *inf);

/* h is copied. FG_E_BUSY once started, FG_E_TOO_BIG past FG_INFORMER_MAX_HANDLERS. */
enum fg_err fg_informer_add_handler(struct fg_informer *inf, const struct fg_resource_handler *h,
                                    void *ud) FG_MUST_USE;

/* Sets the typed decode of every cached object (reflector.h): decode fills value_size zeroed bytes.
 * FG_E_BUSY once started. */
enum fg_err fg_informer_set_decode(struct fg_informer *inf, void (*decode)(void *ud, json_object *obj, void *value),
                                   void *ud, size_t value_size) FG_MUST_USE;

/* Starts listing and the resync timer. Loop thread. FG_E_BUSY when already started. */
enum fg_err fg_informer_start(struct fg_informer *inf) FG_MUST_USE;
/* No handler runs after it returns. Loop thread. */
void fg_informer_stop(struct fg_informer *inf);

/* Any thread. */
bool fg_informer_has_synced(const struct fg_informer *inf);
const struct fg_reflector *fg_informer_reflector(const struct fg_informer *inf);

#endif
