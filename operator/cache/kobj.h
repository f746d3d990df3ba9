/*
 * kobj — a cached Kubernetes object: immutable, reference-counted, cheap to share between threads.
 *
 * The informer turns every object it receives (after its transform) into a `struct fg_kobj`: one
 * allocation holding an atomic reference count, the parsed resourceVersion, the store key
 * ("namespace/name", or "name" for cluster-scoped objects), namespace, uid and the object's compact
 * JSON text. Nothing in it ever changes after fg_kobj_new, so readers on any thread may use it without
 * a lock once they hold a reference. json-c objects are never shared: a reader that wants the object's
 * fields calls fg_kobj_parse for a private json-c tree of its own. Per-object overhead beyond the
 * text is a few dozen bytes.
 *
 * An informer may also decode each object once, as it is cached, into a typed value of its
 * consumers' choosing — a flat struct (no pointers it owns; strings in fixed arrays) kept in the same
 * allocation as the text — so that readers use C fields instead of parsing the text again. It is
 * filled before the object is shared and is as immutable as the rest. One allocation per object
 * matters: a value allocated on its own, between the large transient trees of a list, costs several
 * times its size in heap fragmentation (measured in docs/manager.md).
 *
 * Ownership: fg_kobj_new returns one reference; fg_kobj_ref adds one, fg_kobj_unref drops one and
 * frees on the last. Accessors borrow from the object and stay valid while the caller holds a
 * reference.
 */
#ifndef FG_CACHE_KOBJ_H
#define FG_CACHE_KOBJ_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct fg_kobj;

/* Builds a cached object from `obj` (not modified, not kept), with value_size zeroed bytes for a typed
 * value (0: none). Needs metadata.name (string) and metadata.resourceVersion (a decimal string);
 * namespace and uid are optional. FG_E_INVAL with a message naming the missing or bad field
 * otherwise. */
enum fg_err fg_kobj_new(json_object *obj, size_t value_size, struct fg_kobj **out, char *errmsg) FG_MUST_USE;

/* The typed value (value_size bytes, aligned for any type), or NULL without one. Borrowed while the
 * caller holds a reference to o. */
const void *fg_kobj_value(const struct fg_kobj *o);
/* The same, writable: only before o is shared with another thread or store (the reflector fills it). */
void *fg_kobj_value_fill(struct fg_kobj *o);

struct fg_kobj *fg_kobj_ref(struct fg_kobj *o);
/* NULL is ignored. */
void fg_kobj_unref(struct fg_kobj *o);

const char *fg_kobj_key(const struct fg_kobj *o);        /* "ns/name" or "name" */
const char *fg_kobj_namespace(const struct fg_kobj *o);  /* "" when cluster-scoped */
const char *fg_kobj_name(const struct fg_kobj *o);
const char *fg_kobj_uid(const struct fg_kobj *o);        /* "" when absent */
uint64_t fg_kobj_rv(const struct fg_kobj *o);
/* The compact JSON text, NUL-terminated; *len (if not NULL) gets its length. */
const char *fg_kobj_text(const struct fg_kobj *o, size_t *len);
/* Bytes this object occupies (header and text), for accounting. */
size_t fg_kobj_size(const struct fg_kobj *o);

/* A private json-c copy of the object, owned by the caller (json_object_put). */
enum fg_err fg_kobj_parse(const struct fg_kobj *o, json_object **out, char *errmsg) FG_MUST_USE;

/* Parses a resourceVersion string ("12345"): false when empty, not decimal or out of range. */
bool fg_kobj_parse_rv(const char *s, uint64_t *out);

/* The key an object with this namespace (NULL or "" = cluster-scoped) and name is stored under;
 * the caller frees. */
char *fg_kobj_make_key(const char *ns, const char *name);

/* A list of references, as returned by store lookups. */
struct fg_kobj_list {
    struct fg_kobj **items;
    size_t n;
};

/* Drops every reference and frees the array; the list is left empty. */
void fg_kobj_list_cleanup(struct fg_kobj_list *l);

#endif
