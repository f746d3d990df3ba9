/*
 * webhook — admission webhooks, called as kube-apiserver calls them.
 *
 * On every create and update (of anything but the webhook configurations themselves) the server
 * walks the stored MutatingWebhookConfigurations (before schema validation) or
 * ValidatingWebhookConfigurations (after it), and for each webhook whose rules (operations,
 * apiGroups, apiVersions, resources, scope), namespaceSelector (on the namespace's labels, a
 * Namespace's own for a Namespace) and objectSelector (on the object's labels, or the old object's
 * on an update) match, POSTs an admission.k8s.io/v1 AdmissionReview to
 * clientConfig.url, or to the endpoint of clientConfig.service (webhook_service.c), with
 * `?timeout=Ns`, over HTTPS verified against the caBundle. A reply must echo
 * the request's uid. allowed:false refuses the write with the webhook's status (400 and "admission
 * webhook \"NAME\" denied the request: ..." unless it says otherwise); a mutating webhook's
 * base64 JSONPatch is applied to the object. A call that fails or times out (timeoutSeconds, default
 * 10) refuses the write with 500 under failurePolicy Fail (the default) and is skipped under Ignore.
 *
 * Calls do not block the loop: each goes out through the server's asynchronous client
 * (hook_client.h) and the write waiting for it is suspended; when the call ends the write goes on
 * from the object the webhook was given (fg__admission_resume), so what a validating webhook saw of
 * what a create generated (the name from generateName, uid, creationTimestamp, all filled after the
 * mutating webhooks, as kube-apiserver's registry fills them) is what is stored; an update whose stored object
 * changed meanwhile runs again from the start, the webhooks already called answering from their
 * recorded replies (struct fg__admission in admit.h). A write to a subresource (status, resize) goes
 * only to webhooks whose rules name it (resource_named: "pods/status", or a "*" after the slash), a
 * rule "pods" or "*" taking main resources alone, and its review carries subResource. Writes made by
 * the server itself (binding, eviction, seeding namespaces) call no webhooks: a webhook whose rules
 * name pods/binding or pods/eviction is not called for them (not served).
 */
#include "e2e/apiserver/admit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/defaults.h"
#include "e2e/apiserver/hook_client.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/random.h"
#include "operator/kube/selector.h"
#include "e2e/apiserver/status.h"
#include "e2e/apiserver/store_int.h"

#define DEFAULT_TIMEOUT_S 10
#define MAX_REPLY (4u << 20)

static bool list_has(json_object *list, const char *want)
{
    for (size_t i = 0; i < fg_json_array_len(list); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(list, i));
        if (fg_str_eq(s, "*") || fg_str_eq(s, want))
            return true;
    }
    return false;
}

/* Does a rule's resources entry name this resource and subresource (NULL: the main resource)? As
 * kube's matcher splits an entry: the part before '/' is the resource, the rest the subresource (""
 * when none), each matched exactly or by "*" — so "pods" and "*" take only main resources,
 * "pods/status" the status of pods, and "pods" followed by "/" and "*" pods and every subresource. */
static bool resource_named(const char *entry, const char *plural, const char *sub)
{
    if (!entry)
        return false;
    const char *slash = strchr(entry, '/');
    size_t len = slash ? (size_t)(slash - entry) : strlen(entry);
    const char *want_sub = slash ? slash + 1 : "";
    bool res_ok = (len == 1 && entry[0] == '*') || (strlen(plural) == len && !strncmp(entry, plural, len));
    return res_ok && (!strcmp(want_sub, "*") || !strcmp(want_sub, sub ? sub : ""));
}

static bool resources_match(json_object *list, const char *plural, const char *sub)
{
    for (size_t i = 0; i < fg_json_array_len(list); i++)
        if (resource_named(json_object_get_string(json_object_array_get_idx(list, i)), plural, sub))
            return true;
    return false;
}

static bool rules_match(json_object *hook, const struct fg__type *type, const char *sub, const char *op)
{
    json_object *rules = fg_json_get(hook, "rules", NULL);
    for (size_t i = 0; i < fg_json_array_len(rules); i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        const char *scope = fg_json_get_str(r, "scope", NULL);
        bool scope_ok = !scope || !strcmp(scope, "*") || !strcmp(scope, type->namespaced ? "Namespaced" : "Cluster");
        if (scope_ok && list_has(fg_json_get(r, "operations", NULL), op) &&
            list_has(fg_json_get(r, "apiGroups", NULL), type->group) &&
            list_has(fg_json_get(r, "apiVersions", NULL), type->version) &&
            resources_match(fg_json_get(r, "resources", NULL), type->plural, sub))
            return true;
    }
    return false;
}

/* Does the label selector (absent = everything) accept obj's labels? A malformed one matches nothing. */
static bool selector_accepts(json_object *selector, json_object *obj)
{
    if (!selector)
        return true;
    struct fg_selector sel;
    char msg[FG_ERRMSG_MAX];
    if (fg_selector_from_json(selector, &sel, msg) != FG_OK)
        return false;
    bool ok = fg_selector_match_labels(&sel, obj);
    fg_selector_cleanup(&sel);
    return ok;
}

/* Do the webhook's rules and selectors take this write of obj (cur: the stored object an update
 * replaces, else NULL)? The objectSelector is met by either the new or the old object; the
 * namespaceSelector reads the labels of the object's namespace, or of the object itself when it is a
 * Namespace, as kube-apiserver's matchers do. */
static bool hook_applies(struct fg__store *st, json_object *hook, const struct fg__type *type, const char *op,
                         json_object *obj, json_object *cur)
{
    json_object *obj_selector = fg_json_get(hook, "objectSelector", NULL);
    if (!rules_match(hook, type, st->admission->subresource, op) ||
        !(selector_accepts(obj_selector, obj) || (cur && selector_accepts(obj_selector, cur))))
        return false;
    json_object *ns_selector = fg_json_get(hook, "namespaceSelector", NULL);
    const struct fg__type *nst = fg__write_namespaces_type(st);
    if (type == nst)
        return selector_accepts(ns_selector, obj);
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    if (!type->namespaced || !ns || !ns_selector)
        return true;
    const struct fg__entry *nse = nst ? fg__store_get(st, nst, NULL, ns) : NULL;
    return nse && selector_accepts(ns_selector, nse->obj);
}

/* {"group":G,"version":V,<last_key>:last} */
static json_object *group_version(const struct fg__type *type, const char *last_key, const char *last)
{
    json_object *o = json_object_new_object();
    fg_json_set_str(o, "group", type->group);
    fg_json_set_str(o, "version", type->version);
    fg_json_set_str(o, last_key, last);
    return o;
}

/* The AdmissionReview text, written by json-c with the object in it; an update's oldObject is the
 * stored object's text, put in before the closing braces rather than written again. */
static char *review(const struct fg__type *type, const char *sub, const char *uid, const char *op, json_object *obj,
                    json_object *cur, struct fg__text *cur_text, bool dry_run)
{
    json_object *req = json_object_new_object(), *user = json_object_new_object(), *groups = json_object_new_array();
    json_object *kind = group_version(type, "kind", type->kind);
    json_object *resource = group_version(type, "resource", type->plural);
    fg_json_set_str(req, "uid", uid);
    json_object_object_add(req, "kind", kind);
    json_object_object_add(req, "resource", resource);
    json_object_object_add(req, "requestKind", json_object_get(kind));
    json_object_object_add(req, "requestResource", json_object_get(resource));
    fg_json_set_str(req, "subResource", sub);
    fg_json_set_str(req, "requestSubResource", sub);
    fg_json_set_str(req, "name", fg_json_get_str(obj, "metadata", "name", NULL));
    fg_json_set_str(req, "namespace", fg_json_get_str(obj, "metadata", "namespace", NULL));
    fg_json_set_str(req, "operation", op);
    fg_json_set_str(user, "username", "kubernetes-admin");
    json_object_array_add(groups, json_object_new_string("system:masters"));
    json_object_array_add(groups, json_object_new_string("system:authenticated"));
    json_object_object_add(user, "groups", groups);
    json_object_object_add(req, "userInfo", user);
    json_object_object_add(req, "object", json_object_get(obj));
    json_object_object_add(req, "dryRun", json_object_new_boolean(dry_run));
    if (cur && !cur_text)
        json_object_object_add(req, "oldObject", json_object_get(cur));
    json_object *doc = json_object_new_object();
    fg_json_set_str(doc, "apiVersion", "admission.k8s.io/v1");
    fg_json_set_str(doc, "kind", "AdmissionReview");
    json_object_object_add(doc, "request", req);
    size_t len = 0;
    const char *text = fg_json_text(doc, &len);
    struct fg_buf b = FG_BUF_INIT;
    if (cur && !cur_text) {
        fg_buf_put(&b, text, len);
    } else { /* text ends with the "}}" of request and review */
        static const char old_key[] = ",\"oldObject\":";
        fg_buf_put(&b, text, len - 2);
        fg_buf_put(&b, old_key, sizeof(old_key) - 1);
        fg_buf_put(&b, cur_text ? cur_text->data : "null", cur_text ? cur_text->len : 4);
        fg_buf_put(&b, "}}", 2);
    }
    json_object_put(doc);
    return fg_buf_take(&b);
}

struct fg__hook_reply {
    char *key;       /* "configuration/webhook" the call went to */
    char uid[37];    /* the review's uid */
    enum fg_err err; /* FG_E_BUSY while in flight */
    json_object *reply;
    char msg[FG_ERRMSG_MAX];
};

void fg__admission_init(struct fg__admission *a, struct fg__hook_client *client, void (*on_ready)(void *ud),
                        void *ud)
{
    memset(a, 0, sizeof(*a));
    a->client = client;
    a->on_ready = on_ready;
    a->ud = ud;
}

/* Forgets the replies from index `from` on. */
static void truncate_replies(struct fg__admission *a, size_t from)
{
    for (size_t i = from; i < a->n; i++) {
        free(a->v[i].key);
        json_object_put(a->v[i].reply);
    }
    if (from < a->n)
        a->n = from;
}

static void drop_resume(struct fg__admission *a)
{
    json_object_put(a->resume);
    json_object_put(a->resume_cur);
    a->resume = a->resume_cur = NULL;
}

void fg__admission_cleanup(struct fg__admission *a)
{
    if (a->pending)
        fg__hook_call_cancel(a->pending);
    truncate_replies(a, 0);
    free(a->v);
    drop_resume(a);
    memset(a, 0, sizeof(*a));
}

bool fg__admission_resuming(const struct fg__admission *a, bool validating)
{
    return a && a->resuming && a->n && fg_str_has_prefix(a->v[a->n - 1].key, validating ? "validating/" : "mutating/");
}

json_object *fg__admission_resume(struct fg__admission *a, json_object *cur)
{
    if (!a || !a->resume)
        return NULL;
    json_object *obj = a->resume_cur == cur ? json_object_get(a->resume) : NULL;
    a->resuming = obj != NULL;
    drop_resume(a);
    return obj;
}

static void on_call_done(void *ud, enum fg_err err, json_object *reply, const char *errmsg)
{
    struct fg__admission *a = ud;
    struct fg__hook_reply *r = &a->v[a->n - 1];
    a->pending = NULL;
    r->err = err;
    r->reply = reply;
    snprintf(r->msg, sizeof(r->msg), "%s", errmsg);
    a->on_ready(a->ud);
}

/* Where a call goes: the URL with ?timeout=Ns, and for a service the endpoint's "ADDRESS:PORT", dialled
 * while TLS checks the Service's name. */
struct target {
    char *url;
    char *dial; /* NULL for clientConfig.url */
    long timeout_s;
};

static void target_cleanup(struct target *t)
{
    free(t->url);
    free(t->dial);
}

/* The target of a webhook; a service that cannot be resolved fails the call as kube's dialer does. */
static enum fg_err hook_target(struct fg__store *st, json_object *hook, struct target *t, char *errmsg)
{
    *t = (struct target){ .timeout_s = DEFAULT_TIMEOUT_S };
    int64_t timeout_s = DEFAULT_TIMEOUT_S;
    if (fg_json_get_int64(hook, &timeout_s, "timeoutSeconds", NULL) && timeout_s >= 1 && timeout_s <= 30)
        t->timeout_s = (long)timeout_s;
    const char *url = fg_json_get_str(hook, "clientConfig", "url", NULL);
    json_object *service = fg_json_get(hook, "clientConfig", "service", NULL);
    char *base = NULL, reason[FG_ERRMSG_MAX];
    enum fg_err err = FG_OK;
    if (url)
        base = fg_strdup(url);
    else if (service)
        err = fg__webhook_service(st, service, &base, &t->dial, reason);
    else
        return fg_errmsg(errmsg, FG_E_INVAL, "clientConfig needs a url or a service");
    if (base)
        t->url = fg_asprintf("%s%stimeout=%lds", base, strchr(base, '?') ? "&" : "?", t->timeout_s);
    free(base);
    if (err && t->url)
        fg_errmsg(errmsg, err, "failed to call webhook: Post \"%s\": %s", t->url, reason);
    else if (err)
        fg_errmsg(errmsg, err, "%s", reason);
    return err;
}

/* Starts the call of one webhook with the review; FG_E_BUSY once it is in flight, else the reason. */
static enum fg_err start_call(struct fg__store *st, json_object *hook, const char *key, const struct target *t,
                              const struct fg__type *type, const char *op, json_object *obj, json_object *cur,
                              char *errmsg)
{
    struct fg__admission *a = st->admission;
    const char *ca_b64 = fg_json_get_str(hook, "clientConfig", "caBundle", NULL);
    size_t ca_len = 0;
    unsigned char *ca = ca_b64 ? fg_base64_decode(ca_b64, &ca_len) : NULL;
    if (ca_b64 && !ca)
        return fg_errmsg(errmsg, FG_E_INVAL, "caBundle is not base64");
    truncate_replies(a, a->next);
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 4;
        a->v = fg_realloc(a->v, a->cap * sizeof(*a->v));
    }
    struct fg__hook_reply *r = &a->v[a->n];
    memset(r, 0, sizeof(*r));
    fg__random_uuid(r->uid);
    struct fg__text *cur_text = cur ? fg__store_text_of(st, type, cur) : NULL;
    char *text = review(type, a->subresource, r->uid, op, obj, cur, cur_text, st->dry_run);
    struct fg__hook_target target = { t->url, t->dial, ca, ca_len, t->timeout_s };
    enum fg_err err = fg__hook_client_post(a->client, &target, text, on_call_done, a, &a->pending, errmsg);
    if (!err) {
        r->key = fg_strdup(key);
        r->err = FG_E_BUSY;
        a->n++;
        err = FG_E_BUSY;
        drop_resume(a);
        a->resume = json_object_get(obj); /* the next run goes on from here */
        a->resume_cur = json_object_get(cur);
    }
    free(text);
    free(ca);
    return err;
}

/* The reply of the call of this webhook in this run: FG_OK with *reply (borrowed) and uid, FG_E_BUSY
 * while the call is in flight (started now when there was none), or the call's failure in errmsg. */
static enum fg_err hook_reply(struct fg__store *st, json_object *hook, const char *key, const struct fg__type *type,
                              const char *op, json_object *obj, json_object *cur, json_object **reply,
                              const char **uid, char *errmsg)
{
    struct fg__admission *a = st->admission;
    if (a->next >= a->n || strcmp(a->v[a->next].key, key)) {
        struct target t;
        enum fg_err err = hook_target(st, hook, &t, errmsg);
        if (!err)
            err = start_call(st, hook, key, &t, type, op, obj, cur, errmsg);
        target_cleanup(&t);
        return err;
    }
    struct fg__hook_reply *r = &a->v[a->next++];
    *reply = r->reply;
    *uid = r->uid;
    snprintf(errmsg, FG_ERRMSG_MAX, "%s", r->msg);
    return r->err;
}

/* Is the reply an admission.k8s.io/v1 AdmissionReview answering this uid? The reason in errmsg if not. */
static enum fg_err check_reply(json_object *reply, const char *uid, char *errmsg)
{
    const char *got = fg_json_get_str(reply, "response", "uid", NULL);
    if (!fg_str_eq(fg_json_get_str(reply, "apiVersion", NULL), "admission.k8s.io/v1") ||
        !fg_str_eq(fg_json_get_str(reply, "kind", NULL), "AdmissionReview"))
        return fg_errmsg(errmsg, FG_E_PARSE, "received invalid webhook response: expected an admission.k8s.io/v1 "
                         "AdmissionReview");
    if (!fg_str_eq(got, uid))
        return fg_errmsg(errmsg, FG_E_PARSE, "expected response.uid=\"%s\", got \"%s\"", uid, got ? got : "");
    return FG_OK;
}

/* Applies a mutating webhook's base64 JSONPatch to *obj (replaced). */
static enum fg_err apply_patch(json_object *response, json_object **obj, char *errmsg)
{
    const char *patch_b64 = fg_json_get_str(response, "patch", NULL);
    if (!patch_b64)
        return FG_OK;
    if (!fg_str_eq(fg_json_get_str(response, "patchType", NULL), "JSONPatch"))
        return fg_errmsg(errmsg, FG_E_INVAL, "unsupported patchType");
    size_t len = 0;
    unsigned char *text = fg_base64_decode(patch_b64, &len);
    json_object *ops = NULL, *patched = NULL;
    enum fg_err err = text ? fg_json_parse((const char *)text, len, MAX_REPLY, &ops, errmsg)
                           : fg_errmsg(errmsg, FG_E_PARSE, "patch is not base64");
    if (!err && (err = fg__patch_json(*obj, ops, &patched, errmsg)) == FG_OK) {
        json_object_put(*obj);
        *obj = patched;
    }
    json_object_put(ops);
    free(text);
    return err;
}

json_object *fg__webhook_denial(const char *hook, json_object *status)
{
    int64_t code = 0;
    fg_json_get_int64(status, &code, "code", NULL);
    if (code < 400)
        code = 400; /* a refusal is never a success */
    const char *message = fg_json_get_str(status, "message", NULL);
    const char *reason = fg_json_get_str(status, "reason", NULL);
    const char *why = message && *message ? message : reason && *reason ? reason : NULL;
    char *text = why ? fg_asprintf("admission webhook \"%s\" denied the request: %s", hook ? hook : "", why)
                     : fg_asprintf("admission webhook \"%s\" denied the request without explanation", hook ? hook : "");
    json_object *out = fg__status_new((int)code, reason && *reason ? reason : NULL, text, NULL);
    free(text);
    return out;
}

/* Calls one webhook; FG_OK (possibly with *obj mutated), FG_E_BUSY while its call is in flight, or
 * an error with *out the Status. */
static enum fg_err run_hook(struct fg__store *st, json_object *hook, const char *key, const struct fg__type *type,
                            const char *op, json_object *cur, json_object **obj, bool mutating, json_object **out)
{
    const char *name = fg_json_get_str(hook, "name", NULL);
    bool ignore = fg_str_eq(fg_json_get_str(hook, "failurePolicy", NULL), "Ignore");
    char msg[FG_ERRMSG_MAX];
    json_object *reply = NULL;
    const char *uid = NULL;
    enum fg_err err = hook_reply(st, hook, key, type, op, *obj, cur, &reply, &uid, msg);
    if (err == FG_E_BUSY)
        return err;
    if (!err)
        err = check_reply(reply, uid, msg);
    json_object *response = fg_json_get(reply, "response", NULL);
    if (!err && !json_object_get_boolean(fg_json_get(response, "allowed", NULL))) {
        *out = fg__webhook_denial(name, fg_json_get(response, "status", NULL));
        return FG_E_KUBE_BAD_REQUEST; /* a refusal; the code sent is the Status's */
    }
    if (!err && mutating && (err = apply_patch(response, obj, msg)) == FG_OK)
        fg__defaults_apply(type, *obj); /* kube defaults what a webhook patched, as it decodes it */
    if (err && ignore) {
        err = FG_OK;
    } else if (err) {
        char *text = fg_asprintf("Internal error occurred: failed calling webhook \"%s\": %s", name ? name : "", msg);
        *out = fg__status_new(500, "InternalError", text, NULL);
        free(text);
        err = FG_E_KUBE_INTERNAL;
    }
    return err;
}

enum fg_err fg__webhook_admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                              bool mutating, json_object **out)
{
    if (!st->admission || !strcmp(type->group, "admissionregistration.k8s.io"))
        return FG_OK;
    const struct fg__type *cfg_type = fg__registry_find(st->reg, "admissionregistration.k8s.io", "v1",
                                                        mutating ? "mutatingwebhookconfigurations"
                                                                 : "validatingwebhookconfigurations");
    struct fg__bucket *b = cfg_type ? fg__store_bucket(st, cfg_type) : NULL;
    const char *op = cur ? "UPDATE" : "CREATE";
    struct fg__admission *a = st->admission;
    bool resuming = fg__admission_resuming(a, !mutating); /* the webhooks up to the last call are done */
    for (size_t i = 0; b && i < b->n; i++) {
        json_object *cfg = json_object_get(b->v[i]->obj); /* a webhook cannot change it, but hold it anyway */
        json_object *hooks = fg_json_get(cfg, "webhooks", NULL);
        enum fg_err err = FG_OK;
        for (size_t k = 0; !err && k < fg_json_array_len(hooks); k++) {
            json_object *hook = json_object_array_get_idx(hooks, k);
            if (!hook_applies(st, hook, type, op, *obj, cur))
                continue;
            const char *cfg_name = fg_json_get_str(cfg, "metadata", "name", NULL);
            const char *hook_name = fg_json_get_str(hook, "name", NULL);
            char *key = fg_asprintf("%s/%s/%s", mutating ? "mutating" : "validating", cfg_name ? cfg_name : "",
                                    hook_name ? hook_name : "");
            if (resuming && strcmp(key, a->v[a->n - 1].key)) {
                free(key); /* done before the write waited, its patch in *obj */
                continue;
            }
            if (resuming) {
                resuming = a->resuming = false;
                a->next = a->n - 1;
            }
            err = run_hook(st, hook, key, type, op, cur, obj, mutating, out);
            free(key);
        }
        json_object_put(cfg);
        if (err)
            return err;
    }
    if (resuming)
        a->resuming = false; /* its webhook is gone meanwhile: go on without it */
    return FG_OK;
}
