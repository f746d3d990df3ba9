/*
 * loop — the loop thread, its work queue and the libcurl-multi / libevent glue.
 *
 * This is the classic multi-socket pattern (curl's hiperfifo example): libcurl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to call it back (CURLMOPT_TIMERFUNCTION);
 * each socket gets a persistent libevent event whose callback hands readiness back through
 * curl_multi_socket_action, and the timer event does the same with CURL_SOCKET_TIMEOUT. Finished
 * transfers are collected with curl_multi_info_read after every action and completed in
 * loop_call.c, never from inside a libcurl callback. Other threads reach the loop only through
 * fg_kube_loop_call: a mutex-protected FIFO and a user event made active with event_active()
 * (libevent runs with evthread_use_pthreads, so that is safe from any thread). The exec credential
 * cache reaches it the same way: the loop listens to it from new to free, and each ended plugin run
 * queues fg__kube_loop_creds_ready. The loop owns the event_base, the multi handle and every call;
 * the client is borrowed and must outlive it.
 */
#include <event2/event.h>
#include <event2/thread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/client_internal.h"
#include "operator/kube/loop_internal.h"

struct fg__kube_queued {
    void (*fn)(void *ud);
    void *ud;
    struct fg__kube_queued *next;
};

struct sock {
    struct event *ev;
};

static void on_socket_event(evutil_socket_t fd, short what, void *ud)
{
    int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    fg__kube_loop_drive(ud, fd, action);
}

static void on_curl_timer(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    fg__kube_loop_drive(ud, CURL_SOCKET_TIMEOUT, 0);
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
    (void)easy;
    struct fg_kube_loop *loop = ud;
    struct sock *s = sockp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            event_free(s->ev);
            free(s);
            curl_multi_assign(loop->multi, fd, NULL);
        }
        return 0;
    }
    if (!s) {
        s = fg_calloc(1, sizeof *s);
        curl_multi_assign(loop->multi, fd, s);
    } else {
        event_free(s->ev);
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    s->ev = event_new(loop->base, fd, kind, on_socket_event, loop);
    if (!s->ev)
        abort();
    event_add(s->ev, NULL);
    return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *ud)
{
    (void)multi;
    struct fg_kube_loop *loop = ud;
    if (timeout_ms < 0) {
        evtimer_del(loop->curl_timer);
        return 0;
    }
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    evtimer_add(loop->curl_timer, &tv);
    return 0;
}

void fg__kube_loop_drive(struct fg_kube_loop *loop, curl_socket_t fd, int action)
{
    int running;
    loop->in_curl++;
    curl_multi_socket_action(loop->multi, fd, action, &running);
    loop->in_curl--;
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(loop->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct fg_kube_call *call = NULL;
        CURLcode rc = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&call);
        fg__kube_call_finished(call, rc);
    }
    fg__kube_loop_reap(loop);
}

static void on_wake(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct fg_kube_loop *loop = ud;
    pthread_mutex_lock(&loop->queue_lock);
    struct fg__kube_queued *q = loop->queue_head;
    loop->queue_head = loop->queue_tail = NULL;
    pthread_mutex_unlock(&loop->queue_lock);
    while (q) {
        struct fg__kube_queued *next = q->next;
        if (!loop->stopped)
            q->fn(q->ud);
        free(q);
        q = next;
    }
}

/* On the exec credential cache's refresher thread: hand the news to the loop thread. */
static void creds_ran(void *ud)
{
    struct fg_kube_loop *loop = ud;
    fg_kube_loop_call(loop, fg__kube_loop_creds_ready, loop);
}

enum fg_err fg_kube_loop_new(struct fg_kube_client *client, struct fg_kube_loop **out, char *errmsg)
{
    *out = NULL;
    if (!client)
        return fg_errmsg(errmsg, FG_E_INVAL, "loop needs a client");
    evthread_use_pthreads();
    struct fg_kube_loop *loop = fg_calloc(1, sizeof *loop);
    loop->client = client;
    pthread_mutex_init(&loop->queue_lock, NULL);
    sem_init(&loop->ready, 0, 0);
    loop->base = event_base_new();
    loop->multi = curl_multi_init();
    if (!loop->base || !loop->multi) {
        fg_kube_loop_free(loop);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot create the event base or curl multi handle");
    }
    loop->curl_timer = evtimer_new(loop->base, on_curl_timer, loop);
    loop->wake = event_new(loop->base, -1, 0, on_wake, loop);
    if (!loop->curl_timer || !loop->wake)
        abort();
    curl_multi_setopt(loop->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(loop->multi, CURLMOPT_SOCKETDATA, loop);
    curl_multi_setopt(loop->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(loop->multi, CURLMOPT_TIMERDATA, loop);
    if (client->creds)
        fg__kube_creds_listen(client->creds, creds_ran, loop);
    *out = loop;
    return FG_OK;
}

static void *run(void *ud)
{
    struct fg_kube_loop *loop = ud;
    loop->tid = pthread_self();
    sem_post(&loop->ready);
    event_base_loop(loop->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

enum fg_err fg_kube_loop_start(struct fg_kube_loop *loop)
{
    if (loop->started || loop->stopped)
        return FG_E_INVAL;
    loop->started = true;
    if (pthread_create(&loop->thread, NULL, run, loop) != 0) {
        loop->started = false;
        return FG_E_NOMEM;
    }
    sem_wait(&loop->ready);   /* from here on, tid is set for every thread that asks */
    return FG_OK;
}

static void stop_on_loop(void *ud)
{
    struct fg_kube_loop *loop = ud;
    fg__kube_loop_cancel_all(loop);
    loop->stopped = true;
    event_base_loopbreak(loop->base);
}

static void drain_queue(struct fg_kube_loop *loop)
{
    pthread_mutex_lock(&loop->queue_lock);
    struct fg__kube_queued *q = loop->queue_head;
    loop->queue_head = loop->queue_tail = NULL;
    pthread_mutex_unlock(&loop->queue_lock);
    while (q) {
        struct fg__kube_queued *next = q->next;
        free(q);
        q = next;
    }
}

void fg_kube_loop_stop(struct fg_kube_loop *loop)
{
    if (!loop || loop->stopped)
        return;
    if (loop->started) {
        fg_kube_loop_call(loop, stop_on_loop, loop);
        pthread_join(loop->thread, NULL);
        loop->started = false;
    } else {
        stop_on_loop(loop);
    }
    drain_queue(loop);
}

void fg_kube_loop_free(struct fg_kube_loop *loop)
{
    if (!loop)
        return;
    if (loop->client->creds)
        fg__kube_creds_unlisten(loop->client->creds, loop);   /* no creds_ran from here on */
    fg_kube_loop_stop(loop);
    drain_queue(loop);
    if (loop->multi)
        curl_multi_cleanup(loop->multi);   /* closes cached connections through socket_cb */
    if (loop->curl_timer)
        event_free(loop->curl_timer);
    if (loop->wake)
        event_free(loop->wake);
    if (loop->base)
        event_base_free(loop->base);
    pthread_mutex_destroy(&loop->queue_lock);
    sem_destroy(&loop->ready);
    free(loop);
}

struct event_base *fg_kube_loop_base(struct fg_kube_loop *loop)
{
    return loop->base;
}

struct fg_kube_client *fg_kube_loop_client(struct fg_kube_loop *loop)
{
    return loop->client;
}

bool fg_kube_loop_on_loop_thread(const struct fg_kube_loop *loop)
{
    return loop->started && pthread_equal(pthread_self(), loop->tid);
}

void fg_kube_loop_call(struct fg_kube_loop *loop, void (*fn)(void *ud), void *ud)
{
    struct fg__kube_queued *q = fg_calloc(1, sizeof *q);
    q->fn = fn;
    q->ud = ud;
    pthread_mutex_lock(&loop->queue_lock);
    if (loop->queue_tail)
        loop->queue_tail->next = q;
    else
        loop->queue_head = q;
    loop->queue_tail = q;
    pthread_mutex_unlock(&loop->queue_lock);
    event_active(loop->wake, EV_READ, 0);
}
