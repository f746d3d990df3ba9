/*
 * admin — the control paths tests use to inject faults, under /fracgpu-test/ (POST unless noted):
 *   drop-watches                 close every watch connection now
 *   expire-watches               send a 410 Expired ERROR event on every watch, then end it
 *   fail?count=N&code=C[&method=M][&path=P][&retryAfter=S]
 *                                answer the next N matching requests with C (429 carries Retry-After)
 *   latency?ms=N                 delay every reply by N ms (0 turns it off)
 *   compact                      forget the watch history (older RVs then get 410)
 *   restart?downMs=N             close everything, stay down N ms, come back on the same port
 *   stats (GET)                  {"watchers","resourceVersion","historyFloor","requests","eventsSent",
 *                                 "watches":[{"resource","namespace","query","sent"}]}
 * Each answers 200 with a small JSON object; a bad parameter answers 400, an unknown path 404.
 */
#include "e2e/apiserver/server.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

#define MAX_DOWN_MS 60000u
#define MAX_LATENCY_MS 60000u

static bool parse_uint(const struct evkeyvalq *q, const char *key, unsigned long max, unsigned long dflt,
                       unsigned long *out)
{
    const char *s = fg__query_get(q, key);
    *out = dflt;
    if (!s)
        return true;
    char *end = NULL;
    *out = strtoul(s, &end, 10);
    return *s && !*end && *s != '-' && *out <= max;
}

static void reply_count(struct evhttp_request *req, const char *key, uint64_t n)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, key, json_object_new_int64((int64_t)n));
    fg__reply_json(req, 200, o);
    json_object_put(o);
}

static void stats(struct fg_apiserver *srv, struct evhttp_request *req)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "watchers", json_object_new_int64((int64_t)srv->nwatchers));
    json_object_object_add(o, "resourceVersion", json_object_new_int64((int64_t)srv->store.rv));
    json_object_object_add(o, "historyFloor", json_object_new_int64((int64_t)srv->store.floor));
    json_object_object_add(o, "requests", json_object_new_int64((int64_t)srv->requests));
    json_object_object_add(o, "eventsSent", json_object_new_int64((int64_t)srv->events_sent));
    json_object *watches = json_object_new_array();
    for (const struct fg__watcher *w = srv->watchers; w; w = w->next) {
        json_object *one = json_object_new_object();
        json_object_object_add(one, "resource", json_object_new_string(w->type->plural));
        if (w->ns)
            json_object_object_add(one, "namespace", json_object_new_string(w->ns));
        json_object_object_add(one, "query", json_object_new_string(w->query));
        json_object_object_add(one, "sent", json_object_new_int64((int64_t)w->sent));
        json_object_array_add(watches, one);
    }
    json_object_object_add(o, "watches", watches);
    fg__reply_json(req, 200, o);
    json_object_put(o);
}

static void set_fault(struct fg_apiserver *srv, struct evhttp_request *req, const struct evkeyvalq *q)
{
    unsigned long count, code, retry;
    if (!parse_uint(q, "count", 1000000, 1, &count) || !parse_uint(q, "code", 599, 500, &code) || code < 400 ||
        !parse_uint(q, "retryAfter", 3600, 1, &retry)) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "fail needs count (0..1000000), code (400..599) and "
                        "retryAfter (0..3600) as integers");
        return;
    }
    struct fg__fault *f = &srv->fault;
    free(f->method);
    free(f->path_prefix);
    const char *method = fg__query_get(q, "method"), *path = fg__query_get(q, "path");
    f->method = method ? fg_strdup(method) : NULL;
    f->path_prefix = path ? fg_strdup(path) : NULL;
    f->remaining = (unsigned)count;
    f->code = (int)code;
    f->retry_after_s = (unsigned)retry;
    reply_count(req, "armed", count);
}

static void on_restart_reply_sent(struct evhttp_request *req, void *arg)
{
    (void)req;
    struct fg_apiserver *srv = arg;
    fg__server_restart(srv, srv->down_ms);
}

void fg__admin_handle(struct fg_apiserver *srv, struct evhttp_request *req, const char *path,
                      const struct evkeyvalq *q)
{
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    unsigned long v;
    if (!strcmp(path, "stats") && cmd == EVHTTP_REQ_GET) {
        stats(srv, req);
        return;
    }
    if (cmd != EVHTTP_REQ_POST) {
        fg__reply_error(req, FG_E_KUBE_METHOD_NOT_ALLOWED, "control paths other than stats take POST");
        return;
    }
    if (!strcmp(path, "drop-watches")) {
        reply_count(req, "dropped", fg__watch_drop_all(srv));
    } else if (!strcmp(path, "expire-watches")) {
        reply_count(req, "expired", fg__watch_expire_all(srv));
    } else if (!strcmp(path, "fail")) {
        set_fault(srv, req, q);
    } else if (!strcmp(path, "latency")) {
        if (!parse_uint(q, "ms", MAX_LATENCY_MS, 0, &v)) {
            fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "latency needs ms between 0 and %u", MAX_LATENCY_MS);
            return;
        }
        srv->latency_ms = (uint32_t)v;
        reply_count(req, "latencyMs", v);
    } else if (!strcmp(path, "compact")) {
        fg__store_compact(&srv->store);
        reply_count(req, "historyFloor", srv->store.floor);
    } else if (!strcmp(path, "restart")) {
        if (!parse_uint(q, "downMs", MAX_DOWN_MS, 0, &v)) {
            fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "restart needs downMs between 0 and %u", MAX_DOWN_MS);
            return;
        }
        srv->down_ms = (uint32_t)v;
        evhttp_request_set_on_complete_cb(req, on_restart_reply_sent, srv);
        reply_count(req, "downMs", v);
    } else {
        fg__reply_error(req, FG_E_KUBE_NOT_FOUND, "unknown control path %s%s", FG__ADMIN_PREFIX, path);
    }
}
