/*
 * http — the request entry point: common headers, injected faults and latency, routing of
 * /version, discovery and resource paths, and the reply helpers every handler uses.
 *
 * Resource paths are /api/v1/... and /apis/G/V/..., optionally under namespaces/NS/, followed by
 * PLURAL[/NAME[/SUBRESOURCE]]; /api/v1/namespaces/NAME is the namespace itself. Every reply carries
 * Cache-Control: no-cache, private (kubectl caches discovery on disk otherwise). Control paths under
 * /fracgpu-test/ bypass injected faults and latency so a test can always reach them.
 */
#include "e2e/apiserver/server.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/protobuf.h"
#include "e2e/apiserver/status.h"

#define VERSION_JSON                                                                                   \
    "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.5\",\"gitCommit\":\"fracgpu-test\","   \
    "\"gitTreeState\":\"clean\",\"buildDate\":\"2025-05-15T00:00:00Z\",\"goVersion\":\"go1.23.8\","   \
    "\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}"

static void reply_text(struct evhttp_request *req, int code, const char *content_type, const char *data, size_t len)
{
    struct evbuffer *buf = evbuffer_new();
    evbuffer_add(buf, data, len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", content_type);
    evhttp_send_reply(req, code, NULL, buf);
    evbuffer_free(buf);
}

void fg__reply_json_as(struct evhttp_request *req, int code, json_object *o, const char *content_type)
{
    size_t len = 0;
    const char *s = fg_json_text(o, &len);
    reply_text(req, code, content_type, s, len);
}

void fg__reply_text(struct evhttp_request *req, int code, struct fg__text *text)
{
    struct evbuffer *buf = evbuffer_new();
    fg__text_add_to_evbuffer(text, buf);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, code, NULL, buf);
    evbuffer_free(buf);
}

void fg__reply_json(struct evhttp_request *req, int code, json_object *o)
{
    fg__reply_json_as(req, code, o, "application/json");
}

void fg__reply_status(struct evhttp_request *req, json_object *status)
{
    int64_t code = 500;
    fg_json_get_int64(status, &code, "code", NULL);
    fg__reply_json(req, (int)code, status);
    json_object_put(status);
}

void fg__reply_error(struct evhttp_request *req, enum fg_err err, const char *fmt, ...)
{
    char msg[FG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fg__reply_status(req, fg__status_from_err(err, msg, NULL));
}

const char *fg__query_get(const struct evkeyvalq *q, const char *key)
{
    return evhttp_find_header(q, key);
}

/* The body's bytes (borrowed from the request), or 413 replied when it is over the limit. */
static enum fg_err body_bytes(struct fg_apiserver *srv, struct evhttp_request *req, const char **data, size_t *len)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    *len = evbuffer_get_length(in);
    if (*len > srv->max_body) {
        fg__reply_error(req, FG_E_TOO_BIG, "Request entity too large: limit is %zu bytes, body has %zu",
                        srv->max_body, *len);
        return FG_E_TOO_BIG;
    }
    *data = *len ? (const char *)evbuffer_pullup(in, (ev_ssize_t)*len) : "";
    return FG_OK;
}

enum fg_err fg__read_body(struct fg_apiserver *srv, struct evhttp_request *req, json_object **out)
{
    *out = NULL;
    const char *data;
    size_t len;
    if (body_bytes(srv, req, &data, &len))
        return FG_E_TOO_BIG;
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = fg_json_parser_parse(&srv->parser, data, len, srv->max_body, out, msg);
    if (err) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "the body of the request could not be decoded: %s", msg);
        return FG_E_KUBE_BAD_REQUEST;
    }
    return FG_OK;
}

enum fg_err fg__read_protobuf_body(struct fg_apiserver *srv, struct evhttp_request *req, const char *group,
                                   const char *version, const char *kind, json_object **out)
{
    *out = NULL;
    const char *data;
    size_t len;
    if (body_bytes(srv, req, &data, &len))
        return FG_E_TOO_BIG;
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = fg__protobuf_decode(group, version, kind, (const uint8_t *)data, len, out, msg);
    if (err)
        fg__reply_error(req, err, "%s", msg);
    return err;
}

/* Splits path into at most max non-empty segments; returns the count, or max + 1 when there are more. */
static size_t split_path(char *path, char **segs, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(path, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (n == max)
            return max + 1;
        segs[n++] = tok;
    }
    return n;
}

/* Fills route from the segments after the group/version; false when no type matches. */
static bool parse_route(const struct fg__registry *reg, const char *group, const char *version, char **s, size_t n,
                        struct fg__route *route)
{
    memset(route, 0, sizeof(*route));
    size_t at = 0;
    const struct fg__type *t = NULL;
    if (n >= 3 && !strcmp(s[0], "namespaces")) {
        t = fg__registry_find(reg, group, version, s[2]);
        if (t && t->namespaced)
            at = 2;
        else
            t = NULL;
    }
    if (!t) {
        t = fg__registry_find(reg, group, version, s[0]);
        if (!t || (n >= 2 && t->namespaced))
            return false; /* unknown, or a namespaced object addressed without its namespace */
    }
    if (n - at > 3)
        return false;
    route->type = t;
    route->ns = at ? fg_strdup(s[1]) : NULL;
    route->name = n - at >= 2 ? fg_strdup(s[at + 1]) : NULL;
    route->sub = n - at == 3 ? fg_strdup(s[at + 2]) : NULL;
    return true;
}

static void route_cleanup(struct fg__route *r)
{
    free(r->ns);
    free(r->name);
    free(r->sub);
}

/* A collection GET is a watch or a list, as its (valid) query parameters say. */
static void get_collection(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                           const struct evkeyvalq *query)
{
    struct fg__list_opts opts;
    if (!fg__list_opts_parse(req, query, &opts))
        return;
    if (opts.watch)
        fg__watch_start(srv, req, route, query, &opts);
    else
        fg__http_list(srv, req, route, query, &opts);
}

static void dispatch_resource(struct fg_apiserver *srv, struct evhttp_request *req, const char *path,
                              const struct evkeyvalq *query)
{
    char *copy = fg_strdup(path);
    char *s[8];
    size_t n = split_path(copy, s, 8);
    struct fg__route route;
    bool ok = false;
    if (n >= 3 && n <= 8 && !strcmp(s[0], "api"))
        ok = parse_route(&srv->reg, "", s[1], s + 2, n - 2, &route);
    else if (n >= 4 && n <= 8 && !strcmp(s[0], "apis"))
        ok = parse_route(&srv->reg, s[1], s[2], s + 3, n - 3, &route);
    if (!ok) {
        fg__reply_error(req, FG_E_KUBE_NOT_FOUND, "the server could not find the requested resource (%s)", path);
        goto out;
    }
    fg__audit_record(srv, req, &route, query);
    if (route.name) {
        fg__http_object(srv, req, &route, query);
    } else {
        enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
        if (cmd == EVHTTP_REQ_GET)
            get_collection(srv, req, &route, query);
        else if (cmd == EVHTTP_REQ_POST && (route.ns || !route.type->namespaced))
            fg__http_object(srv, req, &route, query);
        else
            fg__reply_error(req, FG_E_KUBE_METHOD_NOT_ALLOWED, "the server does not allow this method on the "
                            "requested resource");
    }
    route_cleanup(&route);
out:
    free(copy);
}

void fg__http_dispatch(struct fg_apiserver *srv, struct evhttp_request *req)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *raw_path = evhttp_uri_get_path(uri);
    char *path = evhttp_uridecode(raw_path ? raw_path : "/", 0, NULL);
    struct evkeyvalq query;
    TAILQ_INIT(&query);
    const char *q = evhttp_uri_get_query(uri);
    if (q && evhttp_parse_query_str(q, &query) != 0) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "malformed query string");
        goto out;
    }
    if (!strcmp(path, "/version") || !strcmp(path, "/version/")) {   /* kube serves both */
        reply_text(req, 200, "application/json", VERSION_JSON, strlen(VERSION_JSON));
    } else if (fg_str_has_prefix(path, FG__ADMIN_PREFIX)) {
        fg__admin_handle(srv, req, path + strlen(FG__ADMIN_PREFIX), &query);
    } else if (!fg__http_discovery(srv, req, path) && !fg__http_openapi(srv, req, path)) {
        dispatch_resource(srv, req, path, &query);
    }
out:
    evhttp_clear_headers(&query);
    free(path);
}

static bool fault_matches(const struct fg__fault *f, struct evhttp_request *req, const char *path)
{
    static const struct { enum evhttp_cmd_type cmd; const char *name; } methods[] = {
        { EVHTTP_REQ_GET, "GET" }, { EVHTTP_REQ_POST, "POST" }, { EVHTTP_REQ_PUT, "PUT" },
        { EVHTTP_REQ_PATCH, "PATCH" }, { EVHTTP_REQ_DELETE, "DELETE" },
    };
    if (f->remaining == 0)
        return false;
    if (f->path_prefix && !fg_str_has_prefix(path, f->path_prefix))
        return false;
    if (!f->method)
        return true;
    for (size_t i = 0; i < sizeof(methods) / sizeof(*methods); i++)
        if (methods[i].cmd == evhttp_request_get_command(req))
            return !strcmp(methods[i].name, f->method);
    return false;
}

static void inject_fault(struct fg_apiserver *srv, struct evhttp_request *req)
{
    struct fg__fault *f = &srv->fault;
    f->remaining--;
    json_object *details = NULL;
    if (f->code == 429) {
        char s[16];
        snprintf(s, sizeof(s), "%u", f->retry_after_s);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", s);
        details = json_object_new_object();
        json_object_object_add(details, "retryAfterSeconds", json_object_new_int((int)f->retry_after_s));
    }
    const char *msg = f->code == 429
                          ? "the server has received too many requests and has asked us to try again later"
                          : "an error on the server has prevented the request from succeeding";
    fg__reply_status(req, fg__status_new(f->code, NULL, msg, details));
}

static void unlink_delayed(struct fg_apiserver *srv, struct fg__delayed *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        srv->delayed = d->next;
    if (d->next)
        d->next->prev = d->prev;
    event_free(d->ev);
    free(d);
}

bool fg__release_if_detached(struct evhttp_request *req)
{
    if (evhttp_request_get_connection(req))
        return false;
    evhttp_send_reply(req, 503, NULL, NULL);
    return true;
}

static void on_delay_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg__delayed *d = arg;
    struct fg_apiserver *srv = d->srv;
    struct evhttp_request *req = d->req;
    unlink_delayed(srv, d);
    if (!fg__release_if_detached(req))
        fg__http_dispatch(srv, req);
}

void fg__delayed_flush(struct fg_apiserver *srv)
{
    while (srv->delayed) {
        struct evhttp_request *req = srv->delayed->req;
        unlink_delayed(srv, srv->delayed);
        fg__release_if_detached(req); /* attached ones go with their connection */
    }
}

const char *fg__http_bearer_token(struct evhttp_request *req)
{
    static const char bearer[] = "Bearer ";
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    return auth && fg_str_has_prefix(auth, bearer) ? auth + strlen(bearer) : NULL;
}

/* With --token every request but the control paths must carry it, as kube-apiserver without
 * anonymous access requires (401 otherwise). */
static bool authorized(const struct fg_apiserver *srv, struct evhttp_request *req)
{
    if (!srv->token)
        return true;
    const char *token = fg__http_bearer_token(req);
    return token && !strcmp(token, srv->token);
}

void fg__http_on_request(struct evhttp_request *req, void *arg)
{
    struct fg_apiserver *srv = arg;
    srv->requests++;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-cache, private");
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (!path)
        path = "/";
    if (fg_str_has_prefix(path, FG__ADMIN_PREFIX)) {
        fg__http_dispatch(srv, req);
    } else if (!authorized(srv, req)) {
        fg__reply_error(req, FG_E_KUBE_UNAUTHORIZED, "Unauthorized");
    } else if (fault_matches(&srv->fault, req, path)) {
        inject_fault(srv, req);
    } else if (srv->latency_ms) {
        struct fg__delayed *d = fg_calloc(1, sizeof(*d));
        d->srv = srv;
        d->req = req;
        d->ev = evtimer_new(srv->base, on_delay_done, d);
        d->next = srv->delayed;
        if (d->next)
            d->next->prev = d;
        srv->delayed = d;
        struct timeval tv = { srv->latency_ms / 1000, (srv->latency_ms % 1000) * 1000 };
        evtimer_add(d->ev, &tv);
    } else {
        fg__http_dispatch(srv, req);
    }
}
