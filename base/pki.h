/*
 * pki — the one way fracgpu makes and reads X.509 certificates (OpenSSL).
 *
 * The webhook keeps its own CA and serving certificate; the test API server serves HTTPS with a
 * certificate of its own; tests need CAs and leaves to trust or refuse. All of them issue through
 * fg_pki_issue: a fresh EC P-256 key, a random positive 127-bit serial, SHA-256, the subject's common
 * name, DNS and IP subject alternative names, and either CA:TRUE (keyCertSign, for a CA) or a
 * serverAuth leaf. Certificates and keys travel as PEM text, as Kubernetes Secrets (tls.crt, tls.key)
 * and caBundle fields hold them.
 */
#ifndef FG_BASE_PKI_H
#define FG_BASE_PKI_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* A certificate and its private key, PEM, owned. */
struct fg_pki_pair {
    char *cert_pem;
    char *key_pem;
};

struct fg_pki_request {
    const char *common_name;
    const char *const *dns;     /* NULL-terminated; NULL for none */
    const char *const *ips;     /* NULL-terminated; NULL for none */
    bool is_ca;
    int64_t not_before_ms, not_after_ms;    /* since the epoch */
};

/* Issues a certificate for a new key, self-signed when issuer is NULL, else signed by issuer's key
 * and naming issuer's subject. FG_E_INVAL for an issuer whose PEM does not parse or whose key does
 * not match its certificate; FG_E_IO for an OpenSSL failure. errmsg says which. */
enum fg_err fg_pki_issue(const struct fg_pki_request *req, const struct fg_pki_pair *issuer, struct fg_pki_pair *out,
                         char *errmsg) FG_MUST_USE;
void fg_pki_pair_cleanup(struct fg_pki_pair *p);

/* Makes pair ctx's certificate and key. FG_E_INVAL when they do not parse or do not match. */
enum fg_err fg_pki_ctx_use(SSL_CTX *ctx, const struct fg_pki_pair *pair, char *errmsg) FG_MUST_USE;

/* The validity window of the first certificate in pem. FG_E_PARSE when there is none. */
enum fg_err fg_pki_validity(const char *pem, int64_t *not_before_ms, int64_t *not_after_ms, char *errmsg) FG_MUST_USE;

/* The certificates of a PEM bundle ("ca.crt", a caBundle), each as its own PEM, in order: a new
 * NULL-terminated array (free each and the array). Text that is not a certificate is skipped. */
char **fg_pki_split(const char *pem, size_t *n);

/* Whether pair's key belongs to its certificate (both parse). */
bool fg_pki_pair_matches(const struct fg_pki_pair *pair);

/* Whether the first certificate in leaf_pem verifies against the CA certificate ca_pem at time now_ms
 * (signature, validity of both, CA constraints); for a leaf, also that it names dns_name. */
bool fg_pki_verifies(const char *leaf_pem, const char *ca_pem, const char *dns_name, int64_t now_ms);

#endif
