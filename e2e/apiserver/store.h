/*
 * store — the API server's objects, its resourceVersion counter and its watch history.
 *
 * Objects live in one bucket per registered type, each a vector of entries sorted by key ("ns/name"
 * for namespaced types, "name" otherwise), so lists come out in etcd's key order, a namespace is a
 * contiguous key range and a continue token is simply the last key returned. An entry owns an
 * immutable json_object and its serialized text; a write replaces the entry, never edits it, so a
 * reply or an event may keep references to the old ones. Every write takes the next value of one
 * global resourceVersion counter and appends an event to a bounded ring; `floor` is the newest
 * revision whose successors are not all in the ring any more (watches from RV < floor get 410).
 * After each commit the store calls on_event, which the server uses to fan the event out to
 * watchers. Single-threaded: only the loop thread touches the store.
 *
 * store_write.c, store_delete.c, store_bind.c, store_evict.c and store_resize.c add the kube-apiserver
 * semantics on top (defaults, validation, preconditions, generation, status subresource, finalizers,
 * graceful deletion, binding, eviction, resize), store_seed.c the objects it makes at start; creates and
 * updates pass through admission (admit.h: CRDs, custom resource schemas, webhooks); state.c saves
 * and loads the objects.
 */
#ifndef FG_E2E_APISERVER_STORE_H
#define FG_E2E_APISERVER_STORE_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "e2e/apiserver/registry.h"
#include "e2e/apiserver/text.h"

enum fg__ev_type { FG__EV_ADDED, FG__EV_MODIFIED, FG__EV_DELETED, FG__EV__COUNT };

struct fg__entry {
    char *key;
    json_object *obj;       /* immutable once stored */
    struct fg__text *text;  /* obj serialized */
};

struct fg__bucket {
    struct fg__entry **v;
    size_t n, cap;
};

/* A kept event. It holds texts only (shared with the store's entries), so a long history costs about
 * one serialized object per event; watchers replaying it with selectors parse the text again. */
struct fg__event {
    uint64_t rv;
    const struct fg__type *type;
    enum fg__ev_type kind;
    char *ns;                  /* NULL for cluster-scoped objects */
    struct fg__text *text;     /* the new state; the last state for DELETED */
    struct fg__text *old_text; /* the previous state of a MODIFIED object, else NULL */
};

/* Called once per commit with the event and, for live matching, the new and previous objects. */
typedef void fg__store_event_fn(void *ud, struct fg__event *ev, json_object *obj, json_object *old);

struct fg__store {
    struct fg__registry *reg; /* borrowed */
    uint64_t rv;
    struct fg__bucket *buckets;
    size_t nbuckets;
    struct fg__event *ring;
    size_t cap, head, count; /* head: index of the oldest event */
    uint64_t floor;
    fg__store_event_fn *on_event;
    void *on_event_ud;
    struct fg__admission *admission; /* the webhook calls of the write being run (admit.h), or NULL */
    bool dry_run;                     /* the write being run (dryRun=All) only says what it would store */
    json_object *empty;               /* the one {} of every stored object's empty objects, never changed */
};

void fg__store_init(struct fg__store *st, struct fg__registry *reg, size_t history);
void fg__store_cleanup(struct fg__store *st);

/* "ns/name" or "name"; the caller frees. */
char *fg__store_key(const struct fg__type *type, const char *ns, const char *name);
/* Borrowed bucket of a type (created on first use, so types added at run time work). */
struct fg__bucket *fg__store_bucket(struct fg__store *st, const struct fg__type *type);
/* First index whose key is >= key. */
size_t fg__store_lower_bound(const struct fg__bucket *b, const char *key);
/* Borrowed entry or NULL. */
const struct fg__entry *fg__store_get(struct fg__store *st, const struct fg__type *type, const char *ns,
                                      const char *name);

/* The text the store serialized obj to, when obj is the object it holds under obj's name (borrowed),
 * else NULL: what replies and webhook reviews send instead of serializing again. */
struct fg__text *fg__store_text_of(struct fg__store *st, const struct fg__type *type, json_object *obj);
/* Commits obj (taken) under its metadata: sets metadata.resourceVersion to the next revision,
 * inserts or replaces the entry and records an ADDED or MODIFIED event. Returns the entry. */
const struct fg__entry *fg__store_put(struct fg__store *st, const struct fg__type *type, json_object *obj);
/* Inserts a loaded object (taken) as it is, without an event or a new revision (state files). */
void fg__store_insert_loaded(struct fg__store *st, const struct fg__type *type, json_object *obj);
/* Removes an entry, recording a DELETED event whose object (`last`, taken, or when NULL a copy of the
 * stored one) carries the deletion's revision; returns that object (a new reference), or NULL when
 * there was no such entry. */
json_object *fg__store_remove(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                              json_object *last);

/* The i-th kept event, oldest first (i < st->count). */
struct fg__event *fg__store_history(struct fg__store *st, size_t i);
/* Forgets the whole history: watches from any RV below the current one then get 410. */
void fg__store_compact(struct fg__store *st);

/* store_write.c, store_delete.c, store_bind.c, store_evict.c: kube-apiserver write semantics. Each returns FG_OK
 * with *out the reply object (a new reference) or an FG_E_KUBE_* code with *out the Status to send.
 * Bodies are borrowed, but the stored object may share members with them: callers drop bodies
 * afterwards and never change them. */
enum fg__patch_kind { FG__PATCH_MERGE, FG__PATCH_JSON, FG__PATCH_STRATEGIC };

/* Which part of an object a write may change. For types with a status subresource the main endpoint
 * keeps the stored .status and the status endpoint changes nothing else; other types change whole.
 * FG__SCOPE_ALL (server-side writers such as binding) changes both. FG__SCOPE_RESIZE (pods/resize)
 * changes only the containers' resources and resizePolicy (store_resize.c). */
enum fg__write_scope { FG__SCOPE_MAIN, FG__SCOPE_STATUS, FG__SCOPE_ALL, FG__SCOPE_RESIZE };

enum fg_err fg__store_create(struct fg__store *st, const struct fg__type *type, const char *ns, json_object *body,
                             json_object **out) FG_MUST_USE;
enum fg_err fg__store_update(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                             enum fg__write_scope scope, json_object *body, json_object **out) FG_MUST_USE;
enum fg_err fg__store_patch(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                            enum fg__write_scope scope, enum fg__patch_kind kind, json_object *patch,
                            json_object **out) FG_MUST_USE;
/* options: a DeleteOptions body or NULL (preconditions.resourceVersion / uid, gracePeriodSeconds,
 * propagationPolicy are honoured). A pod bound to a node and still running is deleted gracefully
 * (deletionTimestamp = now + grace; it goes with a DELETE of grace 0); an object with finalizers,
 * some set by the propagation policy, only gets deletionTimestamp and goes once an update empties
 * its finalizers. Deleting a namespace deletes every object in it. */
enum fg_err fg__store_delete(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                             json_object *options, json_object **out) FG_MUST_USE;
/* POST pods/NAME/binding: sets spec.nodeName and the PodScheduled condition, copies the binding's
 * annotations; 409 when the pod is already bound. *out is a Success Status (code 201). */
enum fg_err fg__store_bind(struct fg__store *st, const struct fg__type *pods, const char *ns, const char *name,
                           json_object *binding, json_object **out) FG_MUST_USE;
/* POST pods/NAME/eviction: deletes the pod when its PodDisruptionBudget allows (429 otherwise, 500
 * when several budgets select it), honouring the eviction's deleteOptions. *out is a Success Status
 * (code 201) on success. */
enum fg_err fg__store_evict(struct fg__store *st, const struct fg__type *pods, const char *ns, const char *name,
                            json_object *eviction, json_object **out) FG_MUST_USE;
/* store_seed.c: creates what kube-apiserver makes at start when missing: the namespaces default,
 * kube-system, kube-public and kube-node-lease, and the PriorityClasses system-node-critical and
 * system-cluster-critical. */
void fg__store_seed(struct fg__store *st);

#endif
