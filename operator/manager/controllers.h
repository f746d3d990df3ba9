/*
 * controllers — a reconciler wired to what it watches (controller-runtime's builder:
 * For(primary).Watches(secondary, map function)).
 *
 * A reconciler's own setup function declares, beside its code, its primary informer — every add,
 * update and delete of a primary object enqueues that object's key — and any number of secondary
 * informers, each with a map function that turns one of their objects into the keys of the primary
 * objects it affects (an update maps the old and the new object, so a key that stops being
 * affected is reconciled too). A seed function may add keys of objects that must exist although
 * nothing was seen of them (the built-in GPUPolicies).
 *
 * Controllers run only while this replica leads (manager.h): at each start of leadership, once the
 * caches have synced, a fresh operator/controller is started, every primary key and every seed key
 * is enqueued (level-based reconcilers then converge on whatever happened while standing by), and
 * events are enqueued from then on; on loss of leadership the controller is cancelled (queued keys
 * dropped, running reconciles finished) and events are dropped until the next term. Before each
 * reconcile the wrapper checks that this replica still leads, so work queued in the last moments
 * of a term is not done by a former leader (it is requeued, not forgotten, in case leadership was
 * only uncertain for a moment). A reconcile that started while leading finishes its writes; keep
 * the client's request timeout well under lease duration − renew deadline where that matters.
 *
 * Metrics (base/metrics.h, label controller=<name>): fracgpu_reconcile_total{result=success|error|
 * requeue}, fracgpu_reconcile_duration_seconds, and per scrape fracgpu_workqueue_depth,
 * fracgpu_workqueue_waiting and fracgpu_controller_busy_workers.
 */
#ifndef FG_MANAGER_CONTROLLERS_H
#define FG_MANAGER_CONTROLLERS_H

#include "base/err.h"
#include "operator/cache/informer.h"
#include "operator/controller/controller.h"

struct fg_manager;
struct fg_manager_controller;

/* Where a map or seed function puts keys; fg_keys_add copies the key. */
struct fg_keys;
void fg_keys_add(struct fg_keys *out, const char *key);

/* Maps obj (borrowed for the call) to the keys of the primary objects to reconcile. Runs on the
 * loop thread: it reads obj and the caches, never the API. */
typedef void fg_map_fn(void *ud, struct fg_kobj *obj, struct fg_keys *out);
/* Keys to reconcile at each start besides those of the primary objects cached. */
typedef void fg_seed_fn(void *ud, struct fg_keys *out);
/* Whether an update of an object (from old to obj, both borrowed) concerns the controller; false drops
 * the event (controller-runtime's predicates: a pod's status changing need not wake its garbage
 * collector). Adds, deletes and resyncs (old == obj) always pass. Loop thread. */
typedef bool fg_update_pred(void *ud, struct fg_kobj *old, struct fg_kobj *obj);

struct fg_controller_spec {
    const char *name;               /* "gpupolicy": log component (with "-controller"), metrics label */
    const char *kind;               /* "GPUPolicy", for log lines */
    unsigned workers;               /* 1..FG_CONTROLLER_MAX_WORKERS */
    fg_reconcile_fn *reconcile;
    void *ud;
    struct fg_informer *primary;    /* from the manager's informer factory; NULL: keys come only from
                                       watches and seeds (a controller of objects of many kinds, whose
                                       map functions make the keys; at each start every object of every
                                       watched informer is mapped) */
    fg_seed_fn *seed;               /* NULL: none */
    void *seed_ud;
    fg_update_pred *primary_pred;   /* NULL: every update of a primary object */
    void *pred_ud;
};

/* Registers a controller with m (before fg_manager_start). FG_E_INVAL (errmsg) for a spec without
 * name or reconcile, or workers out of range; FG_E_BUSY once started. The controller belongs to the
 * manager. */
enum fg_err fg_manager_controller(struct fg_manager *m, const struct fg_controller_spec *spec,
                                  struct fg_manager_controller **out, char *errmsg) FG_MUST_USE;
/* Queues key for reconcile now, from any thread: how a source of events other than an informer (a
 * process that exited, a timer of the component's own) reaches the controller (controller-runtime's
 * source.Channel). Dropped while this replica does not lead. */
void fg_manager_controller_enqueue(struct fg_manager_controller *c, const char *key);
/* Reconciles the keys map gives for every event of secondary (updates only when pred, if not NULL,
 * passes them; pred gets ud too). FG_E_BUSY once started. */
enum fg_err fg_manager_watches(struct fg_manager_controller *c, struct fg_informer *secondary, fg_map_fn *map,
                               void *ud, fg_update_pred *pred, char *errmsg) FG_MUST_USE;

#endif
