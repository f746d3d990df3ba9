/*
 * controllers — reconcilers wired to their informers and to leadership; see controllers.h.
 *
 * A manager controller keeps the spec and, while this replica leads, the running operator/controller
 * (`running`, guarded by `mu`). Informer handlers run on the loop thread and enqueue under `mu`, so
 * an event either reaches a running controller or is dropped, never a freed one. The start of a term
 * is a leader-only runnable of the manager: it builds and starts a fresh controller, publishes it,
 * then enqueues every cached primary key (or, without a primary, the keys its watches map every
 * cached object to) and the seed keys; the end of a term unpublishes it, then
 * cancels and frees it outside the lock (a reconcile in flight may take a while).
 */
#include "operator/manager/controllers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/prom.h"
#include "operator/manager/manager_int.h"

struct watch {
    struct fg_manager_controller *c;
    struct fg_informer *informer;
    fg_map_fn *map;
    fg_update_pred *pred;
    void *ud;
};

struct fg_manager_controller {
    struct fg_manager *m;
    struct fg_controller_spec spec;     /* name and kind owned */
    char *component;                    /* "<name>-controller" */
    pthread_mutex_t mu;
    struct fg_controller *running;      /* while this replica leads */
    struct watch **watches;
    size_t n_watches;
    struct fg_counter *succeeded, *failed, *requeued, *skipped;
    struct fg_histogram *duration;
};

struct fg_keys {
    struct fg_manager_controller *c;
};

void fg_keys_add(struct fg_keys *out, const char *key)
{
    struct fg_manager_controller *c = out->c;
    pthread_mutex_lock(&c->mu);
    if (c->running && key) {
        enum fg_err err = fg_controller_enqueue(c->running, key);
        if (err && err != FG_E_SHUTDOWN)
            fg_log(FG_LOG_WARN, c->component, "cannot queue \"%s\": %s", key, fg_err_str(err));
    }
    pthread_mutex_unlock(&c->mu);
}

void fg_manager_controller_enqueue(struct fg_manager_controller *c, const char *key)
{
    fg_keys_add(&(struct fg_keys){ c }, key);
}

/* ---- informer handlers ---- */

static void primary_add(void *ud, struct fg_kobj *obj)
{
    fg_keys_add(&(struct fg_keys){ ud }, fg_kobj_key(obj));
}

static void primary_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    struct fg_manager_controller *c = ud;
    if (old == obj || !c->spec.primary_pred || c->spec.primary_pred(c->spec.pred_ud, old, obj))
        primary_add(ud, obj);
}

static const struct fg_resource_handler primary_handler = { primary_add, primary_update, primary_add };

static void secondary_add(void *ud, struct fg_kobj *obj)
{
    struct watch *w = ud;
    w->map(w->ud, obj, &(struct fg_keys){ w->c });
}

static void secondary_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    struct watch *w = ud;
    if (old != obj && w->pred && !w->pred(w->ud, old, obj))
        return;
    if (old != obj)
        secondary_add(ud, old);
    secondary_add(ud, obj);
}

static const struct fg_resource_handler secondary_handler = { secondary_add, secondary_update, secondary_add };

/* ---- reconciling ---- */

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_manager_controller *c = ud;
    if (!fg_manager_is_leader(c->m)) {
        /* Leadership is not certain now: if the term ended, cancel drops the key and the next leader
         * reconciles it; if the gap was shorter than the supervisor's tick, it is looked at again. */
        fg_counter_add(c->skipped, 1);
        return fg_reconcile_requeue_after(FG_NS_PER_S);
    }
    uint64_t t0 = fg_clock_mono_ns();
    struct fg_reconcile_result res = c->spec.reconcile(c->spec.ud, key);
    fg_histogram_observe(c->duration, (double)(fg_clock_mono_ns() - t0) / 1e9);
    fg_counter_add(res.err ? c->failed : res.requeue_after_ns ? c->requeued : c->succeeded, 1);
    return res;
}

/* ---- a term: the leader-only runnable ---- */

static enum fg_err term_start(void *ud, char *errmsg)
{
    struct fg_manager_controller *c = ud;
    struct fg_controller_opts co = { .name = c->component, .kind = c->spec.kind, .workers = c->spec.workers,
                                     .reconcile = reconcile, .ud = c };
    struct fg_controller *ctl = NULL;
    enum fg_err err = fg_controller_new(&co, &ctl, errmsg);
    if (err)
        return err;
    err = fg_controller_start(ctl);
    if (err) {
        fg_controller_free(ctl);
        return fg_errmsg(errmsg, err, "cannot start the workers");
    }
    pthread_mutex_lock(&c->mu);
    c->running = ctl;
    pthread_mutex_unlock(&c->mu);
    struct fg_keys keys = { c };
    struct fg_kobj_list all;
    if (c->spec.primary) {
        fg_store_list(fg_informer_store(c->spec.primary), &all);
        for (size_t i = 0; i < all.n; i++)
            fg_keys_add(&keys, fg_kobj_key(all.items[i]));
        fg_kobj_list_cleanup(&all);
    }
    for (size_t w = 0; !c->spec.primary && w < c->n_watches; w++) {
        fg_store_list(fg_informer_store(c->watches[w]->informer), &all);
        for (size_t i = 0; i < all.n; i++)
            c->watches[w]->map(c->watches[w]->ud, all.items[i], &keys);
        fg_kobj_list_cleanup(&all);
    }
    if (c->spec.seed)
        c->spec.seed(c->spec.seed_ud, &keys);
    return FG_OK;
}

static void term_stop(void *ud)
{
    struct fg_manager_controller *c = ud;
    pthread_mutex_lock(&c->mu);
    struct fg_controller *ctl = c->running;
    c->running = NULL;
    pthread_mutex_unlock(&c->mu);
    fg_controller_cancel(ctl);
    fg_controller_free(ctl);
}

/* ---- metrics read at scrape time ---- */

enum queue_stat { QS_DEPTH, QS_WAITING, QS_BUSY, QS__COUNT };

void fg__controllers_collect(void *ud, struct fg_buf *out)
{
    static const struct {
        const char *name, *help;
    } families[QS__COUNT] = {
        { "fracgpu_workqueue_depth", "Keys waiting for a worker." },
        { "fracgpu_workqueue_waiting", "Keys parked for a retry or a later look." },
        { "fracgpu_controller_busy_workers", "Reconciles running now." },
    };
    struct fg_manager *m = ud;
    for (int f = 0; f < QS__COUNT && m->n_controllers; f++) {
        fg_prom_family(out, families[f].name, FG_PROM_GAUGE, families[f].help);
        for (size_t i = 0; i < m->n_controllers; i++) {
            struct fg_manager_controller *c = m->controllers[i];
            struct fg_controller_metrics cm = { 0 };
            pthread_mutex_lock(&c->mu);
            if (c->running)
                fg_controller_metrics_get(c->running, &cm);
            pthread_mutex_unlock(&c->mu);
            const char *labels[] = { "controller", c->spec.name, NULL };
            uint64_t v = f == QS_DEPTH ? cm.queue_depth : f == QS_WAITING ? cm.waiting : cm.busy_workers;
            fg_prom_sample_u64(out, families[f].name, labels, v);
        }
    }
}

/* ---- registration ---- */

static void controller_free(void *ud)
{
    struct fg_manager_controller *c = ud;
    for (size_t i = 0; i < c->n_watches; i++)
        free(c->watches[i]);
    free(c->watches);
    pthread_mutex_destroy(&c->mu);
    free(c->component);
    free((char *)c->spec.kind);
    free((char *)c->spec.name);
    free(c);
}

static struct fg_counter *result_counter(struct fg_manager *m, const char *name, const char *result)
{
    const char *labels[] = { "controller", name, "result", result, NULL };
    return fg_metrics_counter(fg_manager_metrics(m), "fracgpu_reconcile_total",
                              "Reconciles by result: success, error (retried with backoff), requeue (looked at again "
                              "later), skipped (dropped because this replica no longer leads).",
                              labels);
}

enum fg_err fg_manager_controller(struct fg_manager *m, const struct fg_controller_spec *spec,
                                  struct fg_manager_controller **out, char *errmsg)
{
    if (!spec || !spec->name || !*spec->name || !spec->reconcile)
        return fg_errmsg(errmsg, FG_E_INVAL, "a controller needs a name and a reconcile function");
    if (spec->workers == 0 || spec->workers > FG_CONTROLLER_MAX_WORKERS)
        return fg_errmsg(errmsg, FG_E_INVAL, "controller %s: workers must be 1..%d, not %u", spec->name,
                         FG_CONTROLLER_MAX_WORKERS, spec->workers);
    if (m->spent)
        return fg_errmsg(errmsg, FG_E_BUSY, "controller %s registered after the manager started", spec->name);
    struct fg_manager_controller *c = fg_calloc(1, sizeof *c);
    c->m = m;
    c->spec = *spec;
    c->spec.name = fg_strdup(spec->name);
    c->spec.kind = spec->kind ? fg_strdup(spec->kind) : NULL;
    c->component = fg_asprintf("%s-controller", spec->name);
    pthread_mutex_init(&c->mu, NULL);
    fg_manager_on_free(m, controller_free, c);
    c->succeeded = result_counter(m, spec->name, "success");
    c->failed = result_counter(m, spec->name, "error");
    c->requeued = result_counter(m, spec->name, "requeue");
    c->skipped = result_counter(m, spec->name, "skipped");
    const char *labels[] = { "controller", spec->name, NULL };
    c->duration = fg_metrics_histogram(fg_manager_metrics(m), "fracgpu_reconcile_duration_seconds",
                                       "How long reconciles took.", labels, fg_metrics_latency_bounds,
                                       fg_metrics_latency_bounds_n);
    m->controllers = fg_realloc(m->controllers, (m->n_controllers + 1) * sizeof *m->controllers);
    m->controllers[m->n_controllers++] = c;
    enum fg_err err = spec->primary ? fg_informer_add_handler(spec->primary, &primary_handler, c) : FG_OK;
    if (!err)
        err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = c->component, .leader_only = true,
                                                               .start = term_start, .stop = term_stop, .ud = c });
    if (err)
        return fg_errmsg(errmsg, err, "controller %s: cannot watch its primary informer", spec->name);
    *out = c;
    return FG_OK;
}

enum fg_err fg_manager_watches(struct fg_manager_controller *c, struct fg_informer *secondary, fg_map_fn *map,
                               void *ud, fg_update_pred *pred, char *errmsg)
{
    if (!secondary || !map)
        return fg_errmsg(errmsg, FG_E_INVAL, "controller %s: a watch needs an informer and a map function",
                         c->spec.name);
    if (c->m->spent)
        return fg_errmsg(errmsg, FG_E_BUSY, "controller %s: watch added after the manager started", c->spec.name);
    struct watch *w = fg_calloc(1, sizeof *w);
    *w = (struct watch){ c, secondary, map, pred, ud };
    c->watches = fg_realloc(c->watches, (c->n_watches + 1) * sizeof *c->watches);
    c->watches[c->n_watches++] = w;
    enum fg_err err = fg_informer_add_handler(secondary, &secondary_handler, w);
    if (err)
        return fg_errmsg(errmsg, err, "controller %s: cannot watch that informer (%s)", c->spec.name,
                         err == FG_E_TOO_BIG ? "too many handlers" : fg_err_str(err));
    return FG_OK;
}
