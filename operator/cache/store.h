/*
 * store — the thread-safe cache an informer fills: cached objects by key, plus named indexes.
 *
 * Objects (struct fg_kobj, immutable) are kept under their key, "namespace/name" or "name" for
 * cluster-scoped kinds. One thread writes (the loop thread, through the informer); any thread reads
 * under a read lock and leaves with references, so an object a reader holds stays valid after the
 * store replaces or deletes it. Writes never let an object's resourceVersion go backwards: an upsert
 * older than the stored object is refused as stale, and a delete older than it is ignored.
 *
 * Indexers (client-go's Indexers) are named functions that map an object to a few index values,
 * e.g. spec.nodeName; fg_store_by_index returns every object with a given value. They are registered
 * before the first object arrives. Relists use the replace protocol: fg_store_replace_begin, an
 * upsert for every listed object (unchanged ones included, which marks them seen), then
 * fg_store_replace_finish, which removes every object the relist did not mention and hands them back
 * so the caller can announce the deletes.
 *
 * The hash tables are json-c's linkhash. Each entry copies its key once; the object itself is
 * shared by reference.
 */
#ifndef FG_CACHE_STORE_H
#define FG_CACHE_STORE_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/cache/kobj.h"

#define FG_STORE_MAX_INDEX_VALUES 16

/* Writes up to `max` index values of obj into values (strings borrowed from obj, or static), returns
 * how many. Runs on the writing thread, with the object's json-c tree. */
typedef size_t fg_index_fn(void *ud, json_object *obj, const char **values, size_t max);

/* Ready-made index functions: spec.nodeName (none when unset), metadata.namespace, and the uid of the
 * controller ownerReference (none without one: how a ReplicaSet finds its pods). */
size_t fg_index_by_node_name(void *ud, json_object *obj, const char **values, size_t max);
size_t fg_index_by_namespace(void *ud, json_object *obj, const char **values, size_t max);
size_t fg_index_by_controller_uid(void *ud, json_object *obj, const char **values, size_t max);

struct fg_store;

struct fg_store *fg_store_new(void);
/* Drops the store's references; objects readers still hold stay valid. NULL is ignored. */
void fg_store_free(struct fg_store *s);

/* FG_E_INVAL for a duplicate name, FG_E_BUSY once the store holds objects. */
enum fg_err fg_store_add_indexer(struct fg_store *s, const char *name, fg_index_fn *fn, void *ud) FG_MUST_USE;

enum fg_store_result {
    FG_STORE_ADDED,      /* new key */
    FG_STORE_UPDATED,    /* replaced an object with a lower resourceVersion; *old is set */
    FG_STORE_UNCHANGED,  /* same resourceVersion already stored; nothing changed */
    FG_STORE_STALE,      /* the stored object is newer; nothing changed */
};

/* Stores obj (taking a reference of its own; `json` is obj's tree, read by the indexers). *old gets
 * the replaced object (the caller's reference) for FG_STORE_UPDATED and NULL otherwise. Every result
 * marks the key as seen by a running replace. */
enum fg_store_result fg_store_upsert(struct fg_store *s, struct fg_kobj *obj, json_object *json,
                                     struct fg_kobj **old);

/* Removes key unless the stored object is newer than rv (rv 0: unconditionally). Returns the removed
 * object (the caller's reference), or NULL when nothing was removed. */
struct fg_kobj *fg_store_delete(struct fg_store *s, const char *key, uint64_t rv);

/* A private parsed copy of the object under key (the caller puts it), or NULL when absent. */
json_object *fg_store_get_json(struct fg_store *s, const char *key);
/* A reference to the object under key, or NULL. */
struct fg_kobj *fg_store_get(struct fg_store *s, const char *key);
/* References to every object (out is overwritten; fg_kobj_list_cleanup releases it). */
void fg_store_list(struct fg_store *s, struct fg_kobj_list *out);
size_t fg_store_len(struct fg_store *s);
/* References to every object whose index `index` has `value`; FG_E_NOT_FOUND_LOCAL for an unknown
 * index (out is then empty). */
enum fg_err fg_store_by_index(struct fg_store *s, const char *index, const char *value,
                              struct fg_kobj_list *out) FG_MUST_USE;

void fg_store_replace_begin(struct fg_store *s);
/* Removes every object not upserted since fg_store_replace_begin; *removed (overwritten) gets them. */
void fg_store_replace_finish(struct fg_store *s, struct fg_kobj_list *removed);

#endif
