/* The admission webhook on a manager (setup.h). */
#include "operator/webhook/setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/kobj.h"
#include "operator/kube/resource.h"
#include "operator/manager/informers.h"
#include "operator/webhook/cert_reconciler.h"
#include "operator/webhook/server.h"
#include "operator/webhook/sources.h"

#define COMPONENT "webhook"

struct webhook {
    struct fg_webhook_server *server;
    struct fg_admit_sources sources;
    char *serving;                  /* the certificate handed to the server last (loop thread) */
    const char *const *dns;
};

/* A Secret event: a new, usable serving certificate goes to the server. */
static void load(void *ud, struct fg_kobj *obj)
{
    struct webhook *w = ud;
    json_object *secret = NULL;
    if (fg_kobj_parse(obj, &secret, NULL) != FG_OK)
        return;
    struct fg_cert_state s;
    fg_cert_state_from_secret(secret, &s);
    json_object_put(secret);
    if (s.tls_crt && s.tls_key && (!w->serving || strcmp(w->serving, s.tls_crt))) {
        struct fg_pki_pair pair = { s.tls_crt, s.tls_key };
        char why[FG_ERRMSG_MAX] = "";
        if (fg_webhook_server_set_cert(w->server, &pair, why) == FG_OK) {
            free(w->serving);
            w->serving = fg_strdup(s.tls_crt);
            fg_log(FG_LOG_INFO, COMPONENT, "serving a new certificate");
        } else {
            fg_log(FG_LOG_WARN, COMPONENT, "the Secret's serving certificate is unusable: %s", why);
        }
    }
    fg_cert_state_cleanup(&s);
}

static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    load(ud, obj);
}

static void on_delete(void *ud, struct fg_kobj *obj)
{
    (void)ud, (void)obj; /* keep serving what we have: the leader writes a new Secret */
}

static enum fg_err ready(void *ud, char *errmsg)
{
    struct webhook *w = ud;
    return fg_webhook_server_ready(w->server) ? FG_OK
                                              : fg_errmsg(errmsg, FG_E_BUSY, "no serving certificate yet");
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct webhook *w = ud;
    return fg_webhook_server_start(w->server, errmsg);
}

static void stop(void *ud)
{
    struct webhook *w = ud;
    fg_webhook_server_free(w->server);
    w->server = NULL;
}

static void webhook_free(void *ud)
{
    struct webhook *w = ud;
    fg_webhook_server_free(w->server);
    free(w->serving);
    free((void *)w->dns[0]);
    free((void *)w->dns[1]);
    free((void *)w->dns);
    free(w);
}

enum fg_err fg_webhook_setup(struct fg_manager *m, const struct fg_webhook_opts *o, char *errmsg)
{
    struct fg_webhook_caches *caches;
    enum fg_err err = fg_webhook_caches_setup(m, o->kinds, &caches, errmsg);
    if (err != FG_OK)
        return err;
    struct webhook *w = fg_calloc(1, sizeof(*w));
    const char **dns = fg_calloc(4, sizeof(*dns)); /* the names kube-apiserver dials a Service by */
    dns[0] = fg_asprintf("%s.%s.svc", o->service, o->ns);
    dns[1] = fg_asprintf("%s.%s", o->service, o->ns);
    dns[2] = o->service;
    w->dns = dns;
    fg_manager_on_free(m, webhook_free, w);
    fg_webhook_caches_sources(caches, &w->sources);
    struct fg_webhook_server_opts so = { o->listen, &w->sources, fg_manager_metrics(m) };
    if ((err = fg_webhook_server_new(&so, &w->server, errmsg)) != FG_OK)
        return err;

    struct fg_informer *secrets;
    err = fg_informer_factory_get_named(fg_manager_informers(m), &fg_kube_secrets, o->ns, o->secret, &secrets, errmsg);
    static const struct fg_resource_handler handler = { load, on_update, on_delete };
    if (!err)
        err = fg_informer_add_handler(secrets, &handler, w);
    struct fg_runnable r = { "webhook", false, start, stop, w };
    if (!err)
        err = fg_manager_add_runnable(m, &r);
    if (!err)
        err = fg_manager_add_readyz(m, "webhook", ready, w);
    struct fg_cert_reconciler_opts co = {
        .ns = o->ns, .secret = o->secret, .config = o->config,
        .policy = { o->ca_lifetime_ms, o->serving_lifetime_ms, o->switch_delay_ms, w->dns },
    };
    if (!err) /* a policy that breaks the rules: say so at start, not at the first reconcile */
        err = fg_cert_policy_check(&co.policy, errmsg);
    if (!err)
        err = fg_cert_reconciler_setup(m, &co, secrets, errmsg);
    return err;
}
