/* AdmissionReview (admission.k8s.io/v1) in and out (review.h). */
#include "operator/webhook/review.h"

#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/mem.h"

static bool str_is(json_object *o, const char *key, const char *want)
{
    const char *v = fg_json_get_str(o, key, NULL);
    return v && !strcmp(v, want);
}

enum fg_err fg_review_parse(const char *body, size_t len, struct fg_review *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    json_object *doc = NULL;
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_json_parse(body, len, FG_REVIEW_MAX, &doc, why);
    if (err == FG_E_TOO_BIG)
        return fg_errmsg(errmsg, err, "AdmissionReview of %zu bytes: more than %u", len, FG_REVIEW_MAX);
    if (err != FG_OK)
        return fg_errmsg(errmsg, FG_E_PARSE, "AdmissionReview is not JSON: %s", why);
    const char *api = fg_json_get_str(doc, "apiVersion", NULL), *kind = fg_json_get_str(doc, "kind", NULL);
    json_object *req = fg_json_get(doc, "request", NULL);
    const char *uid = fg_json_get_str(req, "uid", NULL);
    const char *op = fg_json_get_str(req, "operation", NULL);
    if (!json_object_is_type(doc, json_type_object) || !api || strcmp(api, FG_REVIEW_API_VERSION))
        err = fg_errmsg(errmsg, FG_E_PARSE, "apiVersion %s%s%s: only " FG_REVIEW_API_VERSION " is served",
                        api ? "\"" : "", api ? api : "missing", api ? "\"" : "");
    else if (!kind || strcmp(kind, "AdmissionReview"))
        err = fg_errmsg(errmsg, FG_E_PARSE, "kind %s: an AdmissionReview is expected", kind ? kind : "missing");
    else if (!json_object_is_type(req, json_type_object))
        err = fg_errmsg(errmsg, FG_E_PARSE, "the review has no request");
    else if (!uid || !*uid)
        err = fg_errmsg(errmsg, FG_E_PARSE, "the request has no uid");
    else if (!op || !*op)
        err = fg_errmsg(errmsg, FG_E_PARSE, "the request has no operation");
    if (err != FG_OK) {
        json_object_put(doc);
        return err;
    }
    json_object *dry = fg_json_get(req, "dryRun", NULL);
    json_object *obj = fg_json_get(req, "object", NULL);
    const char *ns = fg_json_get_str(req, "namespace", NULL);
    const char *sub = fg_json_get_str(req, "subResource", NULL);
    json_object *res = fg_json_get(req, "resource", NULL);
    *out = (struct fg_review){
        .doc = doc,
        .uid = uid,
        .operation = op,
        .ns = ns ? ns : "",
        .object = json_object_is_type(obj, json_type_object) ? obj : NULL,
        .dry_run = json_object_is_type(dry, json_type_boolean) && json_object_get_boolean(dry),
    };
    out->is_pod_create = !strcmp(op, "CREATE") && out->object && str_is(res, "resource", "pods") &&
                         str_is(res, "group", "") && (!sub || !*sub) && str_is(obj, "kind", "Pod");
    return FG_OK;
}

void fg_review_cleanup(struct fg_review *r)
{
    json_object_put(r->doc);
    memset(r, 0, sizeof(*r));
}

char *fg_review_allow(const char *uid, json_object *patch, const char *warning)
{
    json_object *doc = json_object_new_object();
    fg_json_set_str(doc, "apiVersion", FG_REVIEW_API_VERSION);
    fg_json_set_str(doc, "kind", "AdmissionReview");
    json_object *resp = fg_json_ensure_obj(doc, "response");
    fg_json_set_str(resp, "uid", uid);
    json_object_object_add(resp, "allowed", json_object_new_boolean(1));
    if (patch) {
        size_t len = 0;
        const char *text = fg_json_text(patch, &len);
        char *b64 = fg_base64_encode(text, len);
        fg_json_set_str(resp, "patchType", "JSONPatch");
        fg_json_set_str(resp, "patch", b64);
        free(b64);
    }
    if (warning) {
        json_object *w = json_object_new_array();
        json_object_array_add(w, json_object_new_string(warning));
        json_object_object_add(resp, "warnings", w);
    }
    char *s = fg_strdup(fg_json_text(doc, NULL));
    json_object_put(doc);
    return s;
}
