/* pods — this node's pods by UID, from an informer; see pods.h. */
#include "exporter/pods.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/informer.h"
#include "operator/cache/kube_listwatch.h"
#include "operator/cache/transform.h"
#include "operator/kube/resource.h"

#define FG_PODS_START_TIMEOUT_S 10

struct fg_pods {
    struct fg_kube_loop *loop;
    struct fg_informer *inf;
    char *selector;
};

static const char *const kept_paths[] = {
    "metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
    "spec.nodeName", "status.containerStatuses[].name", "status.containerStatuses[].containerID",
    "status.initContainerStatuses[].name", "status.initContainerStatuses[].containerID",
    "status.ephemeralContainerStatuses[].name", "status.ephemeralContainerStatuses[].containerID",
    NULL,
};

static json_object *transform(void *ud, json_object *obj)
{
    (void)ud;
    return fg_transform_keep(obj, kept_paths);
}

static size_t index_uid(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    const char *uid = fg_json_get_str(obj, "metadata", "uid", NULL);
    if (!uid || !max)
        return 0;
    values[0] = uid;
    return 1;
}

/* Runs fn on the loop thread and waits for it, at most FG_PODS_START_TIMEOUT_S. */
struct on_loop {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    struct fg_pods *p;
    enum fg_err err;
};

static void start_on_loop(void *ud)
{
    struct on_loop *c = ud;
    struct fg_pods *p = c->p;
    struct fg_kube_listwatch_opts lwo = FG_KUBE_LISTWATCH_OPTS_DEFAULT;
    lwo.field_selector = p->selector;
    lwo.cut_managed_fields = true;
    struct fg_informer_opts io = FG_INFORMER_OPTS_DEFAULT;
    io.reflector.transform = transform;
    p->inf = fg_informer_new(fg_kube_listwatch_new(p->loop, &fg_kube_pods, NULL, &lwo), &io);
    enum fg_err err = fg_store_add_indexer(fg_informer_store(p->inf), "uid", index_uid, NULL);
    if (err == FG_OK)
        err = fg_informer_start(p->inf);
    pthread_mutex_lock(&c->mu);
    c->err = err;
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void stop_on_loop(void *ud)
{
    struct on_loop *c = ud;
    fg_informer_free(c->p->inf);
    c->p->inf = NULL;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static enum fg_err run_on_loop(struct fg_kube_loop *loop, void (*fn)(void *), struct on_loop *c)
{
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    fg_kube_loop_call(loop, fn, c);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += FG_PODS_START_TIMEOUT_S;
    pthread_mutex_lock(&c->mu);
    while (!c->done)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &deadline))
            break;
    bool done = c->done;
    pthread_mutex_unlock(&c->mu);
    if (!done)
        return FG_E_TIMEOUT;   /* c stays referenced by the loop's queue: the caller must not free it */
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    return c->err;
}

enum fg_err fg_pods_start(struct fg_kube_loop *loop, const char *node, struct fg_pods **out, char *errmsg)
{
    struct fg_pods *p = fg_calloc(1, sizeof *p);
    p->loop = loop;
    p->selector = fg_asprintf("spec.nodeName=%s", node);
    struct on_loop *c = fg_calloc(1, sizeof *c);
    c->p = p;
    enum fg_err err = run_on_loop(loop, start_on_loop, c);
    if (err == FG_E_TIMEOUT)
        return fg_errmsg(errmsg, err, "the kube loop did not start the pod informer within %d s",
                         FG_PODS_START_TIMEOUT_S);   /* c and p are leaked to the stuck loop on purpose */
    free(c);
    if (err) {
        fg_pods_stop(p);
        return fg_errmsg(errmsg, err, "cannot start the pod informer: %s", fg_err_str(err));
    }
    *out = p;
    return FG_OK;
}

void fg_pods_stop(struct fg_pods *p)
{
    if (!p)
        return;
    if (p->inf) {
        struct on_loop *c = fg_calloc(1, sizeof *c);
        c->p = p;
        if (run_on_loop(p->loop, stop_on_loop, c) == FG_E_TIMEOUT) {
            fg_log(FG_LOG_ERROR, "exporter", "the kube loop did not stop the pod informer in time");
            return;
        }
        free(c);
    }
    free(p->selector);
    free(p);
}

bool fg_pods_synced(const struct fg_pods *p)
{
    return p && p->inf && fg_informer_has_synced(p->inf);
}

/* The name of the container whose status carries this ID, in any of the three status lists. */
static void container_name(json_object *pod, const char *cid, char *out, size_t outsz)
{
    static const char *const lists[] = { "containerStatuses", "initContainerStatuses",
                                         "ephemeralContainerStatuses" };
    size_t cl = strlen(cid);
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        json_object *arr = fg_json_get(pod, "status", lists[l], NULL);
        if (!arr || !json_object_is_type(arr, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *st = json_object_array_get_idx(arr, i);
            const char *id = fg_json_get_str(st, "containerID", NULL);
            const char *name = fg_json_get_str(st, "name", NULL);
            const char *sep = id ? strstr(id, "://") : NULL;
            const char *bare = sep ? sep + 3 : id;
            if (bare && name && strlen(bare) == cl && memcmp(bare, cid, cl) == 0) {
                snprintf(out, outsz, "%s", name);
                return;
            }
        }
    }
}

bool fg_pods_lookup(struct fg_pods *p, const char *uid, const char *container_id, struct fg_pod_ref *out)
{
    memset(out, 0, sizeof *out);
    if (!p || !p->inf || !uid || !uid[0])
        return false;
    struct fg_kobj_list l = { NULL, 0 };
    if (fg_store_by_index(fg_informer_store(p->inf), "uid", uid, &l) != FG_OK || l.n == 0) {
        fg_kobj_list_cleanup(&l);
        return false;
    }
    snprintf(out->ns, sizeof out->ns, "%s", fg_kobj_namespace(l.items[0]));
    snprintf(out->name, sizeof out->name, "%s", fg_kobj_name(l.items[0]));
    json_object *pod = NULL;
    if (container_id && container_id[0] && fg_kobj_parse(l.items[0], &pod, NULL) == FG_OK) {
        container_name(pod, container_id, out->container, sizeof out->container);
        json_object_put(pod);
    }
    fg_kobj_list_cleanup(&l);
    return true;
}
