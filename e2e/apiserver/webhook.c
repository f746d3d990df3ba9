/*
 * webhook — admission webhooks, called as kube-apiserver calls them.
 *
 * On every create and update (of anything but the webhook configurations themselves) the server
 * walks the stored MutatingWebhookConfigurations (before schema validation) or
 * ValidatingWebhookConfigurations (after it), and for each webhook whose rules (operations,
 * apiGroups, apiVersions, resources, scope), namespaceSelector (on the namespace's labels) and
 * objectSelector (on the object's labels) match, POSTs an admission.k8s.io/v1 AdmissionReview to
 * clientConfig.url with `?timeout=Ns`, over HTTPS verified against the caBundle. A reply must echo
 * the request's uid. allowed:false refuses the write with the webhook's status (400 and "admission
 * webhook \"NAME\" denied the request: ..." unless it says otherwise); a mutating webhook's
 * base64 JSONPatch is applied to the object. A call that fails or times out (timeoutSeconds, default
 * 10) refuses the write with 500 under failurePolicy Fail (the default) and is skipped under Ignore.
 *
 * The call blocks the server's loop for at most timeoutSeconds: this is a test server, and a
 * webhook served by the test itself runs on a thread of its own.
 */
#include "e2e/apiserver/admit.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/selector.h"
#include "e2e/apiserver/status.h"

#define DEFAULT_TIMEOUT_S 10
#define MAX_REPLY (4u << 20)

static bool list_has(json_object *list, const char *want)
{
    for (size_t i = 0; json_object_is_type(list, json_type_array) && i < json_object_array_length(list); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(list, i));
        if (fg_str_eq(s, "*") || fg_str_eq(s, want))
            return true;
    }
    return false;
}

static bool rules_match(json_object *hook, const struct fg__type *type, const char *op)
{
    json_object *rules = fg_json_get(hook, "rules", NULL);
    for (size_t i = 0; json_object_is_type(rules, json_type_array) && i < json_object_array_length(rules); i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        const char *scope = fg_json_get_str(r, "scope", NULL);
        bool scope_ok = !scope || !strcmp(scope, "*") || !strcmp(scope, type->namespaced ? "Namespaced" : "Cluster");
        if (scope_ok && list_has(fg_json_get(r, "operations", NULL), op) &&
            list_has(fg_json_get(r, "apiGroups", NULL), type->group) &&
            list_has(fg_json_get(r, "apiVersions", NULL), type->version) &&
            list_has(fg_json_get(r, "resources", NULL), type->plural))
            return true;
    }
    return false;
}

/* Does the label selector (absent = everything) accept obj's labels? A malformed one matches nothing. */
static bool selector_accepts(json_object *selector, json_object *obj)
{
    if (!selector)
        return true;
    struct fg__selector sel;
    char msg[FG_ERRMSG_MAX];
    if (fg__selector_from_json(selector, &sel, msg) != FG_OK)
        return false;
    bool ok = fg__selector_match_labels(&sel, obj);
    fg__selector_cleanup(&sel);
    return ok;
}

static bool hook_applies(struct fg__store *st, json_object *hook, const struct fg__type *type, const char *op,
                         json_object *obj)
{
    if (!rules_match(hook, type, op) || !selector_accepts(fg_json_get(hook, "objectSelector", NULL), obj))
        return false;
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    json_object *ns_selector = fg_json_get(hook, "namespaceSelector", NULL);
    if (!type->namespaced || !ns || !ns_selector)
        return true;
    const struct fg__type *nst = fg__registry_find(st->reg, "", "v1", "namespaces");
    const struct fg__entry *nse = nst ? fg__store_get(st, nst, NULL, ns) : NULL;
    return nse && selector_accepts(ns_selector, nse->obj);
}

static json_object *review(const struct fg__type *type, const char *uid, const char *op, json_object *obj,
                           json_object *cur)
{
    json_object *req = json_object_new_object();
    fg_json_set_str(req, "uid", uid);
    json_object *kind = json_object_new_object(), *resource = json_object_new_object();
    fg_json_set_str(kind, "group", type->group);
    fg_json_set_str(kind, "version", type->version);
    fg_json_set_str(kind, "kind", type->kind);
    fg_json_set_str(resource, "group", type->group);
    fg_json_set_str(resource, "version", type->version);
    fg_json_set_str(resource, "resource", type->plural);
    json_object_object_add(req, "kind", kind);
    json_object_object_add(req, "resource", resource);
    json_object_object_add(req, "requestKind", json_object_get(kind));
    json_object_object_add(req, "requestResource", json_object_get(resource));
    fg_json_set_str(req, "name", fg_json_get_str(obj, "metadata", "name", NULL));
    fg_json_set_str(req, "namespace", fg_json_get_str(obj, "metadata", "namespace", NULL));
    fg_json_set_str(req, "operation", op);
    json_object *user = json_object_new_object();
    fg_json_set_str(user, "username", "kubernetes-admin");
    json_object *groups = json_object_new_array();
    json_object_array_add(groups, json_object_new_string("system:masters"));
    json_object_array_add(groups, json_object_new_string("system:authenticated"));
    json_object_object_add(user, "groups", groups);
    json_object_object_add(req, "userInfo", user);
    json_object_object_add(req, "object", json_object_get(obj));
    json_object_object_add(req, "oldObject", json_object_get(cur));
    json_object_object_add(req, "dryRun", json_object_new_boolean(false));
    json_object *doc = json_object_new_object();
    fg_json_set_str(doc, "apiVersion", "admission.k8s.io/v1");
    fg_json_set_str(doc, "kind", "AdmissionReview");
    json_object_object_add(doc, "request", req);
    return doc;
}

/* Decodes base64 (whitespace and padding allowed); NULL when malformed. *len gets the size. */
static unsigned char *base64_decode(const char *s, size_t *len)
{
    size_t n = 0;
    char *clean = fg_malloc(strlen(s) + 1);
    for (const char *p = s; *p; p++)
        if (*p != '\n' && *p != '\r' && *p != ' ')
            clean[n++] = *p;
    clean[n] = '\0';
    unsigned char *out = fg_malloc(n / 4 * 3 + 1);
    int got = n % 4 ? -1 : EVP_DecodeBlock(out, (const unsigned char *)clean, (int)n);
    if (got < 0) {
        free(clean);
        free(out);
        return NULL;
    }
    size_t pad = (n && clean[n - 1] == '=') + (n > 1 && clean[n - 2] == '=');
    *len = (size_t)got - pad;
    out[*len] = '\0';
    free(clean);
    return out;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    return fg_buf_append(arg, data, size * nmemb) == FG_OK ? size * nmemb : 0;
}

/* POSTs the review; FG_OK with *reply the parsed response object, else a reason in errmsg. */
static enum fg_err call(json_object *hook, const char *url, long timeout_s, json_object *doc, json_object **reply,
                        char *errmsg)
{
    *reply = NULL;
    const char *ca_b64 = fg_json_get_str(hook, "clientConfig", "caBundle", NULL);
    size_t ca_len = 0;
    unsigned char *ca = ca_b64 ? base64_decode(ca_b64, &ca_len) : NULL;
    if (ca_b64 && !ca)
        return fg_errmsg(errmsg, FG_E_INVAL, "caBundle is not base64");
    CURL *curl = curl_easy_init();
    if (!curl) {
        free(ca);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot create an HTTP client");
    }
    struct fg_buf body;
    fg_buf_init(&body, MAX_REPLY);
    char *full_url = fg_asprintf("%s%stimeout=%lds", url, strchr(url, '?') ? "&" : "?", timeout_s);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json");
    const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    curl_easy_setopt(curl, CURLOPT_URL, full_url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_s * 1000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    if (ca) {
        struct curl_blob blob = { .data = ca, .len = ca_len, .flags = CURL_BLOB_COPY };
        curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
    }
    enum fg_err err = FG_OK;
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        err = fg_errmsg(errmsg, FG_E_TIMEOUT, "failed to call webhook: Post \"%s\": context deadline exceeded",
                        full_url);
    else if (rc != CURLE_OK)
        err = fg_errmsg(errmsg, FG_E_IO, "failed to call webhook: Post \"%s\": %s", full_url, curl_easy_strerror(rc));
    else if (code != 200)
        err = fg_errmsg(errmsg, FG_E_IO, "received invalid webhook response: HTTP %ld", code);
    else if (fg_json_parse(fg_buf_str(&body), body.len, MAX_REPLY, reply, errmsg) != FG_OK)
        err = fg_errmsg(errmsg, FG_E_PARSE, "received invalid webhook response: not JSON");
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    fg_buf_cleanup(&body);
    free(full_url);
    free(ca);
    return err;
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
    unsigned char *text = base64_decode(patch_b64, &len);
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

static void new_uid(char out[33])
{
    unsigned char b[16];
    if (RAND_bytes(b, sizeof(b)) != 1)
        abort(); /* OpenSSL's generator fails only when it cannot seed itself */
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Calls one webhook; FG_OK (possibly with *obj mutated) or an error with *out the Status. */
static enum fg_err run_hook(json_object *hook, const struct fg__type *type, const char *op, json_object *cur,
                            json_object **obj, bool mutating, json_object **out)
{
    const char *name = fg_json_get_str(hook, "name", NULL);
    const char *url = fg_json_get_str(hook, "clientConfig", "url", NULL);
    bool ignore = fg_str_eq(fg_json_get_str(hook, "failurePolicy", NULL), "Ignore");
    int64_t timeout_s = DEFAULT_TIMEOUT_S;
    fg_json_get_int64(hook, &timeout_s, "timeoutSeconds", NULL);
    if (timeout_s < 1 || timeout_s > 30)
        timeout_s = DEFAULT_TIMEOUT_S;
    char uid[33], msg[FG_ERRMSG_MAX];
    new_uid(uid);
    json_object *doc = review(type, uid, op, *obj, cur), *reply = NULL;
    enum fg_err err = url ? call(hook, url, (long)timeout_s, doc, &reply, msg)
                          : fg_errmsg(msg, FG_E_INVAL, "only clientConfig.url is supported");
    json_object *response = fg_json_get(reply, "response", NULL);
    if (!err && !fg_str_eq(fg_json_get_str(response, "uid", NULL), uid))
        err = fg_errmsg(msg, FG_E_PARSE, "expected response.uid=\"%s\", got \"%s\"", uid,
                        fg_json_get_str(response, "uid", NULL) ? fg_json_get_str(response, "uid", NULL) : "");
    if (!err && !json_object_get_boolean(fg_json_get(response, "allowed", NULL))) {
        int64_t code = 400;
        fg_json_get_int64(response, &code, "status", "code", NULL);
        const char *why = fg_json_get_str(response, "status", "message", NULL);
        char *text = fg_asprintf("admission webhook \"%s\" denied the request%s%s", name ? name : "",
                                 why ? ": " : "", why ? why : "");
        *out = fg__status_new((int)code, fg_json_get_str(response, "status", "reason", NULL), text, NULL);
        free(text);
        err = code == 403 ? FG_E_KUBE_FORBIDDEN : FG_E_KUBE_BAD_REQUEST;
        goto out;
    }
    if (!err && mutating)
        err = apply_patch(response, obj, msg);
    if (err && ignore) {
        err = FG_OK;
    } else if (err) {
        char *text = fg_asprintf("Internal error occurred: failed calling webhook \"%s\": %s", name ? name : "", msg);
        *out = fg__status_new(500, "InternalError", text, NULL);
        free(text);
        err = FG_E_KUBE_INTERNAL;
    }
out:
    json_object_put(reply);
    json_object_put(doc);
    return err;
}

enum fg_err fg__webhook_admit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object **obj,
                              bool mutating, json_object **out)
{
    if (!strcmp(type->group, "admissionregistration.k8s.io"))
        return FG_OK;
    const struct fg__type *cfg_type = fg__registry_find(st->reg, "admissionregistration.k8s.io", "v1",
                                                        mutating ? "mutatingwebhookconfigurations"
                                                                 : "validatingwebhookconfigurations");
    struct fg__bucket *b = cfg_type ? fg__store_bucket(st, cfg_type) : NULL;
    const char *op = cur ? "UPDATE" : "CREATE";
    for (size_t i = 0; b && i < b->n; i++) {
        json_object *cfg = json_object_get(b->v[i]->obj); /* a webhook cannot change it, but hold it anyway */
        json_object *hooks = fg_json_get(cfg, "webhooks", NULL);
        enum fg_err err = FG_OK;
        for (size_t k = 0; !err && json_object_is_type(hooks, json_type_array) && k < json_object_array_length(hooks);
             k++) {
            json_object *hook = json_object_array_get_idx(hooks, k);
            if (hook_applies(st, hook, type, op, *obj))
                err = run_hook(hook, type, op, cur, obj, mutating, out);
        }
        json_object_put(cfg);
        if (err)
            return err;
    }
    return FG_OK;
}
