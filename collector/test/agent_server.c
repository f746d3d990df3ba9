/* agent_server — stand-in node agents on an event_base; see agent_server.h. */
#include "agent_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/mem.h"

struct agent_server {
    enum agent_mode mode;
    char *body;
    unsigned delay_ms, port, hits;
    struct evhttp *http;
    struct evconnlistener *listener;
    struct event *pending[16];   /* AGENT_SLOW's answers not yet sent */
};

struct delayed {
    struct agent_server *a;
    struct evhttp_request *req;
    size_t slot;
};

static void reply(struct agent_server *a, struct evhttp_request *req)
{
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    evbuffer_add(out, a->body, strlen(a->body));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", NULL);
}

static void on_delay(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct delayed *d = ud;
    reply(d->a, d->req);
    event_free(d->a->pending[d->slot]);
    d->a->pending[d->slot] = NULL;
    free(d);
}

static void on_request(struct evhttp_request *req, void *ud)
{
    struct agent_server *a = ud;
    a->hits++;
    if (a->mode == AGENT_500) {
        evhttp_send_error(req, 500, "Internal Server Error");
        return;
    }
    if (a->mode == AGENT_BODY) {
        reply(a, req);
        return;
    }
    for (size_t i = 0; i < sizeof(a->pending) / sizeof(*a->pending); i++)
        if (!a->pending[i]) {
            struct delayed *d = fg_calloc(1, sizeof(*d));
            *d = (struct delayed){ a, req, i };
            a->pending[i] = evtimer_new(evhttp_connection_get_base(evhttp_request_get_connection(req)), on_delay, d);
            struct timeval tv = { a->delay_ms / 1000, (a->delay_ms % 1000) * 1000 };
            evtimer_add(a->pending[i], &tv);
            return;
        }
    evhttp_send_error(req, 503, "busy");
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *ud)
{
    (void)l;
    (void)sa;
    (void)len;
    ((struct agent_server *)ud)->hits++;
    evutil_closesocket(fd);
}

static unsigned port_of(evutil_socket_t fd)
{
    struct sockaddr_in sin;
    socklen_t n = sizeof(sin);
    getsockname(fd, (struct sockaddr *)&sin, &n);
    return ntohs(sin.sin_port);
}

struct agent_server *agent_server_new(struct event_base *base, enum agent_mode mode, const char *body,
                                      unsigned delay_ms)
{
    struct agent_server *a = fg_calloc(1, sizeof(*a));
    a->mode = mode;
    a->body = fg_strdup(body ? body : "");
    a->delay_ms = delay_ms;
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (mode == AGENT_REFUSED) {   /* a port that was free a moment ago, now closed */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        bind(fd, (struct sockaddr *)&sin, sizeof(sin));
        a->port = port_of(fd);
        close(fd);
    } else if (mode == AGENT_CLOSE) {
        a->listener = evconnlistener_new_bind(base, on_accept, a, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                              (struct sockaddr *)&sin, sizeof(sin));
        a->port = port_of(evconnlistener_get_fd(a->listener));
    } else {
        a->http = evhttp_new(base);
        struct evhttp_bound_socket *s = evhttp_bind_socket_with_handle(a->http, "127.0.0.1", 0);
        a->port = port_of(evhttp_bound_socket_get_fd(s));
        evhttp_set_gencb(a->http, on_request, a);
    }
    return a;
}

void agent_server_free(struct agent_server *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < sizeof(a->pending) / sizeof(*a->pending); i++)
        if (a->pending[i]) {
            free(event_get_callback_arg(a->pending[i]));
            event_free(a->pending[i]);
        }
    if (a->http)
        evhttp_free(a->http);
    if (a->listener)
        evconnlistener_free(a->listener);
    free(a->body);
    free(a);
}

unsigned agent_server_port(const struct agent_server *a)
{
    return a->port;
}

unsigned agent_server_hits(const struct agent_server *a)
{
    return a->hits;
}
