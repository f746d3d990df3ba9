/*
 * chaos_watch — a manager of the test's own whose one informer hears every pod event, and three sets
 * of UIDs kept under a lock (chaos_watch.h). The informer keeps only what the sets are made from.
 */
#include "e2e/cluster/test/chaos_watch.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "operator/cache/informer.h"
#include "operator/manager/manager.h"
#include "reconcilers/podcontract.h"

struct chaos_watch {
    pthread_mutex_t mu;
    char *ns, *impostor_ns;
    json_object *created, *bound;          /* UID -> true, pods of ns */
    json_object *impostors;                /* UID -> {"ran": bool, "gone": bool} */
    struct fg_manager *manager;
    struct fg_informer *pods;
};

static void mark(json_object *set, const char *uid)
{
    if (!json_object_object_get_ex(set, uid, NULL))
        json_object_object_add(set, uid, json_object_new_boolean(1));
}

/* The impostor's record, made on first sight. */
static json_object *impostor(struct chaos_watch *w, const char *uid)
{
    json_object *r = NULL;
    if (!json_object_object_get_ex(w->impostors, uid, &r)) {
        r = json_object_new_object();
        json_object_object_add(w->impostors, uid, r);
    }
    return r;
}

/* One pod as it is now, or gone. Loop thread. */
static void note(struct chaos_watch *w, const struct fg_kobj *obj, bool gone)
{
    json_object *pod = NULL;
    if (fg_kobj_parse(obj, &pod, NULL) != FG_OK)
        return;
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    pthread_mutex_lock(&w->mu);
    if (uid && fg_str_eq(ns, w->ns)) {
        mark(w->created, uid);
        if (fg_json_get_str(pod, "spec", "nodeName", NULL) &&
            fg_json_get_str(pod, "metadata", "annotations", FG_ANN_CAPACITY_POD, NULL))
            mark(w->bound, uid);
    } else if (uid && fg_str_eq(ns, w->impostor_ns)) {
        json_object *r = impostor(w, uid);
        if (fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running"))
            json_object_object_add(r, "ran", json_object_new_boolean(1));
        if (gone)
            json_object_object_add(r, "gone", json_object_new_boolean(1));
    }
    pthread_mutex_unlock(&w->mu);
    json_object_put(pod);
}

static void on_add(void *ud, struct fg_kobj *obj)
{
    note(ud, obj, false);
}

static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    note(ud, obj, false);
}

static void on_delete(void *ud, struct fg_kobj *obj)
{
    note(ud, obj, true);
}

static enum fg_err wire(struct chaos_watch *w, char *errmsg)
{
    static const char *const fields[] = { "metadata.annotations", "spec.nodeName", "status.phase", NULL };
    struct fg_informer_want want = { .resource = &fg_kube_pods, .fields = fields };
    enum fg_err err = fg_informer_factory_get(fg_manager_informers(w->manager), &want, &w->pods, errmsg);
    if (err)
        return err;
    struct fg_resource_handler h = { .on_add = on_add, .on_update = on_update, .on_delete = on_delete };
    err = fg_informer_add_handler(w->pods, &h, w);
    return err ? fg_errmsg(errmsg, err, "cannot add the pod handler") : FG_OK;
}

static bool wait_synced(struct chaos_watch *w, unsigned timeout_ms)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    while (!fg_informer_has_synced(w->pods)) {
        if (fg_clock_mono_ns() >= deadline)
            return false;
        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
    }
    return true;
}

enum fg_err chaos_watch_start(const char *kubeconfig, const char *ns, const char *impostor_ns, unsigned timeout_ms,
                              struct chaos_watch **out, char *errmsg)
{
    struct chaos_watch *w = fg_calloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    w->ns = fg_strdup(ns);
    w->impostor_ns = fg_strdup(impostor_ns);
    w->created = json_object_new_object();
    w->bound = json_object_new_object();
    w->impostors = json_object_new_object();
    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "chaos-watch";
    mo.kubeconfig = kubeconfig;
    mo.listen = NULL;
    mo.resync_ns = 0;
    mo.leader.enabled = false;
    enum fg_err err = fg_manager_new(&mo, &w->manager, errmsg);
    if (!err)
        err = wire(w, errmsg);
    if (!err)
        err = fg_manager_start(w->manager, errmsg);
    if (!err && !wait_synced(w, timeout_ms))
        err = fg_errmsg(errmsg, FG_E_TIMEOUT, "the pod watch did not list within %u ms", timeout_ms);
    if (err) {
        chaos_watch_free(w);
        return err;
    }
    *out = w;
    return FG_OK;
}

void chaos_watch_free(struct chaos_watch *w)
{
    if (!w)
        return;
    fg_manager_free(w->manager);
    json_object_put(w->created);
    json_object_put(w->bound);
    json_object_put(w->impostors);
    free(w->ns);
    free(w->impostor_ns);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static size_t count(struct chaos_watch *w, json_object *set)
{
    pthread_mutex_lock(&w->mu);
    size_t n = (size_t)json_object_object_length(set);
    pthread_mutex_unlock(&w->mu);
    return n;
}

size_t chaos_watch_created(struct chaos_watch *w)
{
    return count(w, w->created);
}

size_t chaos_watch_bound(struct chaos_watch *w)
{
    return count(w, w->bound);
}

void chaos_watch_impostor(struct chaos_watch *w, const char *uid, struct chaos_impostor_seen *out)
{
    pthread_mutex_lock(&w->mu);
    json_object *r = NULL;
    json_object_object_get_ex(w->impostors, uid, &r);
    out->ran = json_object_get_boolean(fg_json_get(r, "ran", NULL));
    out->gone = json_object_get_boolean(fg_json_get(r, "gone", NULL));
    pthread_mutex_unlock(&w->mu);
}
