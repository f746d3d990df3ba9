/*
 * server — the webhook's HTTPS endpoint: POST /mutate-pods on a thread of its own.
 *
 * kube-apiserver keeps connections alive and sends AdmissionReviews one per request; the server
 * answers each on its own event loop and thread, so a slow reconcile or a relist on the manager's loop
 * never delays an admission. It reads the cluster only through the fg_admit_sources it is given,
 * whose caches are thread-safe.
 *
 * TLS: the serving certificate arrives through fg_webhook_server_set_cert, from any thread, whenever
 * the Secret changes; it is loaded into a new SSL_CTX that every connection accepted afterwards uses
 * (connections already open keep theirs). Until a certificate is set the server accepts nothing:
 * ready() is false.
 *
 * Answers: 200 with the AdmissionReview response for every review it can read (fracgpu never blocks
 * a pod); 400 with a message, logged and counted, for a body that is not an AdmissionReview; 413 for
 * one over FG_REVIEW_MAX; 404 elsewhere; 405 for a method other than POST. Metrics:
 * fracgpu_webhook_admissions_total{outcome}, fracgpu_webhook_bad_requests_total and
 * fracgpu_webhook_admission_seconds.
 */
#ifndef FG_WEBHOOK_SERVER_H
#define FG_WEBHOOK_SERVER_H

#include <stdbool.h>

#include "base/err.h"
#include "base/metrics.h"
#include "base/pki.h"
#include "operator/webhook/admit.h"

#define FG_WEBHOOK_PATH "/mutate-pods"

struct fg_webhook_server;

struct fg_webhook_server_opts {
    const char *listen;                     /* "HOST:PORT" or ":PORT" */
    const struct fg_admit_sources *sources; /* borrowed for the server's life */
    struct fg_metrics *metrics;             /* where its metrics register */
};

/* Binds the listen address. FG_E_INVAL / FG_E_IO with errmsg. */
enum fg_err fg_webhook_server_new(const struct fg_webhook_server_opts *opts, struct fg_webhook_server **out,
                                  char *errmsg) FG_MUST_USE;
/* Serves pair from the next connection on. FG_E_INVAL when it does not load; the current one stays. */
enum fg_err fg_webhook_server_set_cert(struct fg_webhook_server *s, const struct fg_pki_pair *pair,
                                       char *errmsg) FG_MUST_USE;
bool fg_webhook_server_ready(struct fg_webhook_server *s);
unsigned fg_webhook_server_port(const struct fg_webhook_server *s);
/* Starts the server's thread. */
enum fg_err fg_webhook_server_start(struct fg_webhook_server *s, char *errmsg) FG_MUST_USE;
/* Stops the thread (answers in progress finish) and frees everything. NULL is ignored. */
void fg_webhook_server_free(struct fg_webhook_server *s);

#endif
