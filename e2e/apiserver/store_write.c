/*
 * store_write — what kube-apiserver does to an object on its way into the store.
 *
 * Create, in kube-apiserver's order: the body (apiVersion/kind and namespace filled, uid and the
 * other system fields wiped) is refused when its namespace is missing, goes through mutating
 * admission as the client sent it, then gets its name (from generateName when asked), uid,
 * creationTimestamp and generation 1, then the strategy and validating admission, and is refused
 * only then when its name is taken.
 * Update and patch keep uid and creationTimestamp, honour metadata.resourceVersion as a
 * precondition (409 Conflict when stale; absent means unconditional), bump generation only when
 * .spec changed, and respect the status subresource: through the main endpoint .status keeps its
 * stored value, through /status only .status changes. An update that empties the finalizers of an
 * object being deleted deletes it, unless it is a pod still in its grace period (deletionTimestamp
 * and deletionGracePeriodSeconds are the server's: updates cannot change them). Errors come back as
 * Status objects with kube-apiserver's messages. Objects are never edited once stored; new versions
 * share unchanged members. A write that changes nothing is not stored (kube-apiserver's
 * GuaranteedUpdate skips it): the object keeps its resourceVersion and no watch event goes out.
 */
#include "e2e/apiserver/store.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/apiserver/admit.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/random.h"
#include "e2e/apiserver/status.h"
#include "e2e/apiserver/store_int.h"

#define MAX_NAME 253
#define GENERATE_SUFFIX 5

enum fg_err fg__write_fail(json_object **out, enum fg_err err, const struct fg__type *type, const char *name,
                           json_object *details, const char *fmt, ...)
{
    char msg[FG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!details && type)
        details = fg__status_details(name, type->group, type->plural);
    *out = fg__status_from_err(err, msg, details);
    return err;
}

static void set_uid(json_object *meta)
{
    char uid[37];
    fg__random_uuid(uid);
    fg_json_set_str(meta, "uid", uid);
}

void fg__write_set_time(json_object *meta, const char *field, int64_t wall_ms)
{
    char s[FG_TIME_MAX];
    fg_time_format(wall_ms, s);
    fg_json_set_str(meta, field, s);
}

void fg__write_set_now(json_object *meta, const char *field)
{
    fg__write_set_time(meta, field, fg_clock_wall_ms());
}

/* RFC 1123 subdomain: lowercase alphanumerics, '-' and '.', alphanumeric at both ends. */
static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_NAME || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

enum fg_err fg__write_invalid(json_object **out, const struct fg__type *type, const char *name, const char *field,
                              const char *cause_reason, const char *detail)
{
    json_object *details = fg__status_details(name, type->group, type->kind);
    fg__status_add_cause(details, cause_reason, detail, field);
    return fg__write_fail(out, FG_E_KUBE_INVALID, NULL, NULL, details, "%s \"%s\" is invalid: %s: %s", type->kind,
                          name ? name : "", field, detail);
}

/* Checks the body's shape, apiVersion/kind and namespace, and returns in *obj the object to store. It
 * shares members with body, so body must be dropped, never changed, afterwards. */
static enum fg_err check_body(const struct fg__type *type, const char *ns, json_object *body, json_object **obj,
                              json_object **out)
{
    *obj = NULL;
    if (!json_object_is_type(body, json_type_object))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                              "the body of the request must be a JSON object");
    const char *api_version = fg_json_get_str(body, "apiVersion", NULL);
    const char *kind = fg_json_get_str(body, "kind", NULL);
    if (api_version && strcmp(api_version, type->api_version))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                              "the API version in the data (%s) does not match the expected API version (%s)",
                              api_version, type->api_version);
    if (kind && strcmp(kind, type->kind))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                              "the kind in the data (%s) does not match the expected kind (%s)", kind, type->kind);
    json_object *meta = fg_json_get(body, "metadata", NULL);
    if (meta && !json_object_is_type(meta, json_type_object))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL, "metadata must be a JSON object");
    const char *body_ns = fg_json_get_str(body, "metadata", "namespace", NULL);
    if (type->namespaced && body_ns && *body_ns && strcmp(body_ns, ns))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                              "the namespace of the provided object does not match the namespace sent on the request");
    /* A new root (kind and apiVersion first, as kube-apiserver writes them) sharing the body's
     * members, with a private metadata object since that is the part the store fills in. */
    *obj = json_object_new_object();
    fg_json_set_str(*obj, "kind", type->kind);
    fg_json_set_str(*obj, "apiVersion", type->api_version);
    json_object_object_foreach(body, key, value) {
        if (strcmp(key, "kind") && strcmp(key, "apiVersion") && strcmp(key, "metadata"))
            json_object_object_add(*obj, key, json_object_get(value));
    }
    json_object_object_add(*obj, "metadata", meta ? fg__json_shallow_dup(meta) : json_object_new_object());
    meta = fg_json_get(*obj, "metadata", NULL);
    fg_json_set_str(meta, "namespace", type->namespaced ? ns : NULL);
    return FG_OK;
}

const struct fg__type *fg__write_namespaces_type(const struct fg__store *st)
{
    return fg__registry_find(st->reg, "", "v1", "namespaces");
}

static enum fg_err check_namespace(struct fg__store *st, const struct fg__type *type, const char *ns, json_object **out)
{
    const struct fg__type *nst = fg__write_namespaces_type(st);
    if (!type->namespaced || !nst || fg__store_get(st, nst, NULL, ns))
        return FG_OK;
    return fg__write_fail(out, FG_E_KUBE_NOT_FOUND, nst, ns, NULL, "namespaces \"%s\" not found", ns);
}

/* What kube-apiserver's registry fills in on a create once mutating admission is done: the name from
 * generateName (422 without a valid name), uid, creationTimestamp, generation 1, a new namespace
 * Active. On failure *obj is released. */
static enum fg_err fill_new(const struct fg__type *type, json_object **obj, json_object **out)
{
    json_object *meta = fg_json_ensure_obj(*obj, "metadata");
    const char *name = fg_json_get_str(meta, "name", NULL);
    const char *generate = fg_json_get_str(meta, "generateName", NULL);
    enum fg_err err = FG_OK;
    if ((!name || !*name) && generate && *generate) {
        static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
        unsigned char r[GENERATE_SUFFIX];
        char suffix[GENERATE_SUFFIX + 1];
        fg__random_bytes(r, sizeof(r));
        for (size_t i = 0; i < GENERATE_SUFFIX; i++)
            suffix[i] = alphabet[r[i] % (sizeof(alphabet) - 1)];
        suffix[GENERATE_SUFFIX] = '\0';
        char *generated = fg_asprintf("%s%s", generate, suffix);
        fg_json_set_str(meta, "name", generated);
        free(generated);
        name = fg_json_get_str(meta, "name", NULL);
    }
    if (!name || !*name)
        err = fg__write_invalid(out, type, "", "metadata.name", "FieldValueRequired",
                                "Required value: name or generateName is required");
    else if (!valid_name(name))
        err = fg__write_invalid(out, type, name, "metadata.name", "FieldValueInvalid",
                                "Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                "characters, '-' or '.', and must start and end with an alphanumeric character");
    if (err) {
        json_object_put(*obj);
        *obj = NULL;
        return err;
    }
    set_uid(meta);
    fg__write_set_now(meta, "creationTimestamp");
    json_object_object_add(meta, "generation", json_object_new_int64(1));
    if (!strcmp(type->plural, "namespaces") && !type->group[0] && !fg_json_get(*obj, "status", NULL)) {
        json_object *status = json_object_new_object();
        fg_json_set_str(status, "phase", "Active");
        json_object_object_add(*obj, "status", status);
    }
    return FG_OK;
}

/* The object a create starts from, from its body: what the client sent, without the fields that
 * are the server's (uid, creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds), as
 * kube-apiserver wipes them before admission. */
static enum fg_err new_object(const struct fg__type *type, const char *ns, json_object *body, json_object **obj,
                              json_object **out)
{
    enum fg_err err = check_body(type, ns, body, obj, out);
    if (err)
        return err;
    json_object *meta = fg_json_get(*obj, "metadata", NULL);
    static const char *const wiped[] = { "uid", "creationTimestamp", "deletionTimestamp",
                                         "deletionGracePeriodSeconds" };
    for (size_t i = 0; i < sizeof(wiped) / sizeof(*wiped); i++)
        json_object_object_del(meta, wiped[i]);
    return FG_OK;
}

enum fg_err fg__store_create(struct fg__store *st, const struct fg__type *type, const char *ns, json_object *body,
                             json_object **out)
{
    /* a create that waited for a webhook takes up the object it stopped at, filled already when
     * that was a validating webhook */
    json_object *obj = fg__admission_resume(st->admission, NULL);
    bool past_mutation = fg__admission_resuming(st->admission, true);
    enum fg_err err = obj ? FG_OK : new_object(type, ns, body, &obj, out);
    if (err)
        return err;
    if ((err = check_namespace(st, type, ns, out)) != FG_OK) {
        json_object_put(obj);
        return err;
    }
    if ((err = fg__admit_mutate(st, type, NULL, &obj, out)) != FG_OK)
        return err;
    if (!past_mutation && (err = fill_new(type, &obj, out)) != FG_OK)
        return err;
    if ((err = fg__admit_validate(st, type, NULL, &obj, out)) != FG_OK)
        return err;
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    if (fg__store_get(st, type, ns, name)) {
        err = fg__write_fail(out, FG_E_KUBE_ALREADY_EXISTS, type, name, NULL, "%s \"%s\" already exists",
                             type->plural, name);
        json_object_put(obj);
        return err;
    }
    if (st->dry_run) {
        *out = obj;   /* admitted and valid, not stored */
        return FG_OK;
    }
    *out = json_object_get(fg__store_put(st, type, obj)->obj);
    return FG_OK;
}

/* Restricts obj (taken) to what `scope` may change, given the stored cur; returns the object to store. */
static json_object *apply_scope(const struct fg__type *type, json_object *cur, json_object *obj,
                                enum fg__write_scope scope)
{
    if (scope == FG__SCOPE_ALL || !fg__type_has_subresource(type, "status"))
        return obj;
    json_object *from = scope == FG__SCOPE_STATUS ? obj : cur; /* where .status comes from */
    json_object *status = json_object_get(fg_json_get(from, "status", NULL));
    if (scope == FG__SCOPE_STATUS) {
        json_object *meta = fg__json_shallow_dup(fg_json_get(cur, "metadata", NULL));
        json_object_put(obj);
        obj = fg__json_shallow_dup(cur);
        json_object_object_add(obj, "metadata", meta);
    }
    if (status)
        json_object_object_add(obj, "status", status);
    else
        json_object_object_del(obj, "status");
    return obj;
}

bool fg__write_has_finalizers(json_object *obj)
{
    json_object *f = fg_json_get(obj, "metadata", "finalizers", NULL);
    return fg_json_array_len(f) > 0;
}

/* Makes *obj (taken and given back) the successor of cur within scope: the resourceVersion
 * precondition (409), the name (immutable), the scope, the identity carried over. On failure *obj is
 * released and *out is the Status. */
static enum fg_err successor(const struct fg__type *type, json_object *cur, json_object **obj,
                             enum fg__write_scope scope, json_object **out)
{
    json_object *meta = fg_json_ensure_obj(*obj, "metadata");
    const char *name = fg_json_get_str(cur, "metadata", "name", NULL);
    const char *rv = fg_json_get_str(meta, "resourceVersion", NULL);
    const char *cur_rv = fg_json_get_str(cur, "metadata", "resourceVersion", NULL);
    enum fg_err err = FG_OK;
    if (rv && *rv && !fg_str_eq(rv, cur_rv))
        err = fg__write_fail(out, FG_E_KUBE_CONFLICT, type, name, NULL,
                             "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please "
                             "apply your changes to the latest version and try again", type->plural, name);
    else if (!fg_str_eq(fg_json_get_str(meta, "name", NULL), name))
        err = fg__write_invalid(out, type, name, "metadata.name", "FieldValueInvalid",
                                "Invalid value: field is immutable");
    if (err) {
        json_object_put(*obj);
        *obj = NULL;
        return err;
    }
    if (scope == FG__SCOPE_RESIZE) {
        if ((err = fg__write_resize(type, cur, obj, out)) != FG_OK)
            return err;
    } else {
        *obj = apply_scope(type, cur, *obj, scope);
    }
    meta = fg_json_get(*obj, "metadata", NULL);
    static const char *const carried[] = { "uid", "creationTimestamp", "deletionTimestamp" };
    for (size_t i = 0; i < sizeof(carried) / sizeof(*carried); i++)
        fg_json_set_str(meta, carried[i], fg_json_get_str(cur, "metadata", carried[i], NULL));
    json_object *cur_grace = fg_json_get(cur, "metadata", "deletionGracePeriodSeconds", NULL);
    if (cur_grace)
        json_object_object_add(meta, "deletionGracePeriodSeconds", json_object_get(cur_grace));
    else
        json_object_object_del(meta, "deletionGracePeriodSeconds");
    return FG_OK;
}

/* Whether obj, cur's successor, is cur again but for the resourceVersion it carries. */
static bool unchanged(json_object *cur, json_object *obj)
{
    json_object *meta = fg_json_get(obj, "metadata", NULL);
    json_object *rv = fg_json_get(meta, "resourceVersion", NULL);
    json_object *cur_rv = fg_json_get(cur, "metadata", "resourceVersion", NULL);
    json_object_get(rv);
    if (cur_rv)
        json_object_object_add(meta, "resourceVersion", json_object_get(cur_rv));
    else
        json_object_object_del(meta, "resourceVersion");
    bool same = json_object_equal(cur, obj);
    if (rv)
        json_object_object_add(meta, "resourceVersion", rv);
    else
        json_object_object_del(meta, "resourceVersion");
    return same;
}

enum fg_err fg__write_commit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object *obj,
                             enum fg__write_scope scope, json_object **out)
{
    const char *name = fg_json_get_str(cur, "metadata", "name", NULL);
    /* a write that waited for a webhook takes up the object it stopped at, if cur is still the same */
    json_object *resumed = fg__admission_resume(st->admission, cur);
    enum fg_err err = FG_OK;
    if (resumed) {
        json_object_put(obj);
        obj = resumed;
    } else if ((err = successor(type, cur, &obj, scope, out)) != FG_OK) {
        return err;
    }
    if ((err = fg__admit(st, type, cur, &obj, out)) != FG_OK)
        return err;
    json_object *meta = fg_json_get(obj, "metadata", NULL);
    int64_t gen = 1;
    fg_json_get_int64(cur, &gen, "metadata", "generation", NULL);
    if (!json_object_equal(fg_json_get(cur, "spec", NULL), fg_json_get(obj, "spec", NULL)))
        gen++;
    json_object_object_add(meta, "generation", json_object_new_int64(gen));
    if (st->dry_run) {
        *out = obj;   /* admitted and valid, not stored */
        return FG_OK;
    }
    if (unchanged(cur, obj)) {   /* kube-apiserver writes nothing: no new resourceVersion, no event */
        json_object_put(obj);
        *out = json_object_get(cur);
        return FG_OK;
    }
    int64_t grace = 0;
    fg_json_get_int64(meta, &grace, "deletionGracePeriodSeconds", NULL);
    if (fg_json_get(meta, "deletionTimestamp", NULL) && !fg__write_has_finalizers(obj) && grace == 0) {
        /* the last finalizer is gone from an object being deleted whose grace period is over (a
         * terminating pod waits for its final DELETE): it goes now */
        *out = fg__store_remove(st, type, fg_json_get_str(meta, "namespace", NULL), name, obj);
        return FG_OK;
    }
    *out = json_object_get(fg__store_put(st, type, obj)->obj);
    return FG_OK;
}

enum fg_err fg__write_not_found(json_object **out, const struct fg__type *type, const char *name)
{
    return fg__write_fail(out, FG_E_KUBE_NOT_FOUND, type, name, NULL, "%s \"%s\" not found", type->plural, name);
}

enum fg_err fg__store_update(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                             enum fg__write_scope scope, json_object *body, json_object **out)
{
    json_object *obj = NULL;
    enum fg_err err = check_body(type, ns, body, &obj, out);
    if (err)
        return err;
    const char *body_name = fg_json_get_str(obj, "metadata", "name", NULL);
    if (body_name && strcmp(body_name, name)) {
        err = fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                             "the name of the object (%s) does not match the name on the URL (%s)", body_name, name);
        json_object_put(obj);
        return err;
    }
    fg_json_set_str(fg_json_get(obj, "metadata", NULL), "name", name);
    const struct fg__entry *cur = fg__store_get(st, type, ns, name);
    if (!cur) {
        json_object_put(obj);
        return fg__write_not_found(out, type, name);
    }
    return fg__write_commit(st, type, cur->obj, obj, scope, out);
}

enum fg_err fg__store_patch(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                            enum fg__write_scope scope, enum fg__patch_kind kind, json_object *patch,
                            json_object **out)
{
    const struct fg__entry *cur = fg__store_get(st, type, ns, name);
    if (!cur)
        return fg__write_not_found(out, type, name);
    char msg[FG_ERRMSG_MAX];
    json_object *obj = NULL;
    enum fg_err err;
    switch (kind) {
    case FG__PATCH_MERGE: err = fg__patch_merge(cur->obj, patch, &obj, msg); break;
    case FG__PATCH_JSON: err = fg__patch_json(cur->obj, patch, &obj, msg); break;
    default: err = fg__patch_strategic(st->reg, type->definition, cur->obj, patch, &obj, msg); break;
    }
    if (err == FG_E_PARSE)
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL, "invalid patch: %s", msg);
    if (err)
        return fg__write_invalid(out, type, name, "patch", "FieldValueInvalid", msg);
    json_object *checked = NULL;
    err = check_body(type, ns, obj, &checked, out);
    json_object_put(obj);
    if (err)
        return err;
    return fg__write_commit(st, type, cur->obj, checked, scope, out);
}
