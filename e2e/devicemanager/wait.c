/* Allocations waited for from another thread (devicemanager.h). The waiter and the loop's callback
 * share a record with two references, so a caller that gives up on a timeout leaves it to the
 * callback to free. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "e2e/devicemanager/devicemanager.h"
#include "operator/kube/loop.h"

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool started, done;
    enum fg_err start_err;
    struct fg_dm *dm;
    char ns[64], name[254], uid[64], container[64], resource[128];
    size_t n;
    struct fg_dm_result result;
};

static void unref(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    bool last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (!last)
        return;
    fg_dm_result_cleanup(&w->result);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void fg_dm_result_cleanup(struct fg_dm_result *r)
{
    if (r->reply)
        v1beta1__container_allocate_response__free_unpacked(r->reply, NULL);
    for (size_t i = 0; i < r->n; i++)
        free(r->device_ids[i]);
    free(r->device_ids);
    memset(r, 0, sizeof(*r));
}

const char *fg_dm_reply_env(const V1beta1__ContainerAllocateResponse *reply, const char *name)
{
    for (size_t i = 0; reply && i < reply->n_envs; i++)
        if (strcmp(reply->envs[i]->key, name) == 0)
            return reply->envs[i]->value;
    return NULL;
}

static void done(void *ud, enum fg_grpc_status status, const char *message, const V1beta1__ContainerAllocateResponse *reply,
                 const char *const *ids, size_t n)
{
    struct waiter *w = ud;
    struct fg_dm_result r = { .status = status };
    snprintf(r.message, sizeof(r.message), "%s", message);
    if (reply) {
        /* a copy the waiter owns: packed and unpacked again */
        size_t len = v1beta1__container_allocate_response__get_packed_size(reply);
        uint8_t *buf = fg_calloc(len ? len : 1, 1);
        v1beta1__container_allocate_response__pack(reply, buf);
        r.reply = v1beta1__container_allocate_response__unpack(NULL, len, buf);
        free(buf);
        r.device_ids = fg_calloc(n ? n : 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
            r.device_ids[i] = fg_strdup(ids[i]);
        r.n = n;
    }
    pthread_mutex_lock(&w->mu);
    w->result = r;
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    unref(w);
}

static void start_on_loop(void *ud)
{
    struct waiter *w = ud;
    enum fg_err err = fg_dm_allocate(w->dm, w->ns, w->name, w->uid, w->container, w->resource, w->n, done, w);
    pthread_mutex_lock(&w->mu);
    w->start_err = err;
    w->started = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (err)
        unref(w); /* done never runs: the loop's reference goes now */
}

enum fg_err fg_dm_allocate_wait(struct fg_kube_loop *loop, struct fg_dm *dm, const char *ns, const char *name,
                                const char *uid, const char *container, const char *resource, size_t n,
                                unsigned timeout_ms, struct fg_dm_result *out)
{
    struct waiter *w = fg_calloc(1, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    fg_cond_init_monotonic(&w->cv);
    w->refs = 2;
    w->dm = dm;
    w->n = n;
    snprintf(w->ns, sizeof(w->ns), "%s", ns);
    snprintf(w->name, sizeof(w->name), "%s", name);
    snprintf(w->uid, sizeof(w->uid), "%s", uid);
    snprintf(w->container, sizeof(w->container), "%s", container);
    snprintf(w->resource, sizeof(w->resource), "%s", resource);
    enum fg_err err = fg_kube_loop_call_wait(loop, start_on_loop, w, timeout_ms);
    if (err) {
        unref(w); /* the loop may still run start_on_loop: it holds the other reference */
        return err;
    }
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    pthread_mutex_lock(&w->mu);
    err = w->start_err;
    while (!err && !w->done) {
        uint64_t now = fg_clock_mono_ns();
        if (now >= deadline) {
            err = FG_E_TIMEOUT;
            break;
        }
        fg_cond_wait_ns(&w->cv, &w->mu, deadline - now);
    }
    if (!err) {
        *out = w->result;
        memset(&w->result, 0, sizeof(w->result));
    }
    pthread_mutex_unlock(&w->mu);
    unref(w);
    return err;
}
