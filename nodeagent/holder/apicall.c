/* apicall — a loop request the holder's thread waits for, cancelled by a stop; see apicall.h. */
#include "nodeagent/holder/apicall.h"

#include <string.h>

#include "base/assert.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

struct call {
    struct fg_kube_loop *loop;
    struct fg_holder_stop *stop;
    const char *method, *path, *content_type, *body;
    struct fg_kube_call *handle;   /* loop thread only */
    bool done;                     /* under stop->mu */
    enum fg_err err;
    struct fg_buf reply;
    struct fg_kube_status st;
};

static void copy_status(struct fg_kube_status *to, const struct fg_kube_status *from, enum fg_err err)
{
    memset(to, 0, sizeof *to);
    to->err = err;
    if (!from)
        return;
    to->http_code = from->http_code;
    to->reason = from->reason ? fg_strdup(from->reason) : NULL;
    to->message = from->message ? fg_strdup(from->message) : NULL;
    to->retry_after_s = from->retry_after_s;
}

/* Loop thread: the reply. */
static void on_done(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    struct call *c = ud;
    pthread_mutex_lock(&c->stop->mu);
    c->handle = NULL;
    c->err = err;
    if (body && body->len)
        fg_buf_put(&c->reply, body->data, body->len);
    if (err)
        copy_status(&c->st, st, err);
    c->done = true;
    pthread_cond_broadcast(&c->stop->cond);
    pthread_mutex_unlock(&c->stop->mu);
}

/* Loop thread: starts the request. */
static void start(void *ud)
{
    struct call *c = ud;
    struct fg_kube_call *handle = fg_kube_loop_request(c->loop, c->method, c->path, c->content_type, c->body,
                                                       c->body ? strlen(c->body) : 0, on_done, c);
    pthread_mutex_lock(&c->stop->mu);
    if (!c->done)   /* a request that failed at once has called back already, and is gone */
        c->handle = handle;
    pthread_mutex_unlock(&c->stop->mu);
}

/* Loop thread: cancels the request unless its reply came. */
static void cancel(void *ud)
{
    struct call *c = ud;
    pthread_mutex_lock(&c->stop->mu);
    bool pending = !c->done && c->handle;
    pthread_mutex_unlock(&c->stop->mu);
    if (pending)
        fg_kube_call_cancel(c->handle);
}

enum fg_err fg_holder_api_call(struct fg_kube_loop *loop, struct fg_holder_stop *stop, const char *method,
                               const char *path, const char *content_type, const char *body, json_object **out,
                               struct fg_kube_status *st)
{
    struct call c = { .loop = loop, .stop = stop, .method = method, .path = path, .content_type = content_type,
                      .body = body };
    fg_buf_init(&c.reply, 0);
    if (out)
        *out = NULL;
    if (fg_holder_stop_requested(stop))
        return FG_E_SHUTDOWN;
    fg_kube_loop_call(loop, start, &c);
    pthread_mutex_lock(&stop->mu);
    while (!c.done && !stop->requested)
        pthread_cond_wait(&stop->cond, &stop->mu);
    bool done = c.done;
    pthread_mutex_unlock(&stop->mu);
    enum fg_err err = c.err;
    if (!done) {
        /* after this returns the loop calls nothing of c; should the loop not answer, c would be left
         * to it, so the wait is long and a failure is a bug */
        enum fg_err cancelled = fg_kube_loop_call_wait(loop, cancel, &c, 10000);
        fg_assert(cancelled == FG_OK);
        fg_buf_cleanup(&c.reply);
        if (c.done)
            fg_kube_status_cleanup(&c.st);
        return FG_E_SHUTDOWN;
    }
    if (err) {
        if (st)
            *st = c.st;
        else
            fg_kube_status_cleanup(&c.st);
    } else if (out && c.reply.len) {
        char why[FG_ERRMSG_MAX] = "";
        if ((err = fg_json_parse(c.reply.data, c.reply.len, 0, out, why)) && st) {
            memset(st, 0, sizeof *st);
            st->err = err;
            st->message = fg_strdup(why);
        }
    }
    fg_buf_cleanup(&c.reply);
    return err;
}
