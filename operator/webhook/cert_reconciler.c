/* Applies the certificate plan to the cluster (cert_reconciler.h). */
#include "operator/webhook/cert_reconciler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/kobj.h"
#include "operator/cache/store.h"
#include "operator/kube/event.h"
#include "operator/kube/resource.h"
#include "operator/manager/controllers.h"
#include "operator/manager/informers.h"

#define COMPONENT "webhook-certs"

struct fg_cert_reconciler {
    struct fg_kube_client *client;
    struct fg_store *secrets, *configs;
    struct fg_cert_reconciler_opts o;
    char key[512];                  /* "<ns>/<secret>" */
    struct fg_counter *steps;
};

static const char *const data_keys[] = { "ca.crt", "ca.key", "tls.crt", "tls.key" };

static char **state_field(struct fg_cert_state *s, size_t i)
{
    char **f[] = { &s->ca_crt, &s->ca_key, &s->tls_crt, &s->tls_key };
    return f[i];
}

void fg_cert_state_from_secret(json_object *secret, struct fg_cert_state *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < 4; i++) {
        const char *b64 = fg_json_get_str(secret, "data", data_keys[i], NULL);
        *state_field(out, i) = b64 ? (char *)fg_base64_decode(b64, NULL) : NULL;
    }
}

/* The CAs every webhook of the configuration trusts, when they all trust the same; else NULL. */
static char *trusted_bundle(json_object *config)
{
    json_object *hooks = fg_json_get(config, "webhooks", NULL);
    const char *first = NULL;
    for (size_t i = 0; i < fg_json_array_len(hooks); i++) {
        const char *b = fg_json_get_str(json_object_array_get_idx(hooks, i), "clientConfig", "caBundle", NULL);
        if (!b || (first && strcmp(first, b)))
            return NULL;
        first = b;
    }
    return first ? (char *)fg_base64_decode(first, NULL) : NULL;
}

static void emit(struct fg_cert_reconciler *r, json_object *secret, const char *action)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "webhook certificates: %s", action);
    struct fg_kube_event ev = { "Normal", action, msg, "fracgpu-operator", NULL };
    if (fg_kube_event_emit(r->client, secret, &ev) != FG_OK)
        fg_log(FG_LOG_DEBUG, COMPONENT, "cannot record the %s event", action);
}

/* Writes the Secret's next state: an update of the cached one, or a create. */
static enum fg_err write_secret(struct fg_cert_reconciler *r, json_object *cur, const struct fg_cert_state *next,
                                json_object **written)
{
    json_object *obj = cur ? json_object_get(cur) : json_object_new_object();
    if (!cur) {
        fg_json_set_str(obj, "apiVersion", "v1");
        fg_json_set_str(obj, "kind", "Secret");
        json_object *meta = fg_json_ensure_obj(obj, "metadata");
        fg_json_set_str(meta, "name", r->o.secret);
        fg_json_set_str(meta, "namespace", r->o.ns);
        fg_json_set_str(obj, "type", "Opaque");
    }
    json_object *data = json_object_new_object();
    for (size_t i = 0; i < 4; i++) {
        const char *v = *state_field((struct fg_cert_state *)next, i);
        if (v) {
            char *b64 = fg_base64_encode(v, strlen(v));
            fg_json_set_str(data, data_keys[i], b64);
            free(b64);
        }
    }
    json_object_object_add(obj, "data", data);
    struct fg_kube_status st = { 0 };
    char *path = fg_kube_path(&fg_kube_secrets, r->o.ns, cur ? r->o.secret : NULL, NULL, NULL);
    enum fg_err err = cur ? fg_kube_update(r->client, path, obj, written, &st)
                          : fg_kube_create(r->client, path, obj, written, &st);
    if (err != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "cannot write Secret %s/%s: %s", r->o.ns, r->o.secret,
               st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(obj);
    return err;
}

/* Makes every webhook of config trust ca_crt. */
static enum fg_err write_bundle(struct fg_cert_reconciler *r, json_object *config, const char *ca_crt)
{
    char *b64 = fg_base64_encode(ca_crt, strlen(ca_crt));
    json_object *ops = fg_json_patch_tested(config);
    json_object *hooks = fg_json_get(config, "webhooks", NULL);
    for (size_t i = 0; i < fg_json_array_len(hooks); i++) {
        json_object *op = json_object_new_object();
        char path[64];
        snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
        fg_json_set_str(op, "op", "add");
        fg_json_set_str(op, "path", path);
        fg_json_set_str(op, "value", b64);
        json_object_array_add(ops, op);
    }
    char *path = fg_kube_path(&fg_kube_mutatingwebhookconfigurations, NULL, r->o.config, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_patch(r->client, path, FG_KUBE_PATCH_JSON, fg_json_text(ops, NULL), NULL, &st);
    if (err != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "cannot write the caBundle of %s: %s", r->o.config,
               st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(ops);
    free(b64);
    return err;
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_cert_reconciler *r = ud;
    (void)key;
    json_object *secret = fg_store_get_json(r->secrets, r->key);
    json_object *config = fg_store_get_json(r->configs, r->o.config);
    struct fg_cert_state cur;
    fg_cert_state_from_secret(secret, &cur);
    char *bundle = trusted_bundle(config);
    struct fg_cert_plan plan;
    char why[FG_ERRMSG_MAX] = "";
    int64_t now = fg_clock_wall_ms();
    enum fg_err err = fg_cert_plan(&cur, bundle, &r->o.policy, now, &plan, why);
    if (err != FG_OK)
        fg_log(FG_LOG_ERROR, COMPONENT, "cannot plan the webhook's certificates: %s", why);
    json_object *written = NULL;
    if (!err && plan.changed && (err = write_secret(r, secret, &plan.next, &written)) == FG_OK) {
        fg_counter_add(r->steps, 1);
        fg_log(FG_LOG_INFO, COMPONENT, "Secret %s/%s: %s", r->o.ns, r->o.secret, plan.action);
        emit(r, written, plan.action);
    }
    const char *ca = !err ? plan.next.ca_crt : NULL;
    if (!err && config && ca && (!bundle || strcmp(bundle, ca)))
        err = write_bundle(r, config, ca);
    int64_t recheck = !err ? plan.recheck_ms : 0;
    json_object_put(written);
    fg_cert_plan_cleanup(&plan);
    fg_cert_state_cleanup(&cur);
    free(bundle);
    json_object_put(secret);
    json_object_put(config);
    if (err != FG_OK)
        return fg_reconcile_error(err);
    uint64_t after_ms = recheck > now ? (uint64_t)(recheck - now) : 1000;
    return (struct fg_reconcile_result){ FG_OK, after_ms * FG_NS_PER_MS };
}

static void map_to_secret(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct fg_cert_reconciler *r = ud;
    (void)obj;
    fg_keys_add(out, r->key);
}

static void seed(void *ud, struct fg_keys *out)
{
    map_to_secret(ud, NULL, out);
}

enum fg_err fg_cert_reconciler_setup(struct fg_manager *m, const struct fg_cert_reconciler_opts *opts,
                                     struct fg_informer *secrets, char *errmsg)
{
    struct fg_informer *configs;
    enum fg_err err = fg_informer_factory_get_named(fg_manager_informers(m), &fg_kube_mutatingwebhookconfigurations,
                                                    NULL, opts->config, &configs, errmsg);
    if (err != FG_OK)
        return err;
    struct fg_cert_reconciler *r = fg_calloc(1, sizeof(*r));
    fg_manager_on_free(m, free, r);
    r->client = fg_manager_client(m);
    r->secrets = fg_informer_store(secrets);
    r->configs = fg_informer_store(configs);
    r->o = *opts;
    snprintf(r->key, sizeof(r->key), "%s/%s", opts->ns, opts->secret);
    r->steps = fg_metrics_counter(fg_manager_metrics(m), "fracgpu_webhook_certificate_steps_total",
                                  "Certificate steps written to the webhook's Secret (issue, renew, rotate, retire).",
                                  NULL);
    struct fg_manager_controller *c;
    struct fg_controller_spec spec = { .name = "webhook-certs", .kind = "Secret", .workers = 1,
                                       .reconcile = reconcile, .ud = r, .primary = secrets, .seed = seed,
                                       .seed_ud = r };
    err = fg_manager_controller(m, &spec, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, configs, map_to_secret, r, NULL, errmsg);
    return err;
}
