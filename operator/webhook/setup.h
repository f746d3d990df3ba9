/*
 * setup — the admission webhook on a manager: what `fracgpu operator` runs for it.
 *
 * On every replica: the caches an admission reads (sources.h), the HTTPS server (server.h) started as
 * a runnable, a watch of the certificate Secret that hands each new serving certificate to the server,
 * and a readiness check "webhook" that passes once a certificate is served — so a replica joins the
 * Service's endpoints only when it can answer. On the leader: the certificate reconciler
 * (cert_reconciler.h), which keeps the Secret and the webhook configuration's caBundle.
 */
#ifndef FG_WEBHOOK_SETUP_H
#define FG_WEBHOOK_SETUP_H

#include "base/err.h"
#include "operator/manager/manager.h"
#include "operator/webhook/certs.h"
#include "reconcilers/workload.h"

struct fg_webhook_opts {
    const char *listen;             /* ":9443" */
    const char *ns;                 /* where the Secret lives (the operator's namespace) */
    const char *secret;             /* "fracgpu-webhook-tls" */
    const char *config;             /* the MutatingWebhookConfiguration: "fracgpu" */
    const char *service;            /* the Service in front of the replicas: "fracgpu-webhook" */
    int64_t ca_lifetime_ms, serving_lifetime_ms, switch_delay_ms;
    const struct fg_workload_kinds *kinds;
};

/* Defaults: ":9443", fracgpu-webhook-tls, fracgpu, fracgpu-webhook; a CA for 5 years, serving
 * certificates for 90 days, a switch delay of 5 minutes. */
#define FG_WEBHOOK_OPTS_DEFAULT                                                                                      \
    { .listen = ":9443", .secret = "fracgpu-webhook-tls", .config = "fracgpu", .service = "fracgpu-webhook",          \
      .ca_lifetime_ms = 5 * 365 * 86400000ll, .serving_lifetime_ms = 90 * 86400000ll,                              \
      .switch_delay_ms = 5 * 60000ll, .kinds = &fg_workload_builtin_kinds }

/* Registers everything on m (before it starts); strings in opts must outlive m. FG_E_INVAL for a
 * certificate policy that breaks certs.h's rules, FG_E_IO when the listen address cannot be bound. */
enum fg_err fg_webhook_setup(struct fg_manager *m, const struct fg_webhook_opts *opts, char *errmsg) FG_MUST_USE;

#endif
