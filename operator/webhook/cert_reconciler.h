/*
 * cert_reconciler — applies the certificate plan (certs.h) to the cluster; leader-only.
 *
 * One key: the Secret that holds the webhook's CA and serving certificate. Reconciling it reads the
 * Secret and the MutatingWebhookConfiguration from the caches, plans the next step, writes the
 * Secret when the step changes it (creating it when absent; an update carries the cached
 * resourceVersion, so a concurrent writer wins and the step is planned again), then makes every
 * webhook of the configuration trust exactly the Secret's ca.crt — a JSON Patch that tests the
 * configuration's resourceVersion first. Every step is an Event on the Secret. The key is requeued
 * for when the plan's next step falls due; a change of either object reconciles it at once.
 *
 * A configuration that is not installed (yet) is waited for: the Secret is still kept, and the
 * caBundle written once the configuration appears.
 */
#ifndef FG_WEBHOOK_CERT_RECONCILER_H
#define FG_WEBHOOK_CERT_RECONCILER_H

#include "base/err.h"
#include "operator/cache/informer.h"
#include "operator/manager/manager.h"
#include "operator/webhook/certs.h"

struct fg_cert_reconciler_opts {
    const char *ns;                 /* the Secret's namespace */
    const char *secret;             /* its name */
    const char *config;             /* the MutatingWebhookConfiguration's name */
    struct fg_cert_policy policy;
};

/* Registers the controller on m; `secrets` is the informer of the Secret (its namespace, its name),
 * whose every replica's handlers the caller may share. Strings in opts must outlive m. */
enum fg_err fg_cert_reconciler_setup(struct fg_manager *m, const struct fg_cert_reconciler_opts *opts,
                                     struct fg_informer *secrets, char *errmsg) FG_MUST_USE;

/* The Secret's data (base64 members of obj's "data") decoded into *out; absent members stay NULL. */
void fg_cert_state_from_secret(json_object *secret, struct fg_cert_state *out);

#endif
