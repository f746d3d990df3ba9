/*
 * tls — HTTPS for the test API server: a fresh certificate per server and TLS on every connection.
 *
 * With --tls the server issues itself (base/pki.h) an EC P-256 key and a self-signed certificate
 * (CN fracgpu-test-apiserver, SAN IP:<listen address> and DNS:localhost, CA:TRUE so it can stand as
 * its own root) valid for a day, and hands evhttp a bufferevent callback that wraps each accepted
 * connection in OpenSSL.
 * No ALPN is offered, so Go clients (kubectl) speak HTTP/1.1. The PEM certificate goes into the
 * kubeconfig as certificate-authority-data, which is what makes a client trust it; the key never
 * leaves the process. The server owns the SSL_CTX.
 */
#include "e2e/apiserver/server.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/pki.h"

enum fg_err fg__tls_init(struct fg_apiserver *srv, char *errmsg)
{
    static const char *const dns[] = { "localhost", NULL };
    const char *ips[] = { srv->host, NULL };
    int64_t now = fg_clock_wall_ms();
    struct fg_pki_request req = { "fracgpu-test-apiserver", dns, ips, true, now - 3600 * 1000, now + 86400 * 1000 };
    struct fg_pki_pair pair;
    enum fg_err err = fg_pki_issue(&req, NULL, &pair, errmsg);
    if (err != FG_OK)
        return fg_errmsg(errmsg, err, "cannot make the server certificate");
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 || fg_pki_ctx_use(ctx, &pair, errmsg) != FG_OK) {
        SSL_CTX_free(ctx);
        fg_pki_pair_cleanup(&pair);
        return fg_errmsg(errmsg, FG_E_IO, "cannot make the server's TLS context");
    }
    srv->cert_pem = pair.cert_pem;
    free(pair.key_pem); /* the key lives on in the context only */
    srv->ssl_ctx = ctx;
    return FG_OK;
}

void fg__tls_cleanup(struct fg_apiserver *srv)
{
    SSL_CTX_free(srv->ssl_ctx);
    free(srv->cert_pem);
    srv->ssl_ctx = NULL;
    srv->cert_pem = NULL;
}

static struct bufferevent *on_connection(struct event_base *base, void *arg)
{
    struct fg_apiserver *srv = arg;
    SSL *ssl = SSL_new(srv->ssl_ctx);
    return ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE)
               : NULL;
}

void fg__tls_attach(struct fg_apiserver *srv)
{
    if (srv->ssl_ctx)
        evhttp_set_bevcb(srv->http, on_connection, srv);
}
