/* http — evhttp handlers for /metrics and /healthz; see http.h. */
#include "exporter/http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "base/mem.h"

struct fg_exporter_http {
    struct evhttp *http;
    struct fg_exporter *exp;
    uint16_t port;
};

static void on_metrics(struct evhttp_request *req, void *ud)
{
    struct fg_exporter_http *h = ud;
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exporter_scrape(h->exp, &b);
    struct evbuffer *body = evhttp_request_get_output_buffer(req);
    evbuffer_add(body, fg_buf_str(&b), b.len);
    fg_buf_cleanup(&b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, HTTP_OK, "OK", NULL);
}

static void on_healthz(struct evhttp_request *req, void *ud)
{
    (void)ud;
    evbuffer_add_printf(evhttp_request_get_output_buffer(req), "ok\n");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
    evhttp_send_reply(req, HTTP_OK, "OK", NULL);
}

static void on_other(struct evhttp_request *req, void *ud)
{
    (void)ud;
    evhttp_send_error(req, HTTP_NOTFOUND, "try /metrics or /healthz");
}

/* Splits "host:port" / "[v6]:port" / ":port" (every IPv4 address) into host (copied, brackets
 * dropped) and port. */
static enum fg_err split_listen(const char *listen, char *host, size_t hostsz, uint16_t *port, char *errmsg)
{
    const char *colon = strrchr(listen, ':');
    if (!colon)
        return fg_errmsg(errmsg, FG_E_INVAL, "--listen %s: want ADDR:PORT", listen);
    const char *h = listen;
    size_t hl = (size_t)(colon - listen);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    char *end;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || p > 65535 || hl >= hostsz)
        return fg_errmsg(errmsg, FG_E_INVAL, "--listen %s: want ADDR:PORT", listen);
    if (hl == 0) {
        h = "0.0.0.0";
        hl = strlen(h);
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (uint16_t)p;
    return FG_OK;
}

enum fg_err fg_exporter_http_new(struct event_base *base, const char *listen, struct fg_exporter *e,
                                 struct fg_exporter_http **out, char *errmsg)
{
    char host[128];
    uint16_t port = 0;
    enum fg_err err = split_listen(listen, host, sizeof host, &port, errmsg);
    if (err)
        return err;
    struct fg_exporter_http *h = fg_calloc(1, sizeof *h);
    h->exp = e;
    h->http = evhttp_new(base);
    if (!h->http) {
        err = fg_errmsg(errmsg, FG_E_IO, "cannot create the HTTP server");
        goto out_free;
    }
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_max_headers_size(h->http, 16384);
    evhttp_set_max_body_size(h->http, 0);
    evhttp_set_timeout(h->http, 30);
    evhttp_set_cb(h->http, "/metrics", on_metrics, h);
    evhttp_set_cb(h->http, "/healthz", on_healthz, h);
    evhttp_set_gencb(h->http, on_other, h);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(h->http, host, port);
    if (!bs) {
        err = fg_errmsg(errmsg, FG_E_IO, "cannot listen on %s", listen);
        goto out_free_http;
    }
    /* accepted sockets inherit it: a reply's header and body writes must not wait for a delayed ACK */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(bs), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0)
        h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    *out = h;
    return FG_OK;

out_free_http:
    evhttp_free(h->http);
out_free:
    free(h);
    return err;
}

void fg_exporter_http_free(struct fg_exporter_http *h)
{
    if (!h)
        return;
    evhttp_free(h->http);
    free(h);
}

uint16_t fg_exporter_http_port(const struct fg_exporter_http *h)
{
    return h->port;
}
