/*
 * certs — the webhook's own CA and serving certificate, and their rotation, decided without I/O.
 *
 * kube-apiserver calls the webhook over HTTPS and trusts the caBundle of the
 * MutatingWebhookConfiguration; the operator keeps both ends itself, in Secret fracgpu-webhook-tls:
 *   ca.crt   the CAs the webhook configuration must trust: the signing CA first, then a retiring one
 *   ca.key   the signing CA's key
 *   tls.crt, tls.key   the serving certificate (signed by one of the trusted CAs) every replica serves
 * fg_cert_plan looks at what the Secret holds, what the webhook configuration trusts now, and the
 * time, and returns the Secret's next state — one step at a time, so a reconciler applies it, writes
 * the caBundle, and asks again:
 *   empty or unusable (no CA whose key matches)  → a new CA and a serving certificate from it
 *   serving certificate missing, not matching its key, not naming the service or not from a trusted CA
 *                                                → a new one from the signing CA
 *   serving certificate from a retiring CA, once the webhook configuration trusts the new CA and it has
 *   done so for switch_delay                     → a new serving certificate from the new CA
 *   serving certificate past 2/3 of its life     → a new one from the signing CA
 *   signing CA past 2/3 of its life              → a new CA, trusted beside the old: ca.crt = new, old
 *   a retiring CA that signs nothing in use, switch_delay after the serving certificate changed, or an
 *   expired one                                  → dropped from ca.crt
 * So at every moment the certificate any replica serves is signed by a CA kube-apiserver trusts: old
 * and new CA are both trusted through the switch. Certificates are backdated by FG_CERT_BACKDATE_MS
 * against clock skew; their issue time is read back as notBefore + that.
 */
#ifndef FG_WEBHOOK_CERTS_H
#define FG_WEBHOOK_CERTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define FG_CERT_BACKDATE_MS (3600ll * 1000)

/* The Secret's data (decoded PEM text); NULL for a key it lacks. */
struct fg_cert_state {
    char *ca_crt, *ca_key, *tls_crt, *tls_key;
};

struct fg_cert_policy {
    int64_t ca_lifetime_ms;
    int64_t serving_lifetime_ms;    /* at most ca_lifetime_ms / 3, so a CA outlives what it signs */
    int64_t switch_delay_ms;        /* how long kube-apiserver must have trusted a CA before it is used */
    const char *const *dns;         /* the names the serving certificate carries (NULL-terminated, ≥ 1) */
};

struct fg_cert_plan {
    bool changed;                   /* next differs from the current state: write the Secret */
    struct fg_cert_state next;      /* owned: fg_cert_state_cleanup */
    const char *action;             /* static, for the Event and the log: "IssuedCA", "RenewedServing", ... */
    int64_t recheck_ms;             /* when the next step falls due (wall clock), if nothing changes before */
};

/* FG_E_INVAL, errmsg saying which, for a policy that breaks the rules above. */
enum fg_err fg_cert_policy_check(const struct fg_cert_policy *p, char *errmsg) FG_MUST_USE;

/* Plans from cur (borrowed), the caBundle the webhook configuration holds now (NULL: none) and now_ms.
 * FG_E_INVAL for a policy that breaks its rules; FG_E_IO when OpenSSL cannot issue. */
enum fg_err fg_cert_plan(const struct fg_cert_state *cur, const char *webhook_bundle, const struct fg_cert_policy *p,
                         int64_t now_ms, struct fg_cert_plan *out, char *errmsg) FG_MUST_USE;
void fg_cert_plan_cleanup(struct fg_cert_plan *plan);
void fg_cert_state_cleanup(struct fg_cert_state *s);

#endif
