/*
 * fake_server — see fake_server.h.
 *
 * The server thread owns the event_base, the evhttp and every stream; the test thread only reads the
 * request log (under a mutex) and stops the server with event_base_loopexit (thread-safe after
 * evthread_use_pthreads). Streams are freed when they end, when the client closes the connection,
 * or when the server stops.
 */
#include "fake_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

struct stream {
    struct fake_server *srv;
    struct evhttp_request *req;
    struct event *timer;
    char **chunks;
    size_t n, next;
    unsigned delay_ms;
    bool end;
    struct stream *link;
};

struct fake_server {
    struct event_base *base;
    struct evhttp *http;
    SSL_CTX *tls;
    pthread_t thread;
    fake_handler_fn *handler;
    void *ud;
    int port;
    char url[64];
    pthread_mutex_t lock;
    struct fake_request *log;
    size_t nlog, caplog;
    struct stream *streams;
};

static char *dup_opt(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static const char *method_name(enum evhttp_cmd_type t)
{
    switch (t) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_HEAD: return "HEAD";
    default: return "OTHER";
    }
}

static void record(struct fake_server *s, struct evhttp_request *req)
{
    struct evkeyvalq *h = evhttp_request_get_input_headers(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    struct fake_request r = {
        .uri = fg_strdup(evhttp_request_get_uri(req)),
        .content_type = dup_opt(evhttp_find_header(h, "Content-Type")),
        .authorization = dup_opt(evhttp_find_header(h, "Authorization")),
        .accept = dup_opt(evhttp_find_header(h, "Accept")),
        .user_agent = dup_opt(evhttp_find_header(h, "User-Agent")),
        .body_len = evbuffer_get_length(in),
    };
    snprintf(r.method, sizeof r.method, "%s", method_name(evhttp_request_get_command(req)));
    r.body = fg_malloc(r.body_len + 1);
    evbuffer_copyout(in, r.body, r.body_len);
    r.body[r.body_len] = '\0';
    pthread_mutex_lock(&s->lock);
    if (s->nlog == s->caplog) {
        s->caplog = s->caplog ? 2 * s->caplog : 16;
        s->log = fg_realloc(s->log, s->caplog * sizeof *s->log);
    }
    s->log[s->nlog++] = r;
    pthread_mutex_unlock(&s->lock);
}

static void dispatch(struct evhttp_request *req, void *ud)
{
    struct fake_server *s = ud;
    record(s, req);
    s->handler(s, req, evhttp_request_get_uri(req), s->ud);
}

static struct bufferevent *make_tls_bev(struct event_base *base, void *ud)
{
    struct fake_server *s = ud;
    return bufferevent_openssl_socket_new(base, -1, SSL_new(s->tls), BUFFEREVENT_SSL_ACCEPTING,
                                          BEV_OPT_CLOSE_ON_FREE);
}

static void *run(void *ud)
{
    struct fake_server *s = ud;
    event_base_dispatch(s->base);
    return NULL;
}

struct fake_server *fake_server_start(fake_handler_fn *handler, void *ud, SSL_CTX *tls)
{
    evthread_use_pthreads();
    struct fake_server *s = fg_calloc(1, sizeof *s);
    s->handler = handler;
    s->ud = ud;
    pthread_mutex_init(&s->lock, NULL);
    s->base = event_base_new();
    s->http = evhttp_new(s->base);
    if (!s->base || !s->http)
        abort();
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(s->http, dispatch, s);
    if (tls) {
        SSL_CTX_up_ref(tls);
        s->tls = tls;
        evhttp_set_bevcb(s->http, make_tls_bev, s);
    }
    struct evhttp_bound_socket *sock = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
    if (!sock)
        abort();
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&sin, &len);
    s->port = ntohs(sin.sin_port);
    snprintf(s->url, sizeof s->url, "%s://127.0.0.1:%d", tls ? "https" : "http", s->port);
    pthread_create(&s->thread, NULL, run, s);
    return s;
}

static void stream_free(struct stream *st)
{
    struct fake_server *s = st->srv;
    struct stream **pp = &s->streams;
    while (*pp && *pp != st)
        pp = &(*pp)->link;
    if (*pp)
        *pp = st->link;
    event_free(st->timer);
    for (size_t i = 0; i < st->n; i++)
        free(st->chunks[i]);
    free(st->chunks);
    free(st);
}

void fake_server_stop(struct fake_server *s)
{
    event_base_loopexit(s->base, NULL); /* unlike loopbreak, not lost if the thread has not entered dispatch yet */
    pthread_join(s->thread, NULL);
    while (s->streams) {
        evhttp_connection_set_closecb(evhttp_request_get_connection(s->streams->req), NULL, NULL);
        stream_free(s->streams);
    }
    evhttp_free(s->http);
    event_base_free(s->base);
    SSL_CTX_free(s->tls);
    for (size_t i = 0; i < s->nlog; i++)
        fake_request_cleanup(&s->log[i]);
    free(s->log);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

const char *fake_server_url(const struct fake_server *s)
{
    return s->url;
}

int fake_server_port(const struct fake_server *s)
{
    return s->port;
}

size_t fake_server_nrequests(struct fake_server *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->nlog;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void fake_server_request(struct fake_server *s, size_t i, struct fake_request *out)
{
    pthread_mutex_lock(&s->lock);
    if (i >= s->nlog)
        abort();
    struct fake_request *r = &s->log[i];
    *out = *r;
    out->uri = fg_strdup(r->uri);
    out->content_type = dup_opt(r->content_type);
    out->authorization = dup_opt(r->authorization);
    out->accept = dup_opt(r->accept);
    out->user_agent = dup_opt(r->user_agent);
    out->body = fg_strndup(r->body, r->body_len);
    pthread_mutex_unlock(&s->lock);
}

void fake_request_cleanup(struct fake_request *r)
{
    free(r->uri);
    free(r->content_type);
    free(r->authorization);
    free(r->accept);
    free(r->user_agent);
    free(r->body);
    memset(r, 0, sizeof *r);
}

void fake_reply(struct evhttp_request *req, int code, const char *body, const char *header, const char *value)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "application/json");
    if (header)
        evhttp_add_header(h, header, value);
    struct evbuffer *out = evbuffer_new();
    if (body)
        evbuffer_add(out, body, strlen(body));
    evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", out);
    evbuffer_free(out);
}

/* The client went away mid-stream: libevent has detached the unfinished request and leaves it to us;
 * ending the reply on a detached request frees it. */
static void on_client_close(struct evhttp_connection *conn, void *ud)
{
    (void)conn;
    struct stream *st = ud;
    evhttp_send_reply_end(st->req);
    stream_free(st);
}

static void stream_tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct stream *st = ud;
    if (st->next < st->n) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, st->chunks[st->next], strlen(st->chunks[st->next]));
        evhttp_send_reply_chunk(st->req, b);
        evbuffer_free(b);
        st->next++;
    }
    if (st->next < st->n) {
        struct timeval tv = { .tv_sec = 0, .tv_usec = (suseconds_t)st->delay_ms * 1000 };
        evtimer_add(st->timer, &tv);
    } else if (st->end) {
        evhttp_connection_set_closecb(evhttp_request_get_connection(st->req), NULL, NULL);
        evhttp_send_reply_end(st->req);
        stream_free(st);
    }
}

void fake_stream(struct fake_server *s, struct evhttp_request *req, const char *const *chunks, size_t n,
                 unsigned delay_ms, bool end)
{
    struct stream *st = fg_calloc(1, sizeof *st);
    st->srv = s;
    st->req = req;
    st->n = n;
    st->delay_ms = delay_ms;
    st->end = end;
    st->chunks = fg_calloc(n ? n : 1, sizeof *st->chunks);
    for (size_t i = 0; i < n; i++)
        st->chunks[i] = fg_strdup(chunks[i]);
    st->timer = evtimer_new(s->base, stream_tick, st);
    st->link = s->streams;
    s->streams = st;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply_start(req, 200, "OK");
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_close, st);
    struct timeval tv = { 0, 0 };
    evtimer_add(st->timer, &tv);
}
