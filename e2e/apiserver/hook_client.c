/* hook_client — asynchronous webhook calls on the loop (libcurl multi + libevent); see hook_client.h. */
#include "e2e/apiserver/hook_client.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

#define MAX_REPLY (4u << 20)
#define IDLE_MAX 16 /* easy handles kept for reuse (reset, not freed, between calls) */

struct fg__hook_client {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    struct fg__hook_call *calls;
    CURL *idle[IDLE_MAX];
    size_t nidle;
};

struct fg__hook_call {
    struct fg__hook_call *prev, *next;
    struct fg__hook_client *c;
    CURL *easy;
    struct curl_slist *headers;
    struct curl_slist *connect_to;
    struct fg_buf reply;
    char *url;
    char *body;
    fg__hook_done_fn *done;
    void *ud;
};

static void check_done(struct fg__hook_client *c);

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
    struct fg__hook_client *c = arg;
    int flags = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(c->multi, fd, flags, &running);
    check_done(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg__hook_client *c = arg;
    int running = 0;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

/* CURLMOPT_SOCKETFUNCTION: one persistent event per socket curl wants watched. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    struct fg__hook_client *c = userp;
    struct event *ev = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (ev)
            event_free(ev);
        curl_multi_assign(c->multi, s, NULL);
        return 0;
    }
    short kind = (short)(EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0));
    if (ev) {
        event_del(ev);
        event_assign(ev, c->base, s, kind, on_socket_event, c);
    } else if (!(ev = event_new(c->base, s, kind, on_socket_event, c))) {
        return -1;
    }
    curl_multi_assign(c->multi, s, ev);
    return event_add(ev, NULL);
}

/* CURLMOPT_TIMERFUNCTION */
static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct fg__hook_client *c = userp;
    if (timeout_ms < 0)
        return evtimer_del(c->timer);
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    return evtimer_add(c->timer, &tv);
}

enum fg_err fg__hook_client_new(struct event_base *base, struct fg__hook_client **out)
{
    struct fg__hook_client *c = fg_calloc(1, sizeof(*c));
    c->base = base;
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, on_timer, c);
    if (!c->multi || !c->timer) {
        fg__hook_client_free(c);
        return FG_E_NOMEM;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    *out = c;
    return FG_OK;
}

static void call_free(struct fg__hook_call *call)
{
    struct fg__hook_client *c = call->c;
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    curl_multi_remove_handle(c->multi, call->easy);
    if (c->nidle < IDLE_MAX) {
        curl_easy_reset(call->easy);
        c->idle[c->nidle++] = call->easy;
    } else {
        curl_easy_cleanup(call->easy);
    }
    curl_slist_free_all(call->headers);
    curl_slist_free_all(call->connect_to);
    fg_buf_cleanup(&call->reply);
    free(call->url);
    free(call->body);
    free(call);
}

void fg__hook_call_cancel(struct fg__hook_call *call)
{
    call_free(call);
}

void fg__hook_client_free(struct fg__hook_client *c)
{
    if (!c)
        return;
    while (c->calls)
        call_free(c->calls);
    while (c->nidle)
        curl_easy_cleanup(c->idle[--c->nidle]);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    if (c->timer)
        event_free(c->timer);
    free(c);
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    return fg_buf_append(arg, data, size * nmemb) == FG_OK ? size * nmemb : 0;
}

/* The outcome of a finished transfer, as kube-apiserver words it. */
static enum fg_err outcome(struct fg__hook_call *call, CURLcode rc, json_object **reply, char *errmsg)
{
    long code = 0;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &code);
    *reply = NULL;
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return fg_errmsg(errmsg, FG_E_TIMEOUT, "failed to call webhook: Post \"%s\": context deadline exceeded",
                         call->url);
    if (rc != CURLE_OK)
        return fg_errmsg(errmsg, FG_E_IO, "failed to call webhook: Post \"%s\": %s", call->url,
                         curl_easy_strerror(rc));
    if (code != 200)
        return fg_errmsg(errmsg, FG_E_IO, "received invalid webhook response: HTTP %ld", code);
    if (fg_json_parse(fg_buf_str(&call->reply), call->reply.len, MAX_REPLY, reply, errmsg) != FG_OK)
        return fg_errmsg(errmsg, FG_E_PARSE, "received invalid webhook response: not JSON");
    return FG_OK;
}

static void check_done(struct fg__hook_client *c)
{
    CURLMsg *m;
    int left = 0;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct fg__hook_call *call = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&call);
        char msg[FG_ERRMSG_MAX] = "";
        json_object *reply = NULL;
        enum fg_err err = outcome(call, m->data.result, &reply, msg);
        fg__hook_done_fn *done = call->done;
        void *ud = call->ud;
        call_free(call); /* m is invalid from here */
        done(ud, err, reply, msg);
    }
}

enum fg_err fg__hook_client_post(struct fg__hook_client *c, const struct fg__hook_target *target, const char *body,
                                 fg__hook_done_fn *done, void *ud, struct fg__hook_call **out, char *errmsg)
{
    struct fg__hook_call *call = fg_calloc(1, sizeof(*call));
    call->c = c;
    call->done = done;
    call->ud = ud;
    call->url = fg_strdup(target->url);
    call->body = fg_strdup(body);
    fg_buf_init(&call->reply, MAX_REPLY);
    call->easy = c->nidle ? c->idle[--c->nidle] : curl_easy_init();
    if (!call->easy) {
        fg_buf_cleanup(&call->reply);
        free(call->url);
        free(call->body);
        free(call);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot create an HTTP client");
    }
    call->headers = curl_slist_append(NULL, "Content-Type: application/json");
    call->headers = curl_slist_append(call->headers, "Accept: application/json");
    curl_easy_setopt(call->easy, CURLOPT_URL, call->url);
    curl_easy_setopt(call->easy, CURLOPT_POSTFIELDS, call->body);
    curl_easy_setopt(call->easy, CURLOPT_HTTPHEADER, call->headers);
    curl_easy_setopt(call->easy, CURLOPT_TIMEOUT_MS, target->timeout_s * 1000L);
    curl_easy_setopt(call->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(call->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(call->easy, CURLOPT_WRITEDATA, &call->reply);
    curl_easy_setopt(call->easy, CURLOPT_PRIVATE, call);
    if (target->connect_to) {
        call->connect_to = curl_slist_append(NULL, target->connect_to);
        curl_easy_setopt(call->easy, CURLOPT_CONNECT_TO, call->connect_to);
    }
    if (target->ca) {
        struct curl_blob blob = { .data = (void *)target->ca, .len = target->ca_len, .flags = CURL_BLOB_COPY };
        curl_easy_setopt(call->easy, CURLOPT_CAINFO_BLOB, &blob);
    }
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    if (curl_multi_add_handle(c->multi, call->easy) != CURLM_OK) {
        call_free(call);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot start an HTTP call");
    }
    *out = call;
    return FG_OK;
}
