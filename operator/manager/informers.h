/*
 * informers — the shared informer factory (client-go's SharedInformerFactory): one informer, and so
 * one cache and one watch, per (resource, namespace, label selector, field selector), however many
 * consumers read it.
 *
 * Consumers ask at setup time with a struct fg_informer_want, which also says which fields they read.
 * The factory keeps the union: when every consumer lists paths, each object is stripped of
 * managedFields and the last-applied annotation and pruned to the union of the paths and of what
 * identifies it (apiVersion, kind, name, namespace, uid, resourceVersion), in place, by one
 * transform compiled when the factory starts; when any consumer asks for the whole object
 * (fields NULL), objects are kept whole except managedFields, which nothing in fracgpu reads (and
 * which the watch decoder then cuts before parsing). An informer may also carry one typed decode
 * (kobj.h's values: a flat struct in each cached object's own allocation), run once per event for
 * every consumer: consumers that share an informer and want a typed value agree on one decode.
 *
 * Indexers are registered through the factory so that two consumers may ask for the same index: the
 * second registration of a name with the same function is a no-op, with another function an error.
 * Handlers go on the informer itself (fg_informer_add_handler), before start.
 *
 * Lifecycle: get/index/decode before fg_informer_factory_start (FG_E_BUSY afterwards); start and
 * stop run on the lister-watchers' (loop) thread; synced and the stores may be read from any thread.
 * The factory owns its informers; fg_informer_factory_free releases them (loop thread, or with the
 * loop stopped).
 */
#ifndef FG_MANAGER_INFORMERS_H
#define FG_MANAGER_INFORMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "operator/cache/informer.h"
#include "operator/kube/loop.h"
#include "operator/kube/resource.h"

struct fg_informer_want {
    const struct fg_kube_resource *resource;
    const char *ns;                 /* NULL: all namespaces, or a cluster-scoped resource */
    const char *label_selector;     /* NULL: every object */
    const char *field_selector;
    const char *const *fields;      /* NULL-terminated paths this consumer reads (transform.h's syntax);
                                       NULL: the whole object */
};

/* What makes the lister-watcher of an informer: the kube loop in production, a fake in tests. */
typedef struct fg_listwatch *fg_listwatch_new_fn(void *ud, const struct fg_kube_resource *res, const char *ns,
                                                 const char *label_selector, const char *field_selector,
                                                 bool cut_managed_fields);

struct fg_informer_factory;

/* Informers list and watch through loop; resync_ns as fg_informer_opts. */
struct fg_informer_factory *fg_informer_factory_new(struct fg_kube_loop *loop, uint64_t resync_ns);
/* The same with another source of lister-watchers (tests). */
struct fg_informer_factory *fg_informer_factory_new_with(fg_listwatch_new_fn *fn, void *ud, uint64_t resync_ns);
/* Stops and frees every informer. NULL is ignored. */
void fg_informer_factory_free(struct fg_informer_factory *f);

/* The informer for want's resource, namespace and selectors, made on first ask, with want's fields
 * added to what it keeps. Borrowed for the factory's life. FG_E_INVAL (errmsg) for a want without a
 * resource, FG_E_BUSY once started. */
enum fg_err fg_informer_factory_get(struct fg_informer_factory *f, const struct fg_informer_want *want,
                                    struct fg_informer **out, char *errmsg) FG_MUST_USE;
/* The informer of one object, res `name` in ns (NULL for a cluster-scoped resource), the whole object
 * kept: a field selector on metadata.name, which RBAC can restrict to that name (resourceNames).
 * Errors as fg_informer_factory_get. */
enum fg_err fg_informer_factory_get_named(struct fg_informer_factory *f, const struct fg_kube_resource *res,
                                          const char *ns, const char *name, struct fg_informer **out,
                                          char *errmsg) FG_MUST_USE;
/* Adds index `name` to inf's store; a repeat with the same fn and ud is a no-op. FG_E_INVAL for a
 * different function under that name or an informer not from f, FG_E_BUSY once started. */
enum fg_err fg_informer_factory_index(struct fg_informer_factory *f, struct fg_informer *inf, const char *name,
                                      fg_index_fn *fn, void *ud) FG_MUST_USE;
/* Sets inf's typed decode (informer.h's fg_informer_set_decode); a repeat with the same decode, ud
 * and size is a no-op. Errors as for index. */
enum fg_err fg_informer_factory_decode(struct fg_informer_factory *f, struct fg_informer *inf,
                                       void (*decode)(void *ud, json_object *obj, void *value), void *ud,
                                       size_t value_size) FG_MUST_USE;

/* Compiles each informer's field union and starts them all. Loop thread. */
enum fg_err fg_informer_factory_start(struct fg_informer_factory *f) FG_MUST_USE;
/* Stops every informer; no handler runs afterwards. Loop thread. */
void fg_informer_factory_stop(struct fg_informer_factory *f);

/* True once every informer has listed (true with none). Any thread. */
bool fg_informer_factory_synced(const struct fg_informer_factory *f);
/* Informers made so far. */
size_t fg_informer_factory_len(const struct fg_informer_factory *f);
/* The fracgpu_informer_* families (lists, watch restarts, events, cached objects, synced) per
 * informer: a metrics collector (base/metrics.h). Loop thread, where the reflectors count. */
void fg_informer_factory_collect(void *factory, struct fg_buf *out);

#endif
