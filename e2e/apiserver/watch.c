/*
 * watch — watch streams and the fan-out of committed events.
 *
 * A watch is a chunked 200 reply that stays open; each event is one JSON line. Starting from RV
 * unset or "0" replays the current objects as synthetic ADDED events; from RV=N it replays the kept
 * history after N, or, when N is older than the history floor, sends one ERROR event with a 410
 * Expired Status and ends. With sendInitialEvents=true the initial ADDED events are closed by a
 * BOOKMARK annotated k8s.io/initial-events-end (and no 410, whatever the RV). allowWatchBookmarks
 * adds periodic BOOKMARKs and timeoutSeconds ends the stream cleanly.
 *
 * Fan-out: the store calls fg__watch_on_event once per commit; the object was serialized once when
 * stored, and every interested watcher gets those same bytes by reference between two static
 * strings ({"type":"...","object": and }\n), so nothing is copied or serialized per watcher.
 * A watcher whose selectors stop matching an object sees DELETED, one that starts matching sees
 * ADDED. A watcher whose connection buffers more than MAX_BACKLOG bytes is a stuck consumer and is
 * dropped, as kube-apiserver does. A watch that asks for Tables (kubectl get -w) is the one
 * exception to zero-copy: each of its events is parsed and sent as a one-row Table.
 */
#include "e2e/apiserver/server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/status.h"

#define MAX_BACKLOG (64u << 20)

static void unlink_watcher(struct fg_apiserver *srv, struct fg__watcher *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        srv->watchers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    srv->nwatchers--;
    if (w->timeout_ev)
        event_free(w->timeout_ev);
    if (w->bookmark_ev)
        event_free(w->bookmark_ev);
    fg_selector_cleanup(&w->labels);
    fg_selector_cleanup(&w->fields);
    free(w->ns);
    free(w->query);
    free(w);
}

/* Ends the stream cleanly (terminating chunk, connection kept for reuse). */
static void finish(struct fg__watcher *w)
{
    struct evhttp_request *req = w->req;
    unlink_watcher(w->srv, w);
    evhttp_send_reply_end(req);
}

/* Closes the connection under the stream; libevent frees the request with it. */
static void drop(struct fg__watcher *w)
{
    struct evhttp_connection *evcon = w->evcon;
    unlink_watcher(w->srv, w);
    evhttp_connection_free(evcon);
}

void fg__watch_on_connection_close(struct evhttp_connection *evcon, void *arg)
{
    struct fg_apiserver *srv = arg;
    struct fg__watcher *w = srv->watchers;
    while (w) {
        struct fg__watcher *next = w->next;
        if (w->evcon == evcon) {
            struct evhttp_request *req = w->req;
            unlink_watcher(srv, w);
            if (!evhttp_request_get_connection(req))
                evhttp_send_reply_end(req); /* detached from the dead connection: this frees it */
        }
        w = next;
    }
}

static void send_buffer(struct fg__watcher *w, struct evbuffer *buf)
{
    evhttp_send_reply_chunk(w->req, buf);
}

static void send_json(struct fg__watcher *w, const char *type, json_object *obj);
static json_object *parse_text(const struct fg__text *t);

/* A Table watch (kubectl get -w) gets each object as a one-row Table. */
static void send_table_event(struct fg__watcher *w, enum fg__ev_type as, struct fg__text *text)
{
    static const char *const names[FG__EV__COUNT] = { "ADDED", "MODIFIED", "DELETED" };
    json_object *obj = parse_text(text);
    json_object *table = fg__table_new(w->type);
    fg__table_add_row(table, w->type, obj);
    w->sent++;
    w->srv->events_sent++;
    send_json(w, names[as], table);
    json_object_put(table);
    json_object_put(obj);
}

/* Sends {"type":T,"object":<text>}\n, the object's bytes by reference (a Table when asked for). */
static void send_event(struct fg__watcher *w, enum fg__ev_type as, struct fg__text *text)
{
    static const char *const prefixes[FG__EV__COUNT] = {
        "{\"type\":\"ADDED\",\"object\":", "{\"type\":\"MODIFIED\",\"object\":", "{\"type\":\"DELETED\",\"object\":",
    };
    if (w->table) {
        send_table_event(w, as, text);
        return;
    }
    struct evbuffer *scratch = w->srv->scratch;
    evbuffer_add_reference(scratch, prefixes[as], strlen(prefixes[as]), NULL, NULL);
    fg__text_add_to_evbuffer(text, scratch);
    evbuffer_add_reference(scratch, "}\n", 2, NULL, NULL);
    w->sent++;
    w->srv->events_sent++;
    send_buffer(w, scratch);
}

static void send_json(struct fg__watcher *w, const char *type, json_object *obj)
{
    struct evbuffer *scratch = w->srv->scratch;
    size_t len = 0;
    const char *s = fg_json_text(obj, &len);
    evbuffer_add_printf(scratch, "{\"type\":\"%s\",\"object\":", type);
    evbuffer_add(scratch, s, len);
    evbuffer_add(scratch, "}\n", 2);
    send_buffer(w, scratch);
}

static void send_bookmark(struct fg__watcher *w, bool initial_events_end)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string(w->type->kind));
    json_object_object_add(o, "apiVersion", json_object_new_string(w->type->api_version));
    json_object *meta = fg_json_ensure_obj(o, "metadata");
    char rv[24];
    snprintf(rv, sizeof(rv), "%" PRIu64, w->srv->store.rv);
    fg_json_set_str(meta, "resourceVersion", rv);
    if (initial_events_end)
        fg_json_set_str(fg_json_ensure_obj(meta, "annotations"), "k8s.io/initial-events-end", "true");
    send_json(w, "BOOKMARK", o);
    json_object_put(o);
}

/* Selectors only: the namespace is checked from the event or the key range. */
static bool matches(const struct fg__watcher *w, json_object *obj)
{
    return obj && fg_selector_match_labels(&w->labels, obj) && fg_selector_match_fields(&w->fields, obj);
}

static bool backlogged(const struct fg__watcher *w)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(w->evcon);
    return bev && evbuffer_get_length(bufferevent_get_output(bev)) > MAX_BACKLOG;
}

static bool needs_object(const struct fg__watcher *w)
{
    return w->labels.n || w->fields.n;
}

static json_object *parse_text(const struct fg__text *t)
{
    json_object *o = NULL;
    if (t && fg_json_parse(t->data, t->len, 0, &o, NULL) != FG_OK)
        return NULL; /* texts are the store's own serializations: they always parse */
    return o;
}

/* Sends ev to w as the event type its selectors make of it (obj/old: the objects, or NULL to parse
 * them from the texts). With may_drop, a stuck consumer is dropped instead (never while its own
 * connection's callback runs); returns false when w was dropped. */
static bool deliver(struct fg__watcher *w, struct fg__event *ev, json_object *obj, json_object *old, bool may_drop)
{
    if (w->ns && !fg_str_eq(w->ns, ev->ns))
        return true;
    bool now = true, before = true;
    if (needs_object(w)) {
        json_object *own_obj = obj ? NULL : parse_text(ev->text);
        json_object *own_old = old || ev->kind != FG__EV_MODIFIED ? NULL : parse_text(ev->old_text);
        now = matches(w, obj ? obj : own_obj);
        before = ev->kind == FG__EV_MODIFIED ? matches(w, old ? old : own_old) : now;
        json_object_put(own_obj);
        json_object_put(own_old);
    }
    enum fg__ev_type as;
    if (now && before)
        as = ev->kind;
    else if (now)
        as = FG__EV_ADDED;
    else if (before)
        as = FG__EV_DELETED;
    else
        return true;
    if (may_drop && backlogged(w)) {
        drop(w);
        return false;
    }
    send_event(w, as, ev->text);
    return true;
}

void fg__watch_on_event(void *arg, struct fg__event *ev, json_object *obj, json_object *old)
{
    struct fg_apiserver *srv = arg;
    for (struct fg__watcher *w = srv->watchers, *next; w; w = next) {
        next = w->next;
        if (w->type == ev->type)
            deliver(w, ev, obj, old, true);
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    finish(arg);
}

static void on_bookmark(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_bookmark(arg, false);
}

static void send_expired(struct fg__watcher *w, uint64_t rv)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "too old resource version: %" PRIu64 " (%" PRIu64 ")", rv, w->srv->store.floor + 1);
    json_object *status = fg__status_new(410, "Expired", msg, NULL);
    send_json(w, "ERROR", status);
    json_object_put(status);
}

static void send_initial(struct fg__watcher *w)
{
    struct fg__bucket *b = fg__store_bucket(&w->srv->store, w->type);
    char *nsprefix = w->ns ? fg_asprintf("%s/", w->ns) : NULL;
    for (size_t i = fg__store_lower_bound(b, nsprefix ? nsprefix : ""); i < b->n; i++) {
        const struct fg__entry *e = b->v[i];
        if (nsprefix && !fg_str_has_prefix(e->key, nsprefix))
            break;
        if (matches(w, e->obj))
            send_event(w, FG__EV_ADDED, e->text);
    }
    free(nsprefix);
}

/* Parses resourceVersion; replies 400 and returns false when malformed. */
static bool parse_rv(struct evhttp_request *req, const struct evkeyvalq *q, uint64_t *rv)
{
    const char *s = fg__query_get(q, "resourceVersion");
    char *end = NULL;
    *rv = 0;
    if (s && *s) {
        *rv = strtoull(s, &end, 10);
        if (*end || *s == '-') {
            fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "invalid resource version \"%s\"", s);
            return false;
        }
    }
    return true;
}

void fg__watch_start(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                     const struct evkeyvalq *query, const struct fg__list_opts *opts)
{
    uint64_t rv;
    long timeout_s = opts->timeout_s;
    struct fg_selector labels, fields;
    if (!parse_rv(req, query, &rv) || !fg__parse_selectors(req, query, &labels, &fields))
        return;
    struct fg__watcher *w = fg_calloc(1, sizeof(*w));
    w->srv = srv;
    w->req = req;
    w->evcon = evhttp_request_get_connection(req);
    w->type = route->type;
    w->ns = route->ns ? fg_strdup(route->ns) : NULL;
    const char *query_text = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    w->query = fg_strdup(query_text ? query_text : "");
    w->labels = labels;
    w->fields = fields;
    w->table = fg__table_wanted(req);
    w->next = srv->watchers;
    if (w->next)
        w->next->prev = w;
    srv->watchers = w;
    srv->nwatchers++;
    evhttp_connection_set_closecb(w->evcon, fg__watch_on_connection_close, srv);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      w->table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : "application/json");
    evhttp_send_reply_start(req, 200, "OK");

    /* sendInitialEvents (with resourceVersionMatch=NotOlderThan) streams the current state whatever
     * the RV, as a list would; otherwise RV 0 means "current state", RV N "changes after N". */
    bool initial_events = opts->send_initial_events;
    if (rv && !initial_events && rv < srv->store.floor) {
        send_expired(w, rv);
        finish(w);
        return;
    }
    if (!rv || initial_events) {
        send_initial(w);
        if (initial_events)
            send_bookmark(w, true);
    } else {
        for (size_t i = 0; i < srv->store.count; i++) {
            struct fg__event *ev = fg__store_history(&srv->store, i);
            if (ev->rv > rv && ev->type == w->type)
                deliver(w, ev, NULL, NULL, false);
        }
    }
    if (timeout_s) {
        struct timeval tv = { timeout_s, 0 };
        w->timeout_ev = evtimer_new(srv->base, on_timeout, w);
        evtimer_add(w->timeout_ev, &tv);
    }
    if (opts->allow_bookmarks) {
        struct timeval tv = { srv->bookmark_ms / 1000, (srv->bookmark_ms % 1000) * 1000 };
        w->bookmark_ev = event_new(srv->base, -1, EV_PERSIST, on_bookmark, w);
        evtimer_add(w->bookmark_ev, &tv);
    }
}

size_t fg__watch_drop_all(struct fg_apiserver *srv)
{
    size_t n = 0;
    while (srv->watchers) {
        drop(srv->watchers);
        n++;
    }
    return n;
}

size_t fg__watch_expire_all(struct fg_apiserver *srv)
{
    size_t n = 0;
    while (srv->watchers) {
        struct fg__watcher *w = srv->watchers;
        send_expired(w, srv->store.rv);
        finish(w);
        n++;
    }
    return n;
}
