/*
 * http_objects — single-object requests: GET, PUT, PATCH and DELETE on .../PLURAL/NAME, GET, PUT and
 * PATCH on .../NAME/status and .../pods/NAME/resize, POST on .../pods/NAME/binding and .../eviction,
 * and POST on a collection. Any other subresource (pods/ephemeralcontainers among them) is 404
 * NotFound without details, as kube-apiserver answers for a subresource it does not serve. The HTTP layer
 * only decodes (body, patch media type) and encodes; the semantics live in the store_*.c files.
 * GET replies straight from the stored text, without serializing again. Creates, updates and patches
 * run as an fg__write (server.h), which waits, suspended, while an admission webhook is called.
 */
#include "e2e/apiserver/server.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/admit.h"
#include "e2e/apiserver/protobuf.h"
#include "e2e/apiserver/status.h"

/* Does the Content-Type name this media type (parameters ignored)? */
static bool media_is(const char *ct, const char *type)
{
    size_t len = strcspn(ct, "; ");
    return strlen(type) == len && !strncasecmp(ct, type, len);
}

/* The patch kind named by a Content-Type, ignoring parameters; false when unsupported. */
static bool patch_kind(const char *content_type, enum fg__patch_kind *out)
{
    static const struct { const char *type; enum fg__patch_kind kind; } kinds[] = {
        { "application/merge-patch+json", FG__PATCH_MERGE },
        { "application/json-patch+json", FG__PATCH_JSON },
        { "application/strategic-merge-patch+json", FG__PATCH_STRATEGIC },
    };
    if (!content_type)
        return false;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
        if (media_is(content_type, kinds[i].type)) {
            *out = kinds[i].kind;
            return true;
        }
    }
    return false;
}

/* Bodies of subresource POSTs must be JSON; kube-apiserver's other encodings (CBOR, YAML) are not
 * served. Replies 415 and returns false otherwise. */
static bool json_body(struct evhttp_request *req)
{
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    if (!ct || !strcspn(ct, "; ") || media_is(ct, "application/json") || media_is(ct, "*/*"))
        return true;
    fg__reply_error(req, FG_E_KUBE_UNSUPPORTED_MEDIA, "the body of the request was in an unknown format - accepted "
                    "media types include: application/json, " FG__PROTOBUF_MEDIA_TYPE " (got %s)", ct);
    return false;
}

/* Reads a body of group/version/kind: JSON, or protobuf (protobuf.h) for the kinds kubectl sends so
 * (its generators' objects, drain's Eviction and DeleteOptions). FG_OK with *out, else an error
 * already replied. */
static enum fg_err read_typed(struct fg_apiserver *srv, struct evhttp_request *req, const char *group,
                              const char *version, const char *kind, json_object **out)
{
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    *out = NULL;
    if (ct && media_is(ct, FG__PROTOBUF_MEDIA_TYPE))
        return fg__read_protobuf_body(srv, req, group, version, kind, out);
    if (!json_body(req))
        return FG_E_KUBE_UNSUPPORTED_MEDIA;
    return fg__read_body(srv, req, out);
}

/* The body of a POST or PUT of an object of type t. */
static enum fg_err read_object(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__type *t,
                               json_object **out)
{
    return read_typed(srv, req, t->group, t->version, t->kind, out);
}

/* Replies with the write's result; a committed write to a CRD first brings the registry in line. An
 * object the store now holds is sent as the text it was serialized to when stored. */
static void reply_result(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *r,
                         enum fg_err err, json_object *out, int ok_code)
{
    if (err) {
        fg__reply_status(req, out);
        return;
    }
    if (fg__crd_is_crd_type(r->type))
        fg__crd_sync(&srv->store, fg_json_get_str(out, "metadata", "name", NULL));
    struct fg__text *text = fg__store_text_of(&srv->store, r->type, out);
    if (text)
        fg__reply_text(req, ok_code, text);
    else
        fg__reply_json(req, ok_code, out);
    json_object_put(out);
}

static void get_object(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *r)
{
    const struct fg__entry *e = fg__store_get(&srv->store, r->type, r->ns, r->name);
    if (!e) {
        char *msg = fg_asprintf("%s \"%s\" not found", r->type->plural, r->name);
        fg__reply_status(req, fg__status_new(404, NULL, msg, fg__status_details(r->name, r->type->group,
                                                                                 r->type->plural)));
        free(msg);
        return;
    }
    if (fg__table_wanted(req)) {
        json_object *table = fg__table_new(r->type);
        fg__table_add_row(table, r->type, e->obj);
        fg__table_reply(req, table);
        json_object_put(table);
        return;
    }
    fg__reply_text(req, 200, e->text);
}

/* The write scope a subresource path allows; false (with a reply sent) when it is not served. */
static bool subresource_scope(struct evhttp_request *req, const struct fg__route *r, enum fg__write_scope *scope)
{
    *scope = FG__SCOPE_MAIN;
    if (!r->sub)
        return true;
    if (!strcmp(r->sub, "status") && fg__type_has_subresource(r->type, "status")) {
        *scope = FG__SCOPE_STATUS;
        return true;
    }
    if (!strcmp(r->sub, "resize") && fg__type_has_subresource(r->type, "resize")) {
        *scope = FG__SCOPE_RESIZE;
        return true;
    }
    fg__reply_error(req, FG_E_KUBE_NOT_FOUND, "the server could not find the requested resource (%s/%s)",
                    r->type->plural, r->sub);
    return false;
}

/* Adds one dryRun value to *dry: "All" asks for a dry run, an empty one for none; any other is 400
 * (replied, false returned). */
static bool dry_run_value(struct evhttp_request *req, const char *v, bool *dry)
{
    if (!v || !*v)
        return true;
    if (strcmp(v, "All")) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "dryRun: Unsupported value: \"%s\": supported values: \"All\"", v);
        return false;
    }
    *dry = true;
    return true;
}

/* Whether a write is a dry run: dryRun in the query, or in the DeleteOptions opts (a list; NULL when
 * none) that a DELETE or an eviction carries, as kube-apiserver takes it from either. False with a
 * 400 replied for a value other than "All". */
static bool dry_run_of(struct evhttp_request *req, const struct evkeyvalq *query, json_object *opts, bool *dry)
{
    *dry = false;
    if (!dry_run_value(req, fg__query_get(query, "dryRun"), dry))
        return false;
    json_object *list = fg_json_get(opts, "dryRun", NULL);
    for (size_t i = 0; i < fg_json_array_len(list); i++)
        if (!dry_run_value(req, json_object_get_string(json_object_array_get_idx(list, i)), dry))
            return false;
    return true;
}

/* POST-only subresources that act on a pod: binding and eviction. A dry run checks everything
 * (the pod, its node, its budget) and writes nothing. */
static void create_action(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *r,
                          const struct evkeyvalq *query)
{
    json_object *body = NULL, *out = NULL;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        fg__reply_error(req, FG_E_KUBE_METHOD_NOT_ALLOWED, "%s can only be created (POST)", r->sub);
        return;
    }
    bool binding = !strcmp(r->sub, "binding"), dry = false;
    if (read_typed(srv, req, binding ? "" : "policy", "v1", binding ? "Binding" : "Eviction", &body))
        return;
    if (dry_run_of(req, query, binding ? NULL : fg_json_get(body, "deleteOptions", NULL), &dry)) {
        srv->store.dry_run = dry;
        enum fg_err err = binding ? fg__store_bind(&srv->store, r->type, r->ns, r->name, body, &out)
                                  : fg__store_evict(&srv->store, r->type, r->ns, r->name, body, &out);
        srv->store.dry_run = false;
        reply_result(srv, req, r, err, out, 201);
    }
    json_object_put(body);
}

static char *dup_or_null(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static void write_free(struct fg__write *w)
{
    struct fg_apiserver *srv = w->srv;
    if (w->suspended) {
        if (w->prev)
            w->prev->next = w->next;
        else
            srv->writes = w->next;
        if (w->next)
            w->next->prev = w->prev;
    }
    fg__admission_cleanup(&w->adm);
    json_object_put(w->body);
    free(w->route.ns);
    free(w->route.name);
    free(w->route.sub);
    free(w);
}

/* Runs the write from the start; replies and frees it unless a webhook call is in flight, in which
 * case it waits, suspended, to be run again when the call ends. */
static void write_run(void *arg)
{
    struct fg__write *w = arg;
    struct fg__store *st = &w->srv->store;
    const struct fg__route *r = &w->route;
    json_object *out = NULL;
    enum fg_err err;
    st->admission = &w->adm;
    st->dry_run = w->dry_run;
    w->adm.next = 0;
    w->adm.resuming = false; /* until the run takes up where it waited (fg__admission_resume) */
    if (w->cmd == EVHTTP_REQ_PATCH)
        err = fg__store_patch(st, r->type, r->ns, r->name, w->scope, w->kind, w->body, &out);
    else if (w->cmd == EVHTTP_REQ_POST)
        err = fg__store_create(st, r->type, r->ns, w->body, &out);
    else
        err = fg__store_update(st, r->type, r->ns, r->name, w->scope, w->body, &out);
    st->admission = NULL;
    st->dry_run = false;
    if (err == FG_E_BUSY) {
        if (!w->suspended) {
            w->suspended = true;
            w->next = w->srv->writes;
            if (w->next)
                w->next->prev = w;
            w->srv->writes = w;
        }
        return;
    }
    reply_result(w->srv, w->req, r, err, out, w->cmd == EVHTTP_REQ_POST ? 201 : 200);
    write_free(w);
}

/* Creates (POST), updates (PUT) or patches (PATCH) the object with body (taken). */
static void write_start(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *r,
                        enum fg__write_scope scope, enum fg__patch_kind kind, json_object *body, bool dry_run)
{
    struct fg__write *w = fg_calloc(1, sizeof(*w));
    w->dry_run = dry_run;
    w->srv = srv;
    w->req = req;
    w->route = (struct fg__route){ r->type, dup_or_null(r->ns), dup_or_null(r->name), dup_or_null(r->sub) };
    w->cmd = evhttp_request_get_command(req);
    w->scope = scope;
    w->kind = kind;
    w->body = body;
    fg__admission_init(&w->adm, srv->hooks, write_run, w);
    w->adm.subresource = w->route.sub;
    write_run(w);
}

void fg__writes_flush(struct fg_apiserver *srv)
{
    while (srv->writes) {
        struct evhttp_request *req = srv->writes->req;
        write_free(srv->writes);
        fg__release_if_detached(req); /* attached ones go with their connection */
    }
}

/* A DELETE's options: the body when there is one (JSON, or a protobuf DeleteOptions as kubectl sends
 * it), else the query parameters gracePeriodSeconds (a strconv.ParseInt integer, 400 otherwise) and
 * propagationPolicy, as kube-apiserver decodes them. FG_OK with *out (NULL when none), else an error
 * already replied. */
static enum fg_err delete_options(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__type *t,
                                  const struct evkeyvalq *query, json_object **out)
{
    *out = NULL;
    if (evbuffer_get_length(evhttp_request_get_input_buffer(req)))
        return read_typed(srv, req, t->group, t->version, "DeleteOptions", out);
    const char *grace = fg__query_get(query, "gracePeriodSeconds");
    const char *policy = fg__query_get(query, "propagationPolicy");
    if (!grace && !policy)
        return FG_OK;
    json_object *opts = json_object_new_object();
    if (grace) {
        long long v = 0;
        if (!fg__query_int64(grace, &v)) {
            json_object_put(opts);
            fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "invalid gracePeriodSeconds \"%s\": not an integer", grace);
            return FG_E_KUBE_BAD_REQUEST;
        }
        json_object_object_add(opts, "gracePeriodSeconds", json_object_new_int64(v));
    }
    if (policy)
        fg_json_set_str(opts, "propagationPolicy", policy);
    *out = opts;
    return FG_OK;
}

void fg__http_object(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *r,
                     const struct evkeyvalq *query)
{
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    json_object *body = NULL, *out = NULL;
    enum fg__write_scope scope;
    enum fg_err err;
    if (r->sub && (!strcmp(r->sub, "binding") || !strcmp(r->sub, "eviction")) &&
        fg__type_has_subresource(r->type, r->sub)) {
        create_action(srv, req, r, query);
        return;
    }
    if (!subresource_scope(req, r, &scope))
        return;
    if (cmd == EVHTTP_REQ_GET) {
        get_object(srv, req, r);
        return;
    }
    /* dryRun=All: the write is checked and admitted (webhooks included) but not stored */
    bool dry_run;
    if (!dry_run_of(req, query, NULL, &dry_run))
        return;
    if (cmd == EVHTTP_REQ_PATCH) {
        enum fg__patch_kind kind;
        const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
        if (!patch_kind(ct, &kind)) {
            fg__reply_error(req, FG_E_KUBE_UNSUPPORTED_MEDIA, "the body of the request was in an unknown format - "
                            "accepted media types include: application/json-patch+json, "
                            "application/merge-patch+json, application/strategic-merge-patch+json (got %s)",
                            ct ? ct : "no Content-Type");
            return;
        }
        if (fg__read_body(srv, req, &body))
            return;
        write_start(srv, req, r, scope, kind, body, dry_run);
        return;
    } else if ((cmd == EVHTTP_REQ_POST && !r->name) || cmd == EVHTTP_REQ_PUT) {
        if (read_object(srv, req, r->type, &body))
            return;
        write_start(srv, req, r, scope, FG__PATCH_MERGE, body, dry_run);
        return;
    } else if (cmd == EVHTTP_REQ_DELETE && scope == FG__SCOPE_MAIN) {
        if (delete_options(srv, req, r->type, query, &body))
            return;
        if (dry_run_of(req, query, body, &dry_run)) {
            srv->store.dry_run = dry_run;
            err = fg__store_delete(&srv->store, r->type, r->ns, r->name, body, &out);
            srv->store.dry_run = false;
            reply_result(srv, req, r, err, out, 200);
        }
    } else {
        fg__reply_error(req, FG_E_KUBE_METHOD_NOT_ALLOWED, "the server does not allow this method on the requested "
                        "resource");
    }
    json_object_put(body);
}
