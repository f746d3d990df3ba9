/* hook_client — asynchronous webhook calls over kept-alive TLS connections on the loop; see hook_client.h. */
#include "e2e/apiserver/hook_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/http_response.h"
#include "e2e/apiserver/json_read.h"

#define MAX_REPLY (4u << 20)
#define IDLE_MAX 32 /* kept-alive connections, all targets together */

/* An SSL_CTX per CA bundle (NULL: the system's roots), kept for the client's life. */
struct tls_ctx {
    struct tls_ctx *next;
    unsigned char *ca;
    size_t ca_len;
    SSL_CTX *ctx;
};

/* A TLS connection to one address, for one server name and CA; it carries one call at a time and
 * waits in the idle list between calls. */
struct conn {
    struct conn *next; /* idle list */
    struct fg__hook_client *c;
    struct bufferevent *bev;
    char *addr;         /* "ADDRESS:PORT" dialled */
    char *server_name;  /* checked against the certificate */
    SSL_CTX *ctx;
    struct fg__hook_call *call; /* NULL while idle */
    bool connected;     /* TCP and TLS handshakes done */
    bool reused;        /* it served a call before this one */
};

struct fg__hook_client {
    struct event_base *base;
    struct evdns_base *dns; /* made for the first host name that is not an address */
    struct fg__hook_call *calls;
    struct conn *idle;
    size_t nidle;
    struct tls_ctx *ctxs;
};

struct fg__hook_call {
    struct fg__hook_call *prev, *next;
    struct fg__hook_client *c;
    struct conn *conn;
    struct event *timer;
    char *url;
    char *addr;        /* "ADDRESS:PORT" to dial */
    char *server_name; /* the URL's host */
    SSL_CTX *ctx;
    struct fg_buf request;
    struct fg__http_response response;
    bool got_bytes;    /* a byte of the response arrived */
    bool retried;      /* sent again on a fresh connection after a kept-alive one had gone */
    fg__hook_done_fn *done;
    void *ud;
};

static void conn_free(struct conn *k)
{
    bufferevent_free(k->bev); /* closes the socket and frees the SSL */
    free(k->addr);
    free(k->server_name);
    free(k);
}

static void idle_remove(struct fg__hook_client *c, struct conn *k)
{
    for (struct conn **p = &c->idle; *p; p = &(*p)->next) {
        if (*p == k) {
            *p = k->next;
            c->nidle--;
            return;
        }
    }
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
    if (call->conn)
        conn_free(call->conn); /* mid-call: its stream cannot carry another request */
    event_free(call->timer);
    fg_buf_cleanup(&call->request);
    fg__http_response_cleanup(&call->response);
    free(call->url);
    free(call->addr);
    free(call->server_name);
    free(call);
}

void fg__hook_call_cancel(struct fg__hook_call *call)
{
    call_free(call);
}

enum fg_err fg__hook_client_new(struct event_base *base, struct fg__hook_client **out)
{
    struct fg__hook_client *c = fg_calloc(1, sizeof(*c));
    c->base = base;
    *out = c;
    return FG_OK;
}

void fg__hook_client_free(struct fg__hook_client *c)
{
    if (!c)
        return;
    while (c->calls)
        call_free(c->calls);
    while (c->idle) {
        struct conn *k = c->idle;
        c->idle = k->next;
        conn_free(k);
    }
    while (c->ctxs) {
        struct tls_ctx *t = c->ctxs;
        c->ctxs = t->next;
        SSL_CTX_free(t->ctx);
        free(t->ca);
        free(t);
    }
    if (c->dns)
        evdns_base_free(c->dns, 0);
    free(c);
}

/* The SSL_CTX trusting this CA bundle (PEM), made on first use. */
static enum fg_err tls_ctx_get(struct fg__hook_client *c, const void *ca, size_t ca_len, SSL_CTX **out, char *errmsg)
{
    for (struct tls_ctx *t = c->ctxs; t; t = t->next) {
        if (t->ca_len == ca_len && (!ca_len || !memcmp(t->ca, ca, ca_len))) {
            *out = t->ctx;
            return FG_OK;
        }
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot create a TLS context");
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    size_t certs = 0;
    if (ca) {
        BIO *bio = BIO_new_mem_buf(ca, (int)ca_len);
        X509 *x;
        while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
            certs += X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), x) == 1;
            X509_free(x);
        }
        BIO_free(bio);
        ERR_clear_error(); /* the end of the PEM data reads as an error */
    } else {
        certs = SSL_CTX_set_default_verify_paths(ctx) == 1;
    }
    if (!certs) {
        SSL_CTX_free(ctx);
        return fg_errmsg(errmsg, FG_E_TLS, "the CA bundle holds no usable certificate");
    }
    struct tls_ctx *t = fg_calloc(1, sizeof(*t));
    t->ca = ca_len ? fg_malloc(ca_len) : NULL;
    if (ca_len)
        memcpy(t->ca, ca, ca_len);
    t->ca_len = ca_len;
    t->ctx = ctx;
    t->next = c->ctxs;
    c->ctxs = t;
    *out = ctx;
    return FG_OK;
}

/* Splits "HOST:PORT" or "[V6]:PORT" (port_default when absent) into host (caller frees) and port. */
static bool split_host_port(const char *s, size_t len, int port_default, char **host, int *port)
{
    const char *colon = NULL;
    size_t host_start = 0, host_len = len;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return false;
        host_start = 1;
        host_len = (size_t)(close - s) - 1;
        colon = (size_t)(close - s) + 1 < len && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(s, ':', len);
        host_len = colon ? (size_t)(colon - s) : len;
    }
    *port = port_default;
    if (colon) {
        char *end = NULL;
        long p = strtol(colon + 1, &end, 10);
        if (end != s + len || p <= 0 || p > 65535)
            return false;
        *port = (int)p;
    }
    if (!host_len)
        return false;
    *host = fg_malloc(host_len + 1);
    memcpy(*host, s + host_start, host_len);
    (*host)[host_len] = '\0';
    return true;
}

static bool is_address(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static char *join_host_port(const char *host, int port)
{
    return fg_asprintf(strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

static void finish(struct fg__hook_call *call, enum fg_err err, const char *reason);

/* The reason a connection failed, in the words of Go's net/http where kube's client would say them. */
static void failure_reason(struct conn *k, char *out, size_t size)
{
    SSL *ssl = bufferevent_openssl_get_ssl(k->bev);
    long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    unsigned long ssl_err = bufferevent_get_openssl_error(k->bev);
    int dns_err = bufferevent_socket_get_dns_error(k->bev);
    int sock_err = EVUTIL_SOCKET_ERROR();
    if (dns_err) {
        snprintf(out, size, "dial tcp: lookup %s: %s", k->addr, evutil_gai_strerror(dns_err));
    } else if (verify != X509_V_OK) {
        snprintf(out, size, "tls: failed to verify certificate: x509: %s", X509_verify_cert_error_string(verify));
    } else if (!k->connected && sock_err) {
        int n = snprintf(out, size, "dial tcp %s: connect: %s", k->addr, evutil_socket_error_to_string(sock_err));
        size_t at = n > 0 ? strlen(out) - strlen(evutil_socket_error_to_string(sock_err)) : 0;
        if (at < size && out[at] >= 'A' && out[at] <= 'Z')
            out[at] = (char)(out[at] - 'A' + 'a'); /* Go's errno texts start in lower case */
    } else if (ssl_err && ERR_reason_error_string(ssl_err)) {
        snprintf(out, size, "tls: %s", ERR_reason_error_string(ssl_err));
    } else {
        snprintf(out, size, "EOF");
    }
}

static void start_on(struct fg__hook_call *call, struct conn *k);
static enum fg_err conn_new(struct fg__hook_call *call, struct conn **out, char *errmsg);

static void on_read(struct bufferevent *bev, void *arg)
{
    struct conn *k = arg;
    struct fg__hook_call *call = k->call;
    if (!call) { /* an idle connection should say nothing: it is not ours to keep */
        idle_remove(k->c, k);
        conn_free(k);
        return;
    }
    call->got_bytes = true;
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = fg__http_response_feed(&call->response, bufferevent_get_input(bev), false, msg);
    if (err != FG_E_BUSY)
        finish(call, err, msg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct conn *k = arg;
    struct fg__hook_call *call = k->call;
    if (what & BEV_EVENT_CONNECTED) {
        k->connected = true;
        return;
    }
    if (!call) { /* the peer closed an idle connection */
        idle_remove(k->c, k);
        conn_free(k);
        return;
    }
    char reason[FG_ERRMSG_MAX];
    failure_reason(k, reason, sizeof(reason));
    if (!call->got_bytes && k->reused && !call->retried) {
        /* a kept-alive connection the peer had closed: send it once more on a fresh one */
        call->retried = true;
        call->conn = NULL;
        conn_free(k);
        struct conn *fresh = NULL;
        enum fg_err err = conn_new(call, &fresh, reason);
        if (!err)
            start_on(call, fresh);
        else
            finish(call, err, reason);
        return;
    }
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = call->got_bytes ? fg__http_response_feed(&call->response, bufferevent_get_input(k->bev), true, msg)
                                      : FG_E_IO;
    finish(call, err == FG_OK ? FG_OK : FG_E_IO, err == FG_OK ? "" : call->got_bytes ? msg : reason);
}

/* A new connection for the call's target, connecting. */
static enum fg_err conn_new(struct fg__hook_call *call, struct conn **out, char *errmsg)
{
    struct fg__hook_client *c = call->c;
    char *host = NULL;
    int port = 0;
    if (!split_host_port(call->addr, strlen(call->addr), 443, &host, &port))
        return fg_errmsg(errmsg, FG_E_INVAL, "bad address %s", call->addr);
    SSL *ssl = SSL_new(call->ctx);
    bool named = !is_address(call->server_name);
    if (ssl && named)
        SSL_set_tlsext_host_name(ssl, call->server_name);
    int checked = !ssl ? 0 : named ? SSL_set1_host(ssl, call->server_name)
                                   : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), call->server_name);
    struct bufferevent *bev = checked ? bufferevent_openssl_socket_new(c->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                                       BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)
                                      : NULL;
    if (!bev) {
        if (ssl)
            SSL_free(ssl);
        free(host);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot set up a TLS connection");
    }
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    struct conn *k = fg_calloc(1, sizeof(*k));
    k->c = c;
    k->bev = bev;
    k->addr = fg_strdup(call->addr);
    k->server_name = fg_strdup(call->server_name);
    k->ctx = call->ctx;
    bufferevent_setcb(bev, on_read, NULL, on_event, k);
    if (!is_address(host) && !c->dns)
        c->dns = evdns_base_new(c->base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    /* callbacks are deferred: a refused connection reports from the loop, never from here */
    int rc = bufferevent_socket_connect_hostname(bev, is_address(host) ? NULL : c->dns, AF_UNSPEC, host, port);
    free(host);
    if (rc != 0) {
        conn_free(k);
        return fg_errmsg(errmsg, FG_E_CONNECT, "dial tcp %s: %s", call->addr, strerror(errno));
    }
    *out = k;
    return FG_OK;
}

/* Sends the call's request on k, which is now the call's. */
static void start_on(struct fg__hook_call *call, struct conn *k)
{
    call->conn = k;
    k->call = call;
    bufferevent_write(k->bev, call->request.data, call->request.len);
    bufferevent_enable(k->bev, EV_READ | EV_WRITE);
}

/* A kept-alive connection to the call's target, or NULL. */
static struct conn *idle_take(struct fg__hook_client *c, const struct fg__hook_call *call)
{
    for (struct conn **p = &c->idle; *p; p = &(*p)->next) {
        struct conn *k = *p;
        if (k->ctx == call->ctx && !strcmp(k->addr, call->addr) && !strcmp(k->server_name, call->server_name)) {
            *p = k->next;
            c->nidle--;
            return k;
        }
    }
    return NULL;
}

/* Ends the call: its connection goes back to the idle list when it may carry another request; the
 * call is freed, then its done function runs. */
static void finish(struct fg__hook_call *call, enum fg_err err, const char *reason)
{
    struct fg__hook_client *c = call->c;
    char msg[FG_ERRMSG_MAX] = "";
    json_object *reply = NULL;
    struct conn *k = call->conn;
    if (!err && k && call->response.keep_alive && !evbuffer_get_length(bufferevent_get_input(k->bev)) &&
        c->nidle < IDLE_MAX) {
        call->conn = NULL;
        k->call = NULL;
        k->reused = true;
        k->next = c->idle;
        c->idle = k;
        c->nidle++;
    }
    if (err == FG_E_TIMEOUT) {
        fg_errmsg(msg, err, "failed to call webhook: Post \"%s\": context deadline exceeded", call->url);
    } else if (err) {
        fg_errmsg(msg, err, "failed to call webhook: Post \"%s\": %s", call->url, reason);
    } else if (call->response.status != 200) {
        err = fg_errmsg(msg, FG_E_IO, "received invalid webhook response: HTTP %d", call->response.status);
    } else {
        struct evbuffer *body = call->response.body;
        size_t len = evbuffer_get_length(body);
        const char *text = (const char *)evbuffer_pullup(body, -1);
        if (fg__json_read(text ? text : "", len, MAX_REPLY, &reply, NULL) != FG_OK)
            err = fg_errmsg(msg, FG_E_PARSE, "received invalid webhook response: not JSON");
    }
    fg__hook_done_fn *done = call->done;
    void *ud = call->ud;
    call_free(call);
    done(ud, err, reply, msg);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    finish(arg, FG_E_TIMEOUT, "");
}

/* Splits an https URL into its authority (host[:port]) and its path with query ("/" at least). */
static bool split_url(const char *url, const char **authority, size_t *authority_len, const char **path)
{
    static const char scheme[] = "https://";
    if (strncmp(url, scheme, sizeof(scheme) - 1))
        return false;
    *authority = url + sizeof(scheme) - 1;
    *authority_len = strcspn(*authority, "/?#");
    *path = *authority + *authority_len;
    return *authority_len > 0;
}

enum fg_err fg__hook_client_post(struct fg__hook_client *c, const struct fg__hook_target *target, const char *body,
                                 fg__hook_done_fn *done, void *ud, struct fg__hook_call **out, char *errmsg)
{
    const char *authority, *path;
    size_t authority_len;
    char *host = NULL;
    int port = 0;
    if (!split_url(target->url, &authority, &authority_len, &path) ||
        !split_host_port(authority, authority_len, 443, &host, &port))
        return fg_errmsg(errmsg, FG_E_INVAL, "webhook URL %s is not an https URL", target->url);
    SSL_CTX *ctx = NULL;
    enum fg_err err = tls_ctx_get(c, target->ca, target->ca ? target->ca_len : 0, &ctx, errmsg);
    if (err) {
        free(host);
        return err;
    }
    struct fg__hook_call *call = fg_calloc(1, sizeof(*call));
    call->c = c;
    call->done = done;
    call->ud = ud;
    call->ctx = ctx;
    call->url = fg_strdup(target->url);
    call->server_name = host;
    call->addr = target->dial ? fg_strdup(target->dial) : join_host_port(host, port);
    fg__http_response_init(&call->response, MAX_REPLY);
    size_t body_len = strlen(body);
    int ok = fg_buf_printf(&call->request, "POST %s%s HTTP/1.1\r\nHost: %.*s\r\nContent-Type: application/json\r\n"
                           "Accept: application/json\r\nContent-Length: %zu\r\n\r\n", *path == '/' ? "" : "/", path,
                           (int)authority_len, authority, body_len) == FG_OK &&
             fg_buf_append(&call->request, body, body_len) == FG_OK;
    call->timer = evtimer_new(c->base, on_timeout, call);
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    struct conn *k = idle_take(c, call);
    if (!ok || !call->timer) {
        err = fg_errmsg(errmsg, FG_E_NOMEM, "cannot start an HTTP call");
    } else if (!k) {
        err = conn_new(call, &k, errmsg);
    }
    if (err) {
        if (k)
            conn_free(k);
        call_free(call);
        return err;
    }
    struct timeval tv = { target->timeout_s, 0 };
    evtimer_add(call->timer, &tv);
    start_on(call, k);
    *out = call;
    return FG_OK;
}
