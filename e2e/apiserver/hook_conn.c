/* hook_conn — the webhook client's kept-alive TLS connections on libevent's HTTP client; see hook_conn_int.h. */
#include "e2e/apiserver/hook_conn_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define MAX_HEADERS (64u << 10)
#define IDLE_MAX 32       /* kept-alive connections, all targets together */
#define IDLE_TIMEOUT_S 90 /* libevent closes a connection quiet this long; calls end by their own timers */

/* An SSL_CTX per CA bundle, kept for the pool's life. */
struct fg__hook_tls {
    struct fg__hook_tls *next;
    unsigned char *ca;
    size_t ca_len;
    SSL_CTX *ctx;
};

static void conn_free(struct fg__hook_conn *k)
{
    evhttp_connection_set_closecb(k->evcon, NULL, NULL);
    evhttp_connection_free(k->evcon); /* its bufferevent closes the socket and frees the SSL */
    free(k->addr);
    free(k->server_name);
    free(k);
}

/* Queues k to be freed from the loop. */
static void conn_bury(struct fg__hook_conn *k)
{
    struct fg__hook_pool *p = k->pool;
    k->next = p->closed;
    p->closed = k;
    event_active(p->reap, EV_TIMEOUT, 0);
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg__hook_pool *p = arg;
    while (p->closed) {
        struct fg__hook_conn *k = p->closed;
        p->closed = k->next;
        conn_free(k);
    }
}

enum fg_err fg__hook_pool_init(struct fg__hook_pool *p, struct event_base *base)
{
    memset(p, 0, sizeof(*p));
    p->base = base;
    p->reap = event_new(base, -1, 0, on_reap, p);
    return p->reap ? FG_OK : FG_E_NOMEM;
}

void fg__hook_pool_cleanup(struct fg__hook_pool *p)
{
    while (p->idle) {
        struct fg__hook_conn *k = p->idle;
        p->idle = k->next;
        conn_free(k);
    }
    on_reap(-1, 0, p);
    if (p->reap)
        event_free(p->reap);
    while (p->tls) {
        struct fg__hook_tls *t = p->tls;
        p->tls = t->next;
        SSL_CTX_free(t->ctx);
        free(t->ca);
        free(t);
    }
    if (p->dns)
        evdns_base_free(p->dns, 0);
    memset(p, 0, sizeof(*p));
}

enum fg_err fg__hook_pool_ctx(struct fg__hook_pool *p, const void *ca, size_t ca_len, SSL_CTX **out, char *errmsg)
{
    for (struct fg__hook_tls *t = p->tls; t; t = t->next) {
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
    struct fg__hook_tls *t = fg_calloc(1, sizeof(*t));
    t->ca = ca_len ? fg_malloc(ca_len) : NULL;
    if (ca_len)
        memcpy(t->ca, ca, ca_len);
    t->ca_len = ca_len;
    t->ctx = ctx;
    t->next = p->tls;
    p->tls = t;
    *out = ctx;
    return FG_OK;
}

static void idle_remove(struct fg__hook_pool *p, struct fg__hook_conn *k)
{
    for (struct fg__hook_conn **at = &p->idle; *at; at = &(*at)->next) {
        if (*at == k) {
            *at = k->next;
            p->nidle--;
            return;
        }
    }
}

struct fg__hook_conn *fg__hook_pool_take(struct fg__hook_pool *p, const char *addr, const char *server_name,
                                         SSL_CTX *ctx)
{
    for (struct fg__hook_conn *k = p->idle; k; k = k->next) {
        if (k->ctx == ctx && !strcmp(k->addr, addr) && !strcmp(k->server_name, server_name)) {
            idle_remove(p, k);
            k->busy = true;
            return k;
        }
    }
    return NULL;
}

/* libevent closed the connection: an idle one goes at once, a busy one when its call lets it go. */
static void on_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct fg__hook_conn *k = arg;
    k->closed = true;
    if (!k->busy) {
        idle_remove(k->pool, k);
        conn_bury(k);
    }
}

void fg__hook_conn_release(struct fg__hook_conn *k, bool keep)
{
    struct fg__hook_pool *p = k->pool;
    k->busy = false;
    if (keep && !k->closed && p->nidle < IDLE_MAX) {
        k->reused = true;
        k->next = p->idle;
        p->idle = k;
        p->nidle++;
    } else {
        conn_bury(k);
    }
}

static bool is_address(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Sets TCP_NODELAY when the handshake starts, on the socket libevent made, as Go's dialer does:
 * libevent writes a request's head and body as two TLS records, and with Nagle's algorithm the
 * second would wait for the peer's delayed acknowledgement of the first (40 ms). */
static void on_tls_state(const SSL *ssl, int where, int ret)
{
    (void)ret;
    int fd = (where & SSL_CB_HANDSHAKE_START) ? SSL_get_fd(ssl) : -1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
}

/* An SSL for a connection to server_name: SNI and the name or address the certificate must hold. */
static SSL *ssl_new(SSL_CTX *ctx, const char *server_name)
{
    SSL *ssl = SSL_new(ctx);
    if (ssl)
        SSL_set_info_callback(ssl, on_tls_state);
    bool named = !is_address(server_name);
    if (ssl && named)
        SSL_set_tlsext_host_name(ssl, server_name);
    int checked = !ssl ? 0 : named ? SSL_set1_host(ssl, server_name)
                                   : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name);
    if (ssl && !checked) {
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

enum fg_err fg__hook_conn_new(struct fg__hook_pool *p, const char *host, int port, const char *addr,
                              const char *server_name, SSL_CTX *ctx, struct fg__hook_conn **out, char *errmsg)
{
    struct evdns_base *dns = NULL;
    if (!is_address(host)) {
        if (!p->dns)
            p->dns = evdns_base_new(p->base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
        if (!(dns = p->dns)) /* without one libevent would resolve on the loop, blocking it */
            return fg_errmsg(errmsg, FG_E_CONNECT, "dial tcp: lookup %s: no resolver", host);
    }
    SSL *ssl = ssl_new(ctx, server_name);
    struct bufferevent *bev = ssl ? bufferevent_openssl_socket_new(p->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                                   BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)
                                  : NULL;
    struct evhttp_connection *evcon = bev ? evhttp_connection_base_bufferevent_new(p->base, dns, bev, host,
                                                                                   (unsigned short)port)
                                          : NULL;
    if (!evcon) {
        if (bev)
            bufferevent_free(bev);
        else if (ssl)
            SSL_free(ssl);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot set up a TLS connection");
    }
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    evhttp_connection_set_timeout(evcon, IDLE_TIMEOUT_S);
    evhttp_connection_set_max_body_size(evcon, FG__HOOK_MAX_REPLY);
    evhttp_connection_set_max_headers_size(evcon, MAX_HEADERS);
    struct fg__hook_conn *k = fg_calloc(1, sizeof(*k));
    k->pool = p;
    k->evcon = evcon;
    k->addr = fg_strdup(addr);
    k->server_name = fg_strdup(server_name);
    k->ctx = ctx;
    k->busy = true;
    evhttp_connection_set_closecb(evcon, on_close, k);
    *out = k;
    return FG_OK;
}
