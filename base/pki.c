/* The one way fracgpu makes and reads X.509 certificates (pki.h). */
#include "base/pki.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/mem.h"

static const char *ssl_why(void)
{
    const char *why = ERR_reason_error_string(ERR_get_error());
    return why ? why : "OpenSSL error";
}

static X509 *cert_from_pem(const char *pem)
{
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    return x;
}

static EVP_PKEY *key_from_pem(const char *pem)
{
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    return k;
}

static char *bio_text(BIO *b)
{
    char *data = NULL;
    long len = BIO_get_mem_data(b, &data);
    return fg_strndup(data, (size_t)len);
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* "DNS:a,DNS:b,IP:127.0.0.1" from the request, or NULL when it names none. */
static char *san_of(const struct fg_pki_request *req)
{
    struct fg_buf b = FG_BUF_INIT;
    enum fg_err err = FG_OK;
    for (const char *const *d = req->dns; d && *d; d++)
        err = err ? err : fg_buf_printf(&b, "%sDNS:%s", b.len ? "," : "", *d);
    for (const char *const *i = req->ips; i && *i; i++)
        err = err ? err : fg_buf_printf(&b, "%sIP:%s", b.len ? "," : "", *i);
    if (err != FG_OK || b.len == 0) {
        fg_buf_cleanup(&b);
        return NULL;
    }
    return fg_buf_take(&b);
}

static bool set_serial(X509 *cert)
{
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof(serial)) != 1)
        abort(); /* OpenSSL's generator fails only when it cannot seed itself */
    serial[0] &= 0x7f; /* positive */
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
    ASN1_INTEGER *sn = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
    bool ok = sn && X509_set_serialNumber(cert, sn) == 1;
    ASN1_INTEGER_free(sn);
    BN_free(bn);
    return ok;
}

static bool set_time(ASN1_TIME *t, int64_t ms)
{
    return ASN1_TIME_set(t, (time_t)(ms / 1000)) != NULL;
}

/* Builds and signs the certificate; false on an OpenSSL failure. */
static bool build(X509 *cert, EVP_PKEY *key, const struct fg_pki_request *req, X509 *issuer_cert, EVP_PKEY *issuer_key)
{
    X509_NAME *name = X509_get_subject_name(cert);
    char *san = san_of(req);
    const unsigned char *cn = (const unsigned char *)req->common_name;
    bool ok = X509_set_version(cert, 2) == 1 && set_serial(cert) &&
              set_time(X509_getm_notBefore(cert), req->not_before_ms) &&
              set_time(X509_getm_notAfter(cert), req->not_after_ms) && X509_set_pubkey(cert, key) == 1 &&
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, cn, -1, -1, 0) == 1 &&
              X509_set_issuer_name(cert, issuer_cert ? X509_get_subject_name(issuer_cert) : name) == 1;
    X509 *signer = issuer_cert ? issuer_cert : cert;
    ok = ok && add_ext(cert, signer, NID_subject_key_identifier, "hash") &&
         (!issuer_cert || add_ext(cert, signer, NID_authority_key_identifier, "keyid:always"));
    if (req->is_ca)
        ok = ok && add_ext(cert, signer, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(cert, signer, NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign");
    else
        ok = ok && add_ext(cert, signer, NID_basic_constraints, "critical,CA:FALSE") &&
             add_ext(cert, signer, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
             add_ext(cert, signer, NID_ext_key_usage, "serverAuth");
    ok = ok && (!san || add_ext(cert, signer, NID_subject_alt_name, san)) &&
         X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()) > 0;
    free(san);
    return ok;
}

enum fg_err fg_pki_issue(const struct fg_pki_request *req, const struct fg_pki_pair *issuer, struct fg_pki_pair *out,
                         char *errmsg)
{
    memset(out, 0, sizeof(*out));
    X509 *issuer_cert = issuer ? cert_from_pem(issuer->cert_pem) : NULL;
    EVP_PKEY *issuer_key = issuer ? key_from_pem(issuer->key_pem) : NULL;
    if (issuer && (!issuer_cert || !issuer_key || X509_check_private_key(issuer_cert, issuer_key) != 1)) {
        ERR_clear_error();
        X509_free(issuer_cert);
        EVP_PKEY_free(issuer_key);
        return fg_errmsg(errmsg, FG_E_INVAL, "the issuing CA's certificate and key do not parse or do not match");
    }
    enum fg_err err = FG_OK;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = key ? X509_new() : NULL;
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    if (!cert || !cb || !kb || !build(cert, key, req, issuer_cert, issuer_key) || PEM_write_bio_X509(cb, cert) != 1 ||
        PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1) {
        err = fg_errmsg(errmsg, FG_E_IO, "cannot issue a certificate for %s: %s", req->common_name, ssl_why());
    } else {
        out->cert_pem = bio_text(cb);
        out->key_pem = bio_text(kb);
    }
    BIO_free(cb);
    BIO_free(kb);
    X509_free(cert);
    EVP_PKEY_free(key);
    X509_free(issuer_cert);
    EVP_PKEY_free(issuer_key);
    return err;
}

void fg_pki_pair_cleanup(struct fg_pki_pair *p)
{
    free(p->cert_pem);
    free(p->key_pem);
    p->cert_pem = p->key_pem = NULL;
}

enum fg_err fg_pki_ctx_use(SSL_CTX *ctx, const struct fg_pki_pair *pair, char *errmsg)
{
    X509 *x = cert_from_pem(pair->cert_pem);
    EVP_PKEY *k = key_from_pem(pair->key_pem);
    bool ok = x && k && SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_use_PrivateKey(ctx, k) == 1 &&
              SSL_CTX_check_private_key(ctx) == 1;
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    return ok ? FG_OK : fg_errmsg(errmsg, FG_E_INVAL, "the certificate and key do not parse or do not match");
}

static bool time_ms(const ASN1_TIME *t, int64_t *ms)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1)
        return false;
    *ms = (int64_t)timegm(&tm) * 1000;
    return true;
}

enum fg_err fg_pki_validity(const char *pem, int64_t *not_before_ms, int64_t *not_after_ms, char *errmsg)
{
    X509 *x = cert_from_pem(pem);
    bool ok = x && time_ms(X509_get0_notBefore(x), not_before_ms) && time_ms(X509_get0_notAfter(x), not_after_ms);
    X509_free(x);
    return ok ? FG_OK : fg_errmsg(errmsg, FG_E_PARSE, "no PEM certificate with a readable validity");
}

char **fg_pki_split(const char *pem, size_t *n)
{
    char **out = fg_calloc(1, sizeof(*out));
    *n = 0;
    BIO *in = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x;
    while (in && (x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
        BIO *b = BIO_new(BIO_s_mem());
        if (b && PEM_write_bio_X509(b, x) == 1) {
            out = fg_realloc(out, (*n + 2) * sizeof(*out));
            out[(*n)++] = bio_text(b);
            out[*n] = NULL;
        }
        BIO_free(b);
        X509_free(x);
    }
    ERR_clear_error();
    BIO_free(in);
    return out;
}

bool fg_pki_pair_matches(const struct fg_pki_pair *pair)
{
    X509 *x = cert_from_pem(pair->cert_pem);
    EVP_PKEY *k = key_from_pem(pair->key_pem);
    bool ok = x && k && X509_check_private_key(x, k) == 1;
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    return ok;
}

bool fg_pki_verifies(const char *leaf_pem, const char *ca_pem, const char *dns_name, int64_t now_ms)
{
    X509 *leaf = cert_from_pem(leaf_pem), *ca = cert_from_pem(ca_pem);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    bool ok = leaf && ca && store && ctx && X509_STORE_add_cert(store, ca) == 1 &&
              X509_STORE_CTX_init(ctx, store, leaf, NULL) == 1;
    if (ok) {
        X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
        X509_VERIFY_PARAM_set_time(param, (time_t)(now_ms / 1000));
        ok = (!dns_name || X509_VERIFY_PARAM_set1_host(param, dns_name, 0) == 1) && X509_verify_cert(ctx) == 1;
    }
    ERR_clear_error();
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(leaf);
    X509_free(ca);
    return ok;
}
