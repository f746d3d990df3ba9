/* test_tls — see test_tls.h. Any failure aborts: the tests cannot run without it. */
#include "test_tls.h"

#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/pki.h"

void test_tls_init(struct test_tls *t)
{
    static const char *const dns[] = { "localhost", "api.fracgpu.test", NULL };
    static const char *const ips[] = { "127.0.0.1", NULL };
    int64_t now = fg_clock_wall_ms();
    /* a CA that is its own server and client certificate */
    struct fg_pki_request req = { "fracgpu-test", dns, ips, true, now - 3600 * 1000, now + 86400 * 1000 };
    struct fg_pki_pair pair;
    if (fg_pki_issue(&req, NULL, &pair, NULL) != FG_OK)
        abort();
    t->cert_pem = pair.cert_pem;
    t->key_pem = pair.key_pem;
    t->server_ctx = SSL_CTX_new(TLS_server_method());
    t->mtls_ctx = SSL_CTX_new(TLS_server_method());
    BIO *b = BIO_new_mem_buf(pair.cert_pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    if (!t->server_ctx || !t->mtls_ctx || fg_pki_ctx_use(t->server_ctx, &pair, NULL) != FG_OK ||
        fg_pki_ctx_use(t->mtls_ctx, &pair, NULL) != FG_OK || !x ||
        X509_STORE_add_cert(SSL_CTX_get_cert_store(t->mtls_ctx), x) != 1)
        abort();
    SSL_CTX_set_verify(t->mtls_ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    /* a verifying server must name its sessions, or resuming one (a second client connection) fails */
    SSL_CTX_set_session_id_context(t->mtls_ctx, (const unsigned char *)"fracgpu-test", 12);
    X509_free(x);
    BIO_free(b);
}

void test_tls_cleanup(struct test_tls *t)
{
    free(t->cert_pem);
    free(t->key_pem);
    SSL_CTX_free(t->server_ctx);
    SSL_CTX_free(t->mtls_ctx);
    memset(t, 0, sizeof *t);
}
