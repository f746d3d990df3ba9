/*
 * loop_call — the life of a call on the loop thread, and one-shot requests.
 *
 * A call owns its easy handle, header list, request body copy and reply buffer. It starts from a
 * timer event, never directly: the timer first asks the client's token bucket for a token (re-arming
 * itself for the returned delay when there is none), and starting from the event loop also keeps
 * curl_multi_add_handle out of libcurl callbacks (a watch consumer may start a call from on_event).
 * Results are delivered in fg__kube_call_finished, after libcurl has returned. A call whose exec
 * credential is being fetched is parked (awaiting_cred) rather than started, and rescheduled when
 * the plugin's run ends; a 401 to its exec credential reschedules it once. Cancelling marks the
 * call so no callback runs again; when libcurl is on the stack the handle cannot be removed yet,
 * so the call is parked on the loop's dead list and freed by fg__kube_loop_reap. A call that is
 * delivering its final callback is freed when the callback returns.
 */
#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/internal.h"
#include "operator/kube/client_internal.h"
#include "operator/kube/loop_internal.h"

static void detach(struct fg_kube_call *call)
{
    if (call->in_multi) {
        curl_multi_remove_handle(call->loop->multi, call->easy);
        call->in_multi = false;
    }
}

void fg__kube_call_free(struct fg_kube_call *call)
{
    struct fg_kube_loop *loop = call->loop;
    detach(call);
    if (call->prev)
        call->prev->next = call->next;
    else
        loop->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    event_free(call->start);
    curl_easy_cleanup(call->easy);
    curl_slist_free_all(call->headers);
    fg_buf_cleanup(&call->reply);
    if (call->kind == CALL_WATCH)
        fg_watch_decoder_cleanup(&call->decoder);
    free(call->method);
    free(call->path);
    free(call->content_type);
    free(call->body);
    free(call->ns);
    free(call->label_selector);
    free(call->field_selector);
    free(call->resource_version);
    free(call->cont);
    free(call->list_rv);
    free(call);
}

/* Calls are the loop thread's alone; touching them from another thread is a bug worth stopping at. */
static void check_thread(const struct fg_kube_loop *loop, const char *what)
{
    if (loop->started && !fg_kube_loop_on_loop_thread(loop)) {
        fg_log(FG_LOG_ERROR, "kube", "%s called outside the loop thread; use fg_kube_loop_call", what);
        abort();
    }
}

void fg_kube_call_cancel(struct fg_kube_call *call)
{
    if (!call || call->cancelled)
        return;
    check_thread(call->loop, "fg_kube_call_cancel");
    call->cancelled = true;
    if (call->delivering)
        return;   /* freed by the deliverer once the callback returns */
    if (call->loop->in_curl) {
        call->dead_next = call->loop->dead;
        call->loop->dead = call;
        return;
    }
    fg__kube_call_free(call);
}

void fg__kube_loop_reap(struct fg_kube_loop *loop)
{
    while (loop->dead) {
        struct fg_kube_call *call = loop->dead;
        loop->dead = call->dead_next;
        fg__kube_call_free(call);
    }
}

void fg__kube_loop_cancel_all(struct fg_kube_loop *loop)
{
    fg__kube_loop_reap(loop);
    while (loop->calls) {
        loop->calls->cancelled = true;
        fg__kube_call_free(loop->calls);
    }
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct fg_kube_call *call = ud;
    if (call->cancelled)
        return 0;
    if (fg_buf_append(&call->reply, data, size * n)) {
        call->too_big = true;
        return 0;
    }
    return size * n;
}

/* Configures the easy handle for the call's current request; fails when the credentials cannot be read,
 * and with FG_E_BUSY while the exec plugin runs for them. */
static enum fg_err prepare(struct fg_kube_call *call)
{
    struct fg_kube_client *c = call->loop->client;
    curl_easy_reset(call->easy);
    curl_slist_free_all(call->headers);
    call->headers = NULL;
    fg_buf_reset(&call->reply);
    call->too_big = false;
    call->http_code = 0;
    call->curl_err[0] = '\0';
    enum fg_err err = fg__kube_prepare_easy(c, call->easy, call->path, false, &call->ticket, &call->cred_gen,
                                            &call->headers, call->errmsg);
    if (err)
        return err;
    if (call->content_type) {
        char *ct = fg_asprintf("Content-Type: %s", call->content_type);
        call->headers = curl_slist_append(call->headers, ct);
        free(ct);
    }
    fg__kube_easy_set_body(call->easy, call->method, call->body, call->len);
    curl_easy_setopt(call->easy, CURLOPT_HTTPHEADER, call->headers);
    curl_easy_setopt(call->easy, CURLOPT_PRIVATE, call);
    curl_easy_setopt(call->easy, CURLOPT_ERRORBUFFER, call->curl_err);
    curl_easy_setopt(call->easy, CURLOPT_WRITEDATA, call);
    if (call->kind == CALL_WATCH) {
        curl_easy_setopt(call->easy, CURLOPT_WRITEFUNCTION, fg__kube_watch_write);
        call->reply.limit = FG__KUBE_WATCH_ERROR_BODY_MAX;
    } else {
        curl_easy_setopt(call->easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(call->easy, CURLOPT_TIMEOUT_MS, (long)c->opts.timeout_ms);
        call->reply.limit = c->opts.max_body_bytes;
    }
    return FG_OK;
}

static void fail_start(struct fg_kube_call *call, enum fg_err err);

static void on_start(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct fg_kube_call *call = ud;
    unsigned long long delay = fg_kube_client_ratelimit_delay_ns(call->loop->client);
    if (delay) {
        unsigned long long us = delay / 1000 + 1;
        struct timeval tv = { .tv_sec = (time_t)(us / 1000000), .tv_usec = (suseconds_t)(us % 1000000) };
        evtimer_add(call->start, &tv);
        return;
    }
    enum fg_err err = prepare(call);
    if (err == FG_E_BUSY) {
        call->awaiting_cred = true;   /* fg__kube_loop_creds_ready starts it again */
        return;
    }
    if (err) {
        fail_start(call, err);
        return;
    }
    call->in_multi = true;
    curl_multi_add_handle(call->loop->multi, call->easy);
}

void fg__kube_call_schedule(struct fg_kube_call *call)
{
    detach(call);
    struct timeval now = { 0, 0 };
    evtimer_add(call->start, &now);
}

void fg__kube_loop_creds_ready(void *ud)
{
    struct fg_kube_loop *loop = ud;
    for (struct fg_kube_call *call = loop->calls; call; call = call->next) {
        if (call->awaiting_cred) {
            call->awaiting_cred = false;
            fg__kube_call_schedule(call);
        }
    }
}

struct fg_kube_call *fg__kube_call_new(struct fg_kube_loop *loop, enum fg__kube_call_kind kind, const char *method,
                                      const char *path, void *ud)
{
    check_thread(loop, "starting a call");
    struct fg_kube_call *call = fg_calloc(1, sizeof *call);
    call->loop = loop;
    call->kind = kind;
    call->ud = ud;
    call->method = fg_strdup(method);
    call->path = fg__kube_dup_opt(path);
    call->easy = curl_easy_init();
    call->start = evtimer_new(loop->base, on_start, call);
    if (!call->easy || !call->start)
        abort();
    fg_buf_init(&call->reply, 0);
    call->next = loop->calls;
    if (loop->calls)
        loop->calls->prev = call;
    loop->calls = call;
    return call;
}

struct fg_kube_call *fg_kube_loop_request(struct fg_kube_loop *loop, const char *method, const char *path,
                                          const char *content_type, const char *body, size_t len,
                                          fg_kube_done_fn *done, void *ud)
{
    struct fg_kube_call *call = fg__kube_call_new(loop, CALL_REQUEST, method, path, ud);
    call->done = done;
    call->content_type = fg__kube_dup_opt(content_type);
    if (body) {
        call->body = fg_malloc(len + 1);
        memcpy(call->body, body, len);
        call->body[len] = '\0';
        call->len = len;
    }
    fg__kube_call_schedule(call);
    return call;
}

/* Delivers the final callback, then frees the call. */
void fg__kube_call_finish(struct fg_kube_call *call, enum fg_err err, const struct fg_kube_status *st,
                          const char *rv, const char *msg)
{
    call->delivering = true;
    detach(call);
    if (!call->cancelled) {
        switch (call->kind) {
        case CALL_REQUEST:
            call->done(call->ud, err, &call->reply, st);
            break;
        case CALL_LIST:
            call->list_done(call->ud, err, err ? NULL : rv, st, msg);
            break;
        case CALL_WATCH:
            call->on_end(call->ud, err, st, msg);
            break;
        }
    }
    fg__kube_call_free(call);
}

static void fail_start(struct fg_kube_call *call, enum fg_err err)
{
    struct fg_kube_status st = { .err = err, .message = call->errmsg };
    fg__kube_call_finish(call, err, &st, NULL, call->errmsg);
}

void fg__kube_call_finished(struct fg_kube_call *call, CURLcode rc)
{
    struct fg_kube_status st = { 0 };
    enum fg_err err;
    if (call->cancelled)
        return;   /* on the dead list; reaped by the caller */
    if (call->kind == CALL_WATCH && call->stream_err) {
        fg__kube_call_finish(call, call->stream_err, NULL, NULL, call->errmsg);
        return;
    }
    if (rc != CURLE_OK) {
        err = fg__kube_transfer_error(rc, call->curl_err, call->too_big, call->reply.limit, call->method,
                                      call->path, &st);
        fg__kube_call_finish(call, err, &st, NULL, st.message);
        fg_kube_status_cleanup(&st);
        return;
    }
    long code = 0;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &code);
    err = fg_kube_status_from_reply(code, call->reply.data, call->reply.len, fg__kube_retry_after(call->easy), &st);
    if (err == FG_E_KUBE_UNAUTHORIZED && call->cred_gen && !call->auth_retried) {
        /* the server refused the exec credential: drop it and go again once (a watch has seen no event) */
        fg__kube_creds_invalidate(call->loop->client->creds, call->cred_gen);
        call->auth_retried = true;
        fg__kube_call_schedule(call);
    } else if (err) {
        fg__kube_call_finish(call, err, &st, NULL, st.message);
    } else if (call->kind == CALL_LIST) {
        fg__kube_list_page_done(call, &st);
    } else if (call->kind == CALL_WATCH) {
        err = fg_watch_decoder_finish(&call->decoder, call->errmsg);
        fg__kube_call_finish(call, err, NULL, NULL, err ? call->errmsg : NULL);
    } else {
        fg__kube_call_finish(call, FG_OK, &st, NULL, NULL);
    }
    fg_kube_status_cleanup(&st);
}

/* ---- fg_kube_loop_call_wait: a loop call another thread waits for ---- */

struct waited_call {
    void (*fn)(void *ud);
    void *ud;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
};

static void run_waited(void *arg)
{
    struct waited_call *c = arg;
    c->fn(c->ud);
    pthread_mutex_lock(&c->lock);
    c->done = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

enum fg_err fg_kube_loop_call_wait(struct fg_kube_loop *loop, void (*fn)(void *ud), void *ud, unsigned timeout_ms)
{
    struct waited_call *c = fg_calloc(1, sizeof *c);
    c->fn = fn;
    c->ud = ud;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    fg_kube_loop_call(loop, run_waited, c);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        if (pthread_cond_timedwait(&c->cond, &c->lock, &deadline))
            break;
    bool done = c->done;
    pthread_mutex_unlock(&c->lock);
    if (!done)
        return FG_E_TIMEOUT; /* the loop may still run it: leaking c beats a use after free */
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
    return FG_OK;
}
