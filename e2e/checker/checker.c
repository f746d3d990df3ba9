/*
 * checker — the checker's own manager, pod informer and grace timer around state.c; see checker.h.
 *
 * The pod informer is the checker's own, not the manager's shared factory's, because its
 * lister-watcher is wrapped (relist.h) to frame every list for the state; a runnable starts and stops
 * it on the loop thread, and the manager frees it once the loop has stopped. Nodes come from the
 * factory's informer (names only): a tenant of a deleted Node runs nowhere.
 */
#include "e2e/checker/checker.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/checker/relist.h"
#include "operator/cache/informer.h"
#include "operator/cache/kube_listwatch.h"
#include "operator/kube/resource.h"
#include "operator/manager/informers.h"
#include "operator/manager/manager.h"
#include "operator/manager/periodic.h"

#define COMPONENT "checker"

struct fg_checker {
    pthread_mutex_t mu;                 /* guards state */
    struct fg_checker_state *state;
    struct fg_manager *manager;
    struct fg_informer *pods;
    enum fg_err started;                /* what starting the informer on the loop gave */
};

static void report(void *ud, const char *msg)
{
    (void)ud;
    fg_log(FG_LOG_ERROR, COMPONENT, "invariant violated: %s", msg);
}

/* One pod event, judged at the time it arrives. Loop thread. */
static void judge(struct fg_checker *c, const struct fg_kobj *obj, bool gone)
{
    json_object *pod = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_kobj_parse(obj, &pod, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, COMPONENT, "pod %s cannot be read back from the cache: %s", fg_kobj_key(obj), msg);
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (gone)
        fg_checker_state_delete(c->state, pod, fg_clock_mono_ns());
    else
        fg_checker_state_upsert(c->state, pod, fg_clock_mono_ns());
    pthread_mutex_unlock(&c->mu);
    json_object_put(pod);
}

static void on_add(void *ud, struct fg_kobj *obj)
{
    judge(ud, obj, false);
}

static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    judge(ud, obj, false);
}

static void on_delete(void *ud, struct fg_kobj *obj)
{
    judge(ud, obj, true);
}

/* The grace of tenants left without a capacity pod runs out with no event at all. */
static void tick(void *ud)
{
    struct fg_checker *c = ud;
    pthread_mutex_lock(&c->mu);
    fg_checker_state_tick(c->state, fg_clock_mono_ns());
    pthread_mutex_unlock(&c->mu);
}

static void list_begin(void *ud)
{
    struct fg_checker *c = ud;
    pthread_mutex_lock(&c->mu);
    fg_checker_state_relist_begin(c->state);
    pthread_mutex_unlock(&c->mu);
}

/* A failed list leaves the relist open: the reflector lists again, and that list closes it. */
static void list_end(void *ud, bool ok)
{
    struct fg_checker *c = ud;
    if (!ok)
        return;
    pthread_mutex_lock(&c->mu);
    fg_checker_state_relist_end(c->state, fg_clock_mono_ns());
    pthread_mutex_unlock(&c->mu);
}

static void node_seen(struct fg_checker *c, const struct fg_kobj *obj, bool exists)
{
    pthread_mutex_lock(&c->mu);
    fg_checker_state_node(c->state, fg_kobj_name(obj), exists, fg_clock_mono_ns());
    pthread_mutex_unlock(&c->mu);
}

static void node_added(void *ud, struct fg_kobj *obj)
{
    node_seen(ud, obj, true);
}

static void node_updated(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    node_seen(ud, obj, true);
}

static void node_deleted(void *ud, struct fg_kobj *obj)
{
    node_seen(ud, obj, false);
}

static void start_on_loop(void *ud)
{
    struct fg_checker *c = ud;
    c->started = fg_informer_start(c->pods);
}

static void stop_on_loop(void *ud)
{
    fg_informer_stop(((struct fg_checker *)ud)->pods);
}

static enum fg_err pods_start(void *ud, char *errmsg)
{
    struct fg_checker *c = ud;
    enum fg_err err = fg_kube_loop_call_wait(fg_manager_loop(c->manager), start_on_loop, c, 10000);
    if (err || c->started)
        return fg_errmsg(errmsg, err ? err : c->started, "cannot start the checker's pod informer");
    return FG_OK;
}

static void pods_stop(void *ud)
{
    struct fg_checker *c = ud;
    if (fg_kube_loop_call_wait(fg_manager_loop(c->manager), stop_on_loop, c, 10000) != FG_OK)
        fg_log(FG_LOG_ERROR, COMPONENT, "the pod informer did not stop in time");
}

static void pods_free(void *ud)
{
    struct fg_checker *c = ud;
    fg_informer_free(c->pods);
    c->pods = NULL;
}

static enum fg_err wire(struct fg_checker *c, const struct fg_checker_opts *o, char *errmsg)
{
    struct fg_kube_listwatch_opts lo = FG_KUBE_LISTWATCH_OPTS_DEFAULT;
    lo.cut_managed_fields = true;
    struct fg_checker_relist_hooks hooks = { .begin = list_begin, .end = list_end, .ud = c };
    c->pods = fg_informer_new(
        fg_checker_relist_new(fg_kube_listwatch_new(fg_manager_loop(c->manager), &fg_kube_pods, NULL, &lo), &hooks),
        NULL);
    fg_manager_on_free(c->manager, pods_free, c);
    struct fg_resource_handler h = { .on_add = on_add, .on_update = on_update, .on_delete = on_delete };
    enum fg_err err = fg_informer_add_handler(c->pods, &h, c);
    if (err)
        return fg_errmsg(errmsg, err, "cannot add the checker's pod handler");
    struct fg_runnable r = { .name = "checker-pods", .start = pods_start, .stop = pods_stop, .ud = c };
    err = fg_manager_add_runnable(c->manager, &r);
    if (err)
        return fg_errmsg(errmsg, err, "cannot add the checker's pod informer");
    static const char *const node_fields[] = { NULL };
    struct fg_informer *nodes;
    static const struct fg_resource_handler node_handler = { node_added, node_updated, node_deleted };
    err = fg_informer_factory_get(fg_manager_informers(c->manager),
                                  &(struct fg_informer_want){ .resource = &fg_kube_nodes, .fields = node_fields },
                                  &nodes, errmsg);
    if (!err && (err = fg_informer_add_handler(nodes, &node_handler, c)))
        fg_errmsg(errmsg, err, "cannot add the checker's node handler");
    if (err)
        return err;
    struct fg_periodic p = { .name = "checker-grace", .period_ns = (uint64_t)o->tick_ms * FG_NS_PER_MS,
                             .run = tick, .ud = c };
    return fg_manager_add_periodic(c->manager, &p, errmsg);
}

enum fg_err fg_checker_start(const char *kubeconfig, const struct fg_checker_opts *opts, struct fg_checker **out,
                             char *errmsg)
{
    static const struct fg_checker_opts defaults = FG_CHECKER_OPTS_DEFAULT;
    const struct fg_checker_opts *o = opts ? opts : &defaults;
    if (!o->capacity_ns || !o->tick_ms)
        return fg_errmsg(errmsg, FG_E_INVAL, "the checker needs a capacity namespace and a tick");
    struct fg_checker *c = fg_calloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    struct fg_checker_state_opts so = { .capacity_ns = o->capacity_ns, .grace_ns = (uint64_t)o->grace_ms * FG_NS_PER_MS,
                                        .keep = o->keep, .report = report };
    c->state = fg_checker_state_new(&so);

    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = COMPONENT;
    mo.kubeconfig = kubeconfig;
    mo.listen = NULL;
    mo.resync_ns = 0;
    mo.leader.enabled = false;
    enum fg_err err = fg_manager_new(&mo, &c->manager, errmsg);
    if (!err)
        err = wire(c, o, errmsg);
    if (!err)
        err = fg_manager_start(c->manager, errmsg);
    if (err) {
        fg_checker_free(c);
        return err;
    }
    *out = c;
    return FG_OK;
}

bool fg_checker_wait_synced(struct fg_checker *c, unsigned timeout_ms)
{
    uint64_t deadline = fg_clock_real_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    while (!fg_informer_has_synced(c->pods)) {
        if (fg_clock_real_ns() >= deadline)
            return false;
        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
    }
    return true;
}

void fg_checker_stop(struct fg_checker *c)
{
    if (c->manager)
        fg_manager_stop(c->manager);
}

void fg_checker_free(struct fg_checker *c)
{
    if (!c)
        return;
    fg_manager_free(c->manager);
    fg_checker_state_free(c->state);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void fg_checker_stats(struct fg_checker *c, struct fg_checker_stats *out)
{
    pthread_mutex_lock(&c->mu);
    fg_checker_state_stats(c->state, out);
    pthread_mutex_unlock(&c->mu);
}

void fg_checker_gpus(struct fg_checker *c, fg_checker_gpu_fn *fn, void *ud)
{
    pthread_mutex_lock(&c->mu);
    fg_checker_state_gpus(c->state, fn, ud);
    pthread_mutex_unlock(&c->mu);
}

char *fg_checker_message(struct fg_checker *c, size_t i)
{
    pthread_mutex_lock(&c->mu);
    const char *m = fg_checker_state_message(c->state, i);
    char *copy = m ? fg_strdup(m) : NULL;
    pthread_mutex_unlock(&c->mu);
    return copy;
}

char *fg_checker_summary(struct fg_checker *c)
{
    struct fg_checker_stats st;
    fg_checker_stats(c, &st);
    return fg_asprintf("checker: %" PRIu64 " events, %zu GPUs, %" PRIu64 " violations, max %" PRId64
                       "/1000 milli, max %" PRId64 "/%" PRId64 " MiB",
                       st.events, st.gpus, st.violations, st.max_compute_milli, st.max_memory_mib,
                       st.max_memory_limit_mib);
}
