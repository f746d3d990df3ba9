/*
 * webhook_server — an HTTPS admission webhook the kubectl tests serve themselves.
 *
 * It listens on 127.0.0.1 (port 0) with a certificate made by the openssl command for
 * IP:127.0.0.1, on a thread of its own, one connection at a time, and answers AdmissionReviews
 * according to its mode: MUTATE allows with a JSONPatch adding the label mutated-by=e2e-webhook,
 * SLOW allows after sleeping past any short timeoutSeconds, DENY refuses with "no pods today".
 * It counts the reviews it received and keeps the last one's operation and kind.
 */
#ifndef FG_E2E_KUBECTL_WEBHOOK_SERVER_H
#define FG_E2E_KUBECTL_WEBHOOK_SERVER_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum kcw_mode { KCW_MUTATE, KCW_SLOW, KCW_DENY };

#define KCW_SLOW_MS 2500

struct kcw_server {
    int fd;
    uint16_t port;
    SSL_CTX *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    bool stop;
    enum kcw_mode mode;
    unsigned reviews;     /* under mu */
    char last_op[16];     /* under mu */
    char last_kind[64];   /* under mu */
    char *ca_b64;         /* the certificate, base64 PEM, for caBundle */
};

/* Makes the certificate in dir and starts serving; false on failure (with a message on stderr). */
bool kcw_start(struct kcw_server *w, const char *dir, enum kcw_mode mode);
void kcw_stop(struct kcw_server *w);
unsigned kcw_reviews(struct kcw_server *w);

#endif
