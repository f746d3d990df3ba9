/*
 * test_tls — a throw-away self-signed certificate for the HTTPS tests, issued with base/pki.h.
 *
 * The certificate names IP:127.0.0.1, DNS:localhost and DNS:api.fracgpu.test, so a client can
 * verify the fake server by address or through a TLS server name override.
 */
#ifndef FG_KUBE_TEST_TLS_H
#define FG_KUBE_TEST_TLS_H

#include <openssl/ssl.h>

struct test_tls {
    char *cert_pem;
    char *key_pem;
    SSL_CTX *server_ctx;   /* serves the certificate */
    SSL_CTX *mtls_ctx;     /* serves it and requires a client certificate signed by it (itself) */
};

void test_tls_init(struct test_tls *t);
void test_tls_cleanup(struct test_tls *t);

#endif
