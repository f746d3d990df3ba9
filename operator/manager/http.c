/*
 * http — the manager's one HTTP server: /healthz, /readyz and /metrics on the loop's event_base.
 *
 * Checks and metrics run on the loop thread, where the reflectors they read are written. A check
 * answer follows kube-apiserver's: "ok" with 200 when every check passes; otherwise 503 and, per
 * check, "[+]name ok" or "[-]name failed: reason", then "<endpoint> check failed". ?verbose lists
 * every check also when all pass. Only GET and HEAD are served; other paths are 404.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"
#include "operator/manager/manager_int.h"

static void reply(struct evhttp_request *req, int code, const char *ctype, const struct fg_buf *body)
{
    evbuffer_add(evhttp_request_get_output_buffer(req), fg_buf_str(body), body->len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, code == HTTP_OK ? "OK" : "Service Unavailable", NULL);
}

static bool verbose(struct evhttp_request *req)
{
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    /* a parameter named exactly "verbose", with or without a value ("?verbose", "?verbose=1") */
    for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        size_t n = strcspn(p, "=&");
        if (n == strlen("verbose") && !strncmp(p, "verbose", n))
            return true;
    }
    return false;
}

/* One line per check into body; true when all pass. */
static bool run_checks(const struct fg__check *checks, size_t n, struct fg_buf *body)
{
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        char why[FG_ERRMSG_MAX] = "";
        enum fg_err err = checks[i].fn(checks[i].ud, why);
        enum fg_err e2 = err ? fg_buf_printf(body, "[-]%s failed: %s\n", checks[i].name, why[0] ? why : fg_err_str(err))
                             : fg_buf_printf(body, "[+]%s ok\n", checks[i].name);
        (void)e2;
        ok = ok && !err;
    }
    return ok;
}

static void answer_checks(struct evhttp_request *req, const char *endpoint, const struct fg__check *a, size_t na,
                          const struct fg__check *b, size_t nb)
{
    struct fg_buf lines = FG_BUF_INIT, body = FG_BUF_INIT;
    bool ok = run_checks(a, na, &lines);
    ok = run_checks(b, nb, &lines) && ok;
    bool listed = !ok || verbose(req);
    enum fg_err err = listed ? fg_buf_append(&body, fg_buf_str(&lines), lines.len) : FG_OK;
    if (!err && listed)
        err = fg_buf_printf(&body, "%s check %s\n", endpoint, ok ? "passed" : "failed");
    else if (!err)
        err = fg_buf_puts(&body, "ok\n");
    (void)err;   /* unlimited buffers */
    reply(req, ok ? HTTP_OK : 503, "text/plain; charset=utf-8", &body);
    fg_buf_cleanup(&body);
    fg_buf_cleanup(&lines);
}

static enum fg_err informers_synced(void *ud, char *errmsg)
{
    struct fg_manager *m = ud;
    if (fg_informer_factory_synced(m->informers))
        return FG_OK;
    return fg_errmsg(errmsg, FG_E_BUSY, "not every informer has listed yet");
}

static void on_healthz(struct evhttp_request *req, void *ud)
{
    struct fg_manager *m = ud;
    answer_checks(req, "healthz", m->healthz, m->n_healthz, NULL, 0);
}

static void on_readyz(struct evhttp_request *req, void *ud)
{
    struct fg_manager *m = ud;
    const struct fg__check informers = { "informers", informers_synced, m };
    answer_checks(req, "readyz", &informers, 1, m->readyz, m->n_readyz);
}

static void on_metrics(struct evhttp_request *req, void *ud)
{
    struct fg_manager *m = ud;
    struct fg_buf body = FG_BUF_INIT;
    fg_metrics_write(m->metrics, &body);
    reply(req, HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &body);
    fg_buf_cleanup(&body);
}

static void on_other(struct evhttp_request *req, void *ud)
{
    (void)ud;
    evhttp_send_error(req, HTTP_NOTFOUND, "try /healthz, /readyz or /metrics");
}

enum fg_err fg_manager_parse_listen(const char *listen, char *host, size_t host_size, unsigned *port, char *errmsg)
{
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon)
        return fg_errmsg(errmsg, FG_E_INVAL, "listen address \"%s\": want HOST:PORT", listen ? listen : "");
    const char *h = listen;
    size_t hl = (size_t)(colon - listen);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    bool bracketed = h != listen;
    char *end = NULL;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || colon[1] == '-' || colon[1] == '+' || p > 65535 || hl >= host_size ||
        (!bracketed && memchr(h, ':', hl)))
        return fg_errmsg(errmsg, FG_E_INVAL, "listen address \"%s\": want HOST:PORT", listen);
    if (hl == 0) {
        h = "0.0.0.0";
        hl = strlen(h);
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (unsigned)p;
    return FG_OK;
}

enum fg_err fg_manager_http_bind(struct evhttp *http, const char *listen, char *shown, size_t shown_size,
                                 unsigned *port, char *errmsg)
{
    char host[128];
    enum fg_err err = fg_manager_parse_listen(listen, host, sizeof host, port, errmsg);
    if (err)
        return err;
    /* ":PORT" means every address: IPv6 and IPv4 on one dual-stack socket where the node has IPv6
     * (the kubelet probes an IPv6-only pod on its IPv6 address), IPv4 alone where it has not. */
    struct evhttp_bound_socket *sock = NULL;
    bool every = listen[0] == ':';
    if (every)
        sock = evhttp_bind_socket_with_handle(http, "::", (ev_uint16_t)*port);
    if (every && sock)
        snprintf(host, sizeof host, "[::]");
    if (!sock)
        sock = evhttp_bind_socket_with_handle(http, host, (ev_uint16_t)*port);
    if (!sock) {
        int e = errno;
        return fg_errmsg(errmsg, FG_E_IO, "cannot listen on %s: %s%s", listen, strerror(e),
                         e == EADDRINUSE      ? " (another process holds that port: stop it, or choose another)"
                         : e == EACCES        ? " (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
                         : e == EADDRNOTAVAIL ? " (no interface of this host has that address)"
                                              : "");
    }
    /* accepted sockets inherit it: a reply's header and body writes must not wait for a delayed ACK */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(sock), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (!getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&ss, &len))
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    snprintf(shown, shown_size, "%s:%u", host, *port);
    return FG_OK;
}

enum fg_err fg__manager_http_start(struct fg_manager *m, char *errmsg)
{
    struct evhttp *http = evhttp_new(fg_kube_loop_base(m->loop));
    if (!http)
        return fg_errmsg(errmsg, FG_E_IO, "cannot create the HTTP server");
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_max_headers_size(http, 16384);
    evhttp_set_max_body_size(http, 0);
    evhttp_set_timeout(http, 30);
    evhttp_set_cb(http, "/healthz", on_healthz, m);
    evhttp_set_cb(http, "/readyz", on_readyz, m);
    evhttp_set_cb(http, "/metrics", on_metrics, m);
    evhttp_set_gencb(http, on_other, m);
    char shown[160], why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_manager_http_bind(http, m->listen, shown, sizeof shown, &m->http_port, why);
    if (err) {
        evhttp_free(http);
        return fg_errmsg(errmsg, err, "%s for /healthz, /readyz and /metrics", why);
    }
    m->http = http;
    fg_log(FG_LOG_INFO, m->component, "serving /healthz, /readyz and /metrics on %s", shown);
    return FG_OK;
}

void fg__manager_http_stop(struct fg_manager *m)
{
    if (m->http)
        evhttp_free(m->http);
    m->http = NULL;
}
