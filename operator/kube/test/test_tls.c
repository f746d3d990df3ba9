/* test_tls — see test_tls.h. Any OpenSSL failure aborts: the tests cannot run without it. */
#include "test_tls.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

static char *bio_text(BIO *b)
{
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = fg_strndup(data, (size_t)n);
    BIO_free(b);
    return s;
}

static void add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext || !X509_add_ext(x, ext, -1))
        abort();
    X509_EXTENSION_free(ext);
}

void test_tls_init(struct test_tls *t)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!key || !x)
        abort();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fracgpu-test", -1, -1, 0);
    X509_set_issuer_name(x, name);
    add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost,DNS:api.fracgpu.test");
    if (!X509_sign(x, key, EVP_sha256()))
        abort();
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    t->cert_pem = bio_text(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
    t->key_pem = bio_text(b);
    t->server_ctx = SSL_CTX_new(TLS_server_method());
    if (!t->server_ctx || SSL_CTX_use_certificate(t->server_ctx, x) != 1 ||
        SSL_CTX_use_PrivateKey(t->server_ctx, key) != 1)
        abort();
    t->mtls_ctx = SSL_CTX_new(TLS_server_method());
    if (!t->mtls_ctx || SSL_CTX_use_certificate(t->mtls_ctx, x) != 1 ||
        SSL_CTX_use_PrivateKey(t->mtls_ctx, key) != 1 ||
        X509_STORE_add_cert(SSL_CTX_get_cert_store(t->mtls_ctx), x) != 1)
        abort();
    SSL_CTX_set_verify(t->mtls_ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    /* a verifying server must name its sessions, or resuming one (a second client connection) fails */
    SSL_CTX_set_session_id_context(t->mtls_ctx, (const unsigned char *)"fracgpu-test", 12);
    X509_free(x);
    EVP_PKEY_free(key);
}

void test_tls_cleanup(struct test_tls *t)
{
    free(t->cert_pem);
    free(t->key_pem);
    SSL_CTX_free(t->server_ctx);
    SSL_CTX_free(t->mtls_ctx);
    memset(t, 0, sizeof *t);
}
