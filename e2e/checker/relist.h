/*
 * relist — a lister-watcher that says when a list begins and when the reflector has taken all of it
 * in, wrapped around another one (the kube loop's, in the checker).
 *
 * A reflector hands a relist to its handlers piece by piece: every listed object as an add or update
 * while the pages stream in, and only at the end, once the store's replace protocol knows what the
 * list no longer holds, the deletes. In between, the handlers' picture mixes the new state with
 * objects already gone — a tenant deleted while the watch was down still counts beside the one that
 * took its place. The checker must not judge that picture, so it asks this wrapper to frame each
 * list: `begin` before it starts, `end` after the reflector's own completion callback has returned
 * (its deletes delivered), with ok false for a list that failed (the reflector lists again later).
 * Watches, timers and cancels pass straight through.
 *
 * Ownership: takes the inner lister-watcher; fg_listwatch_free frees both. Hooks run on the
 * lister-watcher's thread.
 */
#ifndef FG_CHECKER_RELIST_H
#define FG_CHECKER_RELIST_H

#include <stdbool.h>

#include "operator/cache/listwatch.h"

struct fg_checker_relist_hooks {
    void (*begin)(void *ud);
    void (*end)(void *ud, bool ok);
    void *ud;
};

struct fg_listwatch *fg_checker_relist_new(struct fg_listwatch *inner, const struct fg_checker_relist_hooks *hooks);

#endif
