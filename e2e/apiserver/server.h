/*
 * server — the test API server's private state, shared by its HTTP-facing files.
 *
 * Files: server.c (lifecycle, listener, restart, threads), tls.c (--tls certificate and connections),
 * http.c (request entry, token check, routing, reply helpers, fault rules and latency),
 * http_objects.c (GET/POST/PUT/PATCH/DELETE of objects), protobuf.c (protobuf request bodies, protobuf.h),
 * http_list.c (LIST, paging), http_discovery.c (aggregated and legacy discovery), openapi.c (OpenAPI v3), table.c (Tables),
 * watch.c (watch streams and the event fan-out), admin.c (the /fracgpu-test/ control paths), state.c
 * (state files). Admission (CRDs, schemas, webhooks) sits below, in admit.h; a write waiting for a
 * webhook is an fg__write, suspended without blocking the loop. Nothing outside
 * e2e/apiserver includes this header. Everything here runs on the loop thread.
 *
 * Watches: each watch is an fg__watcher holding its evhttp request while the chunked reply is
 * open. libevent frees a request together with its connection, so a watcher is unlinked before the
 * server closes a connection on purpose, and on_connection_close (set on every watch connection)
 * unlinks it when the peer goes away; a request libevent detached from its dead connection is ours
 * to finish with evhttp_send_reply_end, which frees it.
 */
#ifndef FG_E2E_APISERVER_SERVER_H
#define FG_E2E_APISERVER_SERVER_H

#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/json.h"
#include "e2e/apiserver/admit.h"
#include "e2e/apiserver/apiserver.h"
#include "e2e/apiserver/registry.h"
#include "operator/kube/selector.h"
#include "e2e/apiserver/store.h"

#define FG__ADMIN_PREFIX "/fracgpu-test/"

struct fg__watcher {
    struct fg__watcher *prev, *next;
    struct fg_apiserver *srv;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    const struct fg__type *type;
    char *ns; /* NULL: every namespace */
    struct fg_selector labels, fields;
    struct event *timeout_ev, *bookmark_ev;
    char *query;         /* the request's query, for stats */
    uint64_t sent;       /* events written to this watcher */
    bool table;          /* events carry one-row Tables (Accept: ...;as=Table) */
};

/* Requests waiting out injected latency. */
struct fg__delayed {
    struct fg__delayed *prev, *next;
    struct fg_apiserver *srv;
    struct evhttp_request *req;
    struct event *ev;
};

/* "Answer the next `remaining` requests (matching method and path prefix) with `code`." */
struct fg__fault {
    unsigned remaining;
    int code;
    unsigned retry_after_s;
    char *method;      /* NULL: any */
    char *path_prefix; /* NULL: any */
};

/* A parsed resource path. */
struct fg__route {
    const struct fg__type *type;
    char *ns;   /* NULL for cluster-scoped paths and all-namespace lists */
    char *name; /* NULL for collections */
    char *sub;  /* subresource or NULL */
};

/* A create, update or patch of an object (http_objects.c), kept while an admission webhook it
 * needs has not answered; linked in srv->writes meanwhile. The request may lose its connection in
 * the meantime: libevent then detaches it, and the reply sent at the end frees it. */
struct fg__write {
    struct fg__write *prev, *next;
    bool suspended; /* linked in srv->writes */
    struct fg_apiserver *srv;
    struct evhttp_request *req;
    struct fg__route route; /* its own copies */
    enum evhttp_cmd_type cmd;
    enum fg__write_scope scope;
    enum fg__patch_kind kind;
    json_object *body;
    bool dry_run;           /* dryRun=All: everything but storing */
    struct fg__admission adm;
};

struct fg_apiserver {
    char *host;
    uint16_t port;
    char *state_file;
    uint32_t bookmark_ms;
    size_t max_body;
    struct fg__registry reg;
    struct fg__store store;
    struct event_base *base;
    struct evhttp *http; /* NULL while down during a restart */
    struct evbuffer *scratch;
    struct fg_json_parser parser;   /* request bodies, one tokener reused */
    struct fg__watcher *watchers;
    size_t nwatchers;
    struct fg__delayed *delayed;
    struct fg__write *writes;       /* writes waiting for a webhook */
    struct fg__hook_client *hooks;  /* admission webhook calls (hook_client.h) */
    struct fg__fault fault;
    uint32_t latency_ms;
    uint32_t down_ms;
    uint64_t requests;
    uint64_t events_sent;         /* watch events written to every watcher, over the server's life */
    pthread_t thread;
    bool thread_running;
    struct ssl_ctx_st *ssl_ctx; /* NULL: plain HTTP */
    char *cert_pem;             /* the server's certificate (its own CA), with ssl_ctx */
    char *token;                /* bearer token every request must carry, or NULL */
    FILE *audit;                /* --audit-log (audit.c), or NULL */
};

/* server.c */
enum fg_err fg__server_listen(struct fg_apiserver *srv, char *errmsg) FG_MUST_USE;
/* Closes every connection and the listener now and comes back after down_ms, keeping the data. */
void fg__server_restart(struct fg_apiserver *srv, uint32_t down_ms);

/* tls.c: the certificate and SSL_CTX (--tls), and TLS on each accepted connection. */
enum fg_err fg__tls_init(struct fg_apiserver *srv, char *errmsg) FG_MUST_USE;
void fg__tls_cleanup(struct fg_apiserver *srv);
/* Makes srv->http wrap connections in TLS when ssl_ctx is set (after each evhttp_new). */
void fg__tls_attach(struct fg_apiserver *srv);

/* audit.c: appends the request's line to the audit log, when there is one. */
void fg__audit_record(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                      const struct evkeyvalq *query);

/* http.c */
/* The request's bearer token (what follows "Authorization: Bearer "), or NULL. */
const char *fg__http_bearer_token(struct evhttp_request *req);
void fg__http_on_request(struct evhttp_request *req, void *arg);
void fg__http_dispatch(struct fg_apiserver *srv, struct evhttp_request *req);
/* Replies with o's JSON (o borrowed), as json-c writes it: its print buffer stays on o until o is
 * put, so reply this way with objects made for the reply; a stored object goes by its text. */
void fg__reply_json(struct evhttp_request *req, int code, json_object *o);
/* Replies with JSON text already serialized (a stored object's), by reference. */
void fg__reply_text(struct evhttp_request *req, int code, struct fg__text *text);
/* The same with another media type (Tables, aggregated discovery); o stays the caller's. */
void fg__reply_json_as(struct evhttp_request *req, int code, json_object *o, const char *content_type);
/* Replies with a Status (taken); its code is the HTTP code. */
void fg__reply_status(struct evhttp_request *req, json_object *status);
void fg__reply_error(struct evhttp_request *req, enum fg_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The query parameter (borrowed from the parsed query) or NULL. */
const char *fg__query_get(const struct evkeyvalq *q, const char *key);
/* Reads and parses the body: FG_OK with *out, else an error already replied. */
enum fg_err fg__read_body(struct fg_apiserver *srv, struct evhttp_request *req, json_object **out) FG_MUST_USE;
/* The same for a protobuf body (protobuf.h) of group/version/kind (a resource's kind, or what one of
 * its subresources takes: Binding, policy/v1 Eviction, DeleteOptions). */
enum fg_err fg__read_protobuf_body(struct fg_apiserver *srv, struct evhttp_request *req, const char *group,
                                   const char *version, const char *kind,
                                   json_object **out) FG_MUST_USE;
/* Drops the requests waiting out injected latency, before their connections are closed. */
void fg__delayed_flush(struct fg_apiserver *srv);
/* A request libevent detached from its closed connection is ours to release; replying frees it.
 * Returns whether req was such a request. */
bool fg__release_if_detached(struct evhttp_request *req);

/* http_objects.c */
void fg__http_object(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                     const struct evkeyvalq *query);
/* Drops the writes waiting for webhooks (their calls cancelled), before their connections are closed. */
void fg__writes_flush(struct fg_apiserver *srv);

/* list_opts.c: a collection GET's query parameters, parsed as kube-apiserver decodes ListOptions. */
struct fg__list_opts {
    bool watch;
    bool allow_bookmarks;
    bool send_initial_events;
    long limit;     /* 0: no limit */
    long timeout_s; /* 0: none */
};
/* Fills out; on a malformed integer replies 400 BadRequest naming the parameter and returns false. */
bool fg__list_opts_parse(struct evhttp_request *req, const struct evkeyvalq *query, struct fg__list_opts *out);
/* A query integer as Go's strconv.ParseInt(s, 10, 64) reads it: no spaces, an optional sign, at
 * least one digit, within 64 bits. */
bool fg__query_int64(const char *s, long long *out);

/* http_list.c */
void fg__http_list(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                   const struct evkeyvalq *query, const struct fg__list_opts *opts);
/* Parses labelSelector and fieldSelector; on failure replies 400 and returns false. */
bool fg__parse_selectors(struct evhttp_request *req, const struct evkeyvalq *query, struct fg_selector *labels,
                         struct fg_selector *fields);

/* http_discovery.c: /api, /apis, /api/v1, /apis/G/V; returns false when path is none of them. */
bool fg__http_discovery(struct fg_apiserver *srv, struct evhttp_request *req, const char *path);

/* openapi.c: /openapi/v3 and /openapi/v3/{api/v1,apis/G/V}; returns false when path is none of them. */
bool fg__http_openapi(struct fg_apiserver *srv, struct evhttp_request *req, const char *path);

/* table.c: Table replies (meta.k8s.io/v1) for `kubectl get`. */
/* Does the request's Accept header ask for a Table? */
bool fg__table_wanted(struct evhttp_request *req);
/* A Table with t's column definitions and no rows (a new object). */
json_object *fg__table_new(const struct fg__type *t);
/* Appends obj's row (cells and a PartialObjectMetadata) to a table from fg__table_new. */
void fg__table_add_row(json_object *table, const struct fg__type *t, json_object *obj);
/* Replies 200 with the table (borrowed) and the Table content type. */
void fg__table_reply(struct evhttp_request *req, json_object *table);
/* table_cells.c: the cell of a `compute` column (the column row, for its jsonPath), or NULL when
 * `what` is unknown or the value is absent. */
json_object *fg__table_cell_computed(const char *what, json_object *column, json_object *obj);
/* apimachinery's HumanDuration of a whole number of seconds ("45s", "2m3s", "5h", "3d4h", "2y3d",
 * "<invalid>" before -1 s) as a string cell. */
json_object *fg__human_duration(long long seconds);

/* watch.c */
void fg__watch_start(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *route,
                     const struct evkeyvalq *query, const struct fg__list_opts *opts);
void fg__watch_on_event(void *srv, struct fg__event *ev, json_object *obj, json_object *old);
/* Closes every watch connection abruptly; returns how many. */
size_t fg__watch_drop_all(struct fg_apiserver *srv);
/* Sends a 410 Expired ERROR event on every watch and ends it; returns how many. */
size_t fg__watch_expire_all(struct fg_apiserver *srv);
void fg__watch_on_connection_close(struct evhttp_connection *evcon, void *arg);

/* admin.c */
void fg__admin_handle(struct fg_apiserver *srv, struct evhttp_request *req, const char *path,
                      const struct evkeyvalq *query);

/* state.c */
enum fg_err fg__state_save(struct fg_apiserver *srv, char *errmsg) FG_MUST_USE;
/* Loads the state file into the (empty) store; FG_E_NOT_FOUND_LOCAL when it does not exist. */
enum fg_err fg__state_load(struct fg_apiserver *srv, char *errmsg) FG_MUST_USE;

#endif
