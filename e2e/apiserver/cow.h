/*
 * cow — copy-on-write edits of json-c trees that share their subtrees.
 *
 * Stored objects are immutable, and the object a write builds shares members with the request body
 * and with the stored object it replaces, so nothing below a root the writer made itself may be
 * changed in place. An fg__cow_node names a container by its path from such a root; reading goes
 * through node->obj, which may be shared (or NULL where the member is absent). fg__cow_own makes
 * every container on the path private, from the root down: each shared one is replaced in its (by
 * then private) parent by a shallow copy, and absent ones are created as empty objects; a path
 * through a scalar (a malformed object) cannot be owned, and edits below it are dropped. An edit
 * therefore copies only the spine above what it changes, and nothing when nothing changes; the
 * containers an editor made private are remembered in its fg__cow, so each is copied once. An
 * editor lives for one operation; what it owns is not known to anyone afterwards.
 */
#ifndef FG_E2E_APISERVER_COW_H
#define FG_E2E_APISERVER_COW_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fg__cow {
    json_object **owned; /* the containers this editor made (or was given) */
    size_t n, cap;
};

struct fg__cow_node {
    struct fg__cow_node *up; /* NULL: the root, owned from fg__cow_init on */
    const char *key;         /* the member of up, or NULL for the element idx of an array */
    size_t idx;
    json_object *obj;        /* the container as it is now, or NULL when absent */
};

/* Starts an editor of root, which the caller owns (a private root object). */
void fg__cow_init(struct fg__cow *c, struct fg__cow_node *root_node, json_object *root);
void fg__cow_cleanup(struct fg__cow *c);
/* Does the editor own o (so that it may change it in place)? */
bool fg__cow_owns(const struct fg__cow *c, json_object *o);
/* The node of up's member key / of up's array element i (read: ->obj, maybe shared or NULL). */
struct fg__cow_node fg__cow_child(struct fg__cow_node *up, const char *key);
struct fg__cow_node fg__cow_elem(struct fg__cow_node *up, size_t i);
/* The node's container made private along its whole path (created empty when absent), also in
 * n->obj; NULL when a scalar stands on the path. */
json_object *fg__cow_own(struct fg__cow *c, struct fg__cow_node *n);
/* Sets n's member key to value (taken), owning n first; false (value dropped) when n cannot be an
 * object. */
bool fg__cow_set(struct fg__cow *c, struct fg__cow_node *n, const char *key, json_object *value);

/* When a default applies, in the terms of kube's Go types: a pointer field is defaulted when nil
 * (absent or null here), a plain field also when it holds its zero value (0, "" or false). */
enum fg__cow_when { FG__COW_IF_NIL, FG__COW_IF_ZERO };
/* Is n's member key unset in that sense? (Also when n itself is absent.) */
bool fg__cow_unset(const struct fg__cow_node *n, const char *key, enum fg__cow_when when);
/* fg__cow_set of a new string, integer or boolean where the member is unset; whether it was set. */
bool fg__cow_default_str(struct fg__cow *c, struct fg__cow_node *n, const char *key, enum fg__cow_when when,
                         const char *value);
bool fg__cow_default_int(struct fg__cow *c, struct fg__cow_node *n, const char *key, enum fg__cow_when when,
                         int64_t value);
bool fg__cow_default_bool(struct fg__cow *c, struct fg__cow_node *n, const char *key, bool value);
/* The number of elements when n is an array, else 0. */
size_t fg__cow_len(const struct fg__cow_node *n);

#endif
