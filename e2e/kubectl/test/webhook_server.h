/*
 * webhook_server — an HTTPS admission webhook the kubectl tests serve themselves.
 *
 * It listens on 127.0.0.1 (port 0) with a certificate made by the openssl command for
 * IP:127.0.0.1 and DNS:e2e-webhook.default.svc (so that a Service e2e-webhook in default, with an
 * EndpointSlice pointing here, can front it), on a thread of its own that starts a thread per
 * connection (kept alive for more reviews), and answers AdmissionReviews according to its mode:
 * MUTATE allows with a JSONPatch adding the label mutated-by=e2e-webhook, SLOW allows after sleeping
 * past any short timeoutSeconds, DENY refuses with "no pods today"; NOT_JSON, WRONG_UID and
 * WRONG_KIND answer garbage (a body that is not JSON, another uid, a review of another kind). Every
 * answer leaves delay_ms after its review arrived (reading and parsing it included). It counts the
 * reviews it answered and the connections it accepted, keeps the last review (and its operation and
 * kind), and can be told to drop kept-alive connections when they are used again. It parses a review
 * without its object and old object, which it never reads, so that it costs little of the cores it
 * shares with the server in benchmarks.
 */
#ifndef FG_E2E_KUBECTL_WEBHOOK_SERVER_H
#define FG_E2E_KUBECTL_WEBHOOK_SERVER_H

#include <json-c/json.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum kcw_mode { KCW_MUTATE, KCW_SLOW, KCW_DENY, KCW_NOT_JSON, KCW_WRONG_UID, KCW_WRONG_KIND };

#define KCW_SLOW_MS 2500
/* The Service name and namespace the certificate is good for (as e2e-webhook.default.svc). */
#define KCW_SERVICE_NAME "e2e-webhook"
#define KCW_SERVICE_NAMESPACE "default"

struct kcw_server {
    int fd;
    uint16_t port;
    SSL_CTX *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    enum kcw_mode mode;   /* under mu */
    unsigned delay_ms;    /* under mu */
    unsigned conns;       /* connection threads running, under mu */
    unsigned accepted;    /* connections accepted, under mu */
    bool drop_reused;     /* close a connection, unanswered, on any request but its first; under mu */
    int conn_fds[64];     /* their sockets (-1: free slot), under mu */
    unsigned reviews;     /* under mu */
    char last_op[16];     /* under mu */
    char last_kind[64];   /* under mu */
    char *last_review;    /* the last review's JSON as received, under mu */
    char *ca_b64;         /* the certificate, base64 PEM, for caBundle */
};

/* Makes the certificate in dir and starts serving; false on failure (with a message on stderr). */
bool kcw_start(struct kcw_server *w, const char *dir, enum kcw_mode mode);
void kcw_stop(struct kcw_server *w);
unsigned kcw_reviews(struct kcw_server *w);
/* Connections accepted so far. */
unsigned kcw_accepted(struct kcw_server *w);
/* drop: from now on, a request that is not a connection's first is not answered and the connection
 * is closed, as a server closing an idle kept-alive connection under a client's feet would. */
void kcw_drop_reused(struct kcw_server *w, bool drop);
/* The last review received, parsed (caller puts), or NULL when none came. */
json_object *kcw_last_review(struct kcw_server *w);
/* Changes how the next reviews are answered. */
void kcw_set_mode(struct kcw_server *w, enum kcw_mode mode, unsigned delay_ms);

#endif
