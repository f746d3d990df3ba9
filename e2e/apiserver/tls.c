/*
 * tls — HTTPS for the test API server: a fresh certificate per server and TLS on every connection.
 *
 * With --tls the server makes an EC P-256 key and a self-signed certificate (CN fracgpu-test-apiserver,
 * SAN IP:<listen address> and DNS:localhost, CA:TRUE so it can stand as its own root) valid for a
 * day, and hands evhttp a bufferevent callback that wraps each accepted connection in OpenSSL.
 * No ALPN is offered, so Go clients (kubectl) speak HTTP/1.1. The PEM certificate goes into the
 * kubeconfig as certificate-authority-data, which is what makes a client trust it; the key never
 * leaves the process. The server owns the SSL_CTX.
 */
#include "e2e/apiserver/server.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

static bool add_ext(X509 *cert, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* A self-signed certificate for host (an IP address) with key; NULL on failure. */
static X509 *make_cert(EVP_PKEY *key, const char *host)
{
    X509 *cert = X509_new();
    if (!cert)
        return NULL;
    unsigned char serial[16];
    ASN1_INTEGER *sn = ASN1_INTEGER_new();
    BIGNUM *bn = NULL;
    char *san = fg_asprintf("IP:%s,DNS:localhost", host);
    if (RAND_bytes(serial, sizeof(serial)) != 1)
        abort(); /* OpenSSL's generator fails only when it cannot seed itself */
    serial[0] &= 0x7f; /* a positive serial */
    bool ok = sn && (bn = BN_bin2bn(serial, sizeof(serial), NULL)) && BN_to_ASN1_INTEGER(bn, sn) &&
              X509_set_version(cert, 2) == 1 && X509_set_serialNumber(cert, sn) == 1 &&
              X509_gmtime_adj(X509_getm_notBefore(cert), -3600) && X509_gmtime_adj(X509_getm_notAfter(cert), 86400) &&
              X509_set_pubkey(cert, key) == 1;
    X509_NAME *name = ok ? X509_get_subject_name(cert) : NULL;
    ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fracgpu-test-apiserver",
                                          -1, -1, 0) == 1 &&
         X509_set_issuer_name(cert, name) == 1 && add_ext(cert, NID_basic_constraints, "critical,CA:TRUE") &&
         add_ext(cert, NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign") &&
         add_ext(cert, NID_ext_key_usage, "serverAuth") && add_ext(cert, NID_subject_alt_name, san) &&
         X509_sign(cert, key, EVP_sha256()) > 0;
    free(san);
    BN_free(bn);
    ASN1_INTEGER_free(sn);
    if (!ok) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}

enum fg_err fg__tls_init(struct fg_apiserver *srv, char *errmsg)
{
    enum fg_err err = FG_OK;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = key ? make_cert(key, srv->host) : NULL;
    SSL_CTX *ctx = cert ? SSL_CTX_new(TLS_server_method()) : NULL;
    BIO *pem = ctx ? BIO_new(BIO_s_mem()) : NULL;
    if (!pem || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 || PEM_write_bio_X509(pem, cert) != 1) {
        const char *why = ERR_reason_error_string(ERR_get_error());
        err = fg_errmsg(errmsg, FG_E_IO, "cannot make the server certificate: %s", why ? why : "OpenSSL error");
        SSL_CTX_free(ctx);
        goto out;
    }
    char *data = NULL;
    long len = BIO_get_mem_data(pem, &data);
    srv->cert_pem = fg_strndup(data, (size_t)len);
    srv->ssl_ctx = ctx;
out:
    BIO_free(pem);
    X509_free(cert);
    EVP_PKEY_free(key);
    return err;
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
