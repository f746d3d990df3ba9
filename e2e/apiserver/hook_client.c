/* hook_client — webhook calls on libevent's HTTP client over OpenSSL bufferevents; see hook_client.h.
 *
 * Who frees what: libevent owns a request from evhttp_make_request until it reports it (the
 * response callback, right after the error callback on a failure) and frees it when that callback
 * returns; the connections are the pool's (hook_conn_int.h). libevent hands a request back
 * unanswered without running its error callback in one case only: its connect callback gave up on
 * a refused connection (evhttp_connection_cb), by which time the socket error is gone. */
#include "e2e/apiserver/hook_client.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/hook_conn_int.h"

struct fg__hook_client {
    struct fg__hook_pool pool;
    struct fg__hook_call *calls;
    struct fg_json_parser parser; /* replies, one tokener reused */
};

struct fg__hook_call {
    struct fg__hook_call *prev, *next;
    struct fg__hook_client *c;
    struct fg__hook_conn *conn;
    struct evhttp_request *req; /* libevent's until it reports it; NULL then */
    struct event *timer;        /* the deadline; activated at once for an outcome reached while posting */
    char *url;
    char *uri;                  /* the URL's path and query */
    char *host_header;          /* the URL's host[:port] */
    char *server_name;          /* the URL's host, without brackets */
    char *addr;                 /* "ADDRESS:PORT" dialled */
    char *dial_host;
    int dial_port;
    SSL_CTX *ctx;
    char *body;
    size_t body_len;
    enum evhttp_request_error failure; /* what libevent's error callback said, when it ran */
    int failure_errno;
    bool failed;
    bool got_headers;
    bool retried;               /* sent again on a fresh connection after a kept-alive one had gone */
    bool posting;               /* inside fg__hook_client_post */
    bool ended;                 /* err, reply and msg hold the outcome */
    enum fg_err err;
    json_object *reply;
    char msg[FG_ERRMSG_MAX];
    fg__hook_done_fn *done;
    void *ud;
};

/* Lets the call's connection go: kept alive for the next call when keep is true and it may be. */
static void conn_release(struct fg__hook_call *call, bool keep)
{
    if (call->conn)
        fg__hook_conn_release(call->conn, keep);
    call->conn = NULL;
}

/* Stops the call's request, if libevent still has it (its error callback then ignores the call). */
static void request_cancel(struct fg__hook_call *call)
{
    struct evhttp_request *req = call->req;
    if (!req)
        return;
    call->req = NULL;
    evhttp_cancel_request(req);
}

static void call_free(struct fg__hook_call *call)
{
    struct fg__hook_client *c = call->c;
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    request_cancel(call);
    conn_release(call, false);
    if (call->timer)
        event_free(call->timer);
    json_object_put(call->reply);
    free(call->url);
    free(call->uri);
    free(call->host_header);
    free(call->server_name);
    free(call->addr);
    free(call->dial_host);
    free(call->body);
    free(call);
}

void fg__hook_call_cancel(struct fg__hook_call *call)
{
    call_free(call);
}

enum fg_err fg__hook_client_new(struct event_base *base, struct fg__hook_client **out)
{
    struct fg__hook_client *c = fg_calloc(1, sizeof(*c));
    if (fg__hook_pool_init(&c->pool, base) != FG_OK) {
        free(c);
        return FG_E_NOMEM;
    }
    *out = c;
    return FG_OK;
}

void fg__hook_client_free(struct fg__hook_client *c)
{
    if (!c)
        return;
    while (c->calls)
        call_free(c->calls);
    fg__hook_pool_cleanup(&c->pool);
    fg_json_parser_cleanup(&c->parser);
    free(c);
}

/* The call's URL parts and the address it dials, read with libevent's URI and address parsers. */
static enum fg_err call_target(struct fg__hook_call *call, const struct fg__hook_target *target, char *errmsg)
{
    struct evhttp_uri *u = evhttp_uri_parse(target->url);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL, *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : 0;
    if (!scheme || strcasecmp(scheme, "https") || !host || !*host || port == 0) {
        if (u)
            evhttp_uri_free(u);
        return fg_errmsg(errmsg, FG_E_INVAL, "webhook URL %s is not an https URL", target->url);
    }
    const char *path = evhttp_uri_get_path(u), *query = evhttp_uri_get_query(u);
    bool bracketed = host[0] == '[';
    call->server_name = bracketed ? fg_strndup(host + 1, strlen(host) - 2) : fg_strdup(host);
    call->host_header = port > 0 ? fg_asprintf("%s:%d", host, port) : fg_strdup(host);
    call->uri = fg_asprintf("%s%s%s", *path ? path : "/", query ? "?" : "", query ? query : "");
    call->dial_port = port > 0 ? port : 443;
    evhttp_uri_free(u);
    if (!target->dial) {
        call->addr = fg_asprintf(bracketed ? "[%s]:%d" : "%s:%d", call->server_name, call->dial_port);
        call->dial_host = fg_strdup(call->server_name);
        return FG_OK;
    }
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char ip[INET6_ADDRSTRLEN];
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (evutil_parse_sockaddr_port(target->dial, (struct sockaddr *)&ss, &len) != 0 ||
        !evutil_inet_ntop(ss.ss_family, ss.ss_family == AF_INET6 ? (void *)&v6->sin6_addr : (void *)&v4->sin_addr,
                          ip, sizeof(ip)))
        return fg_errmsg(errmsg, FG_E_INVAL, "bad address %s", target->dial);
    call->addr = fg_strdup(target->dial);
    call->dial_host = fg_strdup(ip);
    call->dial_port = ntohs(ss.ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port);
    return FG_OK;
}

/* Reports the outcome: the call is freed, then its done function runs. */
static void report(struct fg__hook_call *call)
{
    fg__hook_done_fn *done = call->done;
    void *ud = call->ud;
    enum fg_err err = call->err;
    json_object *reply = call->reply;
    char msg[FG_ERRMSG_MAX];
    snprintf(msg, sizeof(msg), "%s", call->msg);
    call->reply = NULL;
    call_free(call);
    done(ud, err, reply, msg);
}

/* Sets the outcome (msg already written) and reports it, from the loop when still posting. */
static void end(struct fg__hook_call *call, enum fg_err err, json_object *reply)
{
    call->err = err;
    call->reply = reply;
    call->ended = true;
    if (!call->posting)
        report(call);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg__hook_call *call = arg;
    if (!call->ended) {
        request_cancel(call);
        call->err = fg_errmsg(call->msg, FG_E_TIMEOUT,
                              "failed to call webhook: Post \"%s\": context deadline exceeded", call->url);
    }
    report(call);
}

/* Why the call's connection carried no reply, in the words of Go's net/http and crypto/tls. */
static void failure_reason(struct fg__hook_call *call, char *out, size_t size)
{
    struct fg__hook_conn *k = call->conn;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(k->evcon);
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    unsigned long ssl_err = bufferevent_get_openssl_error(bev);
    int dns_err = bufferevent_socket_get_dns_error(bev);
    const char *why = call->failure_errno ? evutil_socket_error_to_string(call->failure_errno) : "";
    if (dns_err)
        snprintf(out, size, "dial tcp: lookup %s: %s", call->dial_host, evutil_gai_strerror(dns_err));
    else if (verify != X509_V_OK)
        snprintf(out, size, "tls: failed to verify certificate: x509: %s", X509_verify_cert_error_string(verify));
    else if (!call->failed)
        snprintf(out, size, "dial tcp %s: connect: connection refused", call->addr);
    else if (call->failure == EVREQ_HTTP_INVALID_HEADER || call->failure == EVREQ_HTTP_DATA_TOO_LONG)
        snprintf(out, size, "net/http: HTTP/1.x transport connection broken: malformed HTTP response");
    else if (!k->closed && ssl_err && ERR_reason_error_string(ssl_err))
        snprintf(out, size, "tls: %s", ERR_reason_error_string(ssl_err));
    else if (!k->closed && *why) /* Go's errno texts are in lower case */
        snprintf(out, size, "dial tcp %s: connect: %c%s", call->addr,
                 *why >= 'A' && *why <= 'Z' ? *why - 'A' + 'a' : *why, why + 1);
    else
        snprintf(out, size, "EOF");
}

static enum fg_err send_on(struct fg__hook_call *call, struct fg__hook_conn *k, char *errmsg);

/* libevent gave the request back without a response. A kept-alive connection the peer had closed
 * before answering anything is replaced once; any other failure ends the call. */
static void on_failure(struct fg__hook_call *call)
{
    char reason[FG_ERRMSG_MAX];
    failure_reason(call, reason, sizeof(reason));
    bool stale = call->conn->reused && call->failed && call->failure == EVREQ_HTTP_EOF && !call->got_headers;
    conn_release(call, false);
    if (stale && !call->retried) {
        call->retried = true;
        if (send_on(call, NULL, reason) == FG_OK)
            return;
    }
    enum fg_err err = fg_errmsg(call->msg, FG_E_IO, "failed to call webhook: Post \"%s\": %s", call->url, reason);
    end(call, err, NULL);
}

static void on_response(struct evhttp_request *req, void *arg)
{
    struct fg__hook_call *call = arg;
    call->req = NULL;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    if (!status) {
        on_failure(call);
        return;
    }
    conn_release(call, true);
    json_object *reply = NULL;
    enum fg_err err = FG_OK;
    if (status != 200) {
        err = fg_errmsg(call->msg, FG_E_IO, "received invalid webhook response: HTTP %d", status);
    } else {
        struct evbuffer *body = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(body);
        const char *text = len ? (const char *)evbuffer_pullup(body, -1) : "";
        if (fg_json_parser_parse(&call->c->parser, text, len, FG__HOOK_MAX_REPLY, &reply, NULL) != FG_OK)
            err = fg_errmsg(call->msg, FG_E_PARSE, "received invalid webhook response: not JSON");
    }
    end(call, err, reply);
}

/* libevent's error callback: it runs right before the response callback, which then gets no request. */
static void on_error(enum evhttp_request_error error, void *arg)
{
    struct fg__hook_call *call = arg;
    if (!call->req) /* cancelled by this client */
        return;
    call->failure_errno = EVUTIL_SOCKET_ERROR(); /* libevent restores the one that made it fail */
    call->failure = error;
    call->failed = true;
}

static int on_headers(struct evhttp_request *req, void *arg)
{
    (void)req;
    struct fg__hook_call *call = arg;
    call->got_headers = true;
    return 0;
}

/* Sends the call's request on k, or on a new connection when k is NULL. */
static enum fg_err send_on(struct fg__hook_call *call, struct fg__hook_conn *k, char *errmsg)
{
    if (!k) {
        enum fg_err err = fg__hook_conn_new(&call->c->pool, call->dial_host, call->dial_port, call->addr,
                                            call->server_name, call->ctx, &k, errmsg);
        if (err)
            return err;
    }
    call->conn = k;
    struct evhttp_request *req = evhttp_request_new(on_response, call);
    if (!req) {
        conn_release(call, false);
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot start an HTTP call");
    }
    evhttp_request_set_error_cb(req, on_error);
    evhttp_request_set_header_cb(req, on_headers);
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Host", call->host_header);
    evhttp_add_header(headers, "Content-Type", "application/json");
    evhttp_add_header(headers, "Accept", "application/json");
    evbuffer_add(evhttp_request_get_output_buffer(req), call->body, call->body_len);
    call->req = req;
    call->failed = call->got_headers = false;
    if (evhttp_make_request(k->evcon, req, EVHTTP_REQ_POST, call->uri) != 0) {
        if (call->req) { /* taken back out of the connection's queue: still ours */
            call->req = NULL;
            evhttp_request_free(req);
        }
        conn_release(call, false);
        return fg_errmsg(errmsg, FG_E_CONNECT, "dial tcp %s: cannot connect", call->addr);
    }
    return FG_OK;
}

enum fg_err fg__hook_client_post(struct fg__hook_client *c, const struct fg__hook_target *target, const char *body,
                                 fg__hook_done_fn *done, void *ud, struct fg__hook_call **out, char *errmsg)
{
    struct fg__hook_call *call = fg_calloc(1, sizeof(*call));
    call->c = c;
    call->done = done;
    call->ud = ud;
    call->url = fg_strdup(target->url);
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    enum fg_err err = call_target(call, target, errmsg);
    if (!err)
        err = fg__hook_pool_ctx(&c->pool, target->ca, target->ca ? target->ca_len : 0, &call->ctx, errmsg);
    if (!err && !(call->timer = evtimer_new(c->pool.base, on_timer, call)))
        err = fg_errmsg(errmsg, FG_E_NOMEM, "cannot start an HTTP call");
    if (!err) {
        call->body_len = strlen(body);
        call->body = fg_strndup(body, call->body_len);
        call->posting = true;
        err = send_on(call, fg__hook_pool_take(&c->pool, call->addr, call->server_name, call->ctx), errmsg);
        call->posting = false;
    }
    if (err) {
        call_free(call);
        return err;
    }
    struct timeval tv = { target->timeout_s, 0 };
    if (call->ended)
        event_active(call->timer, EV_TIMEOUT, 0);
    else
        evtimer_add(call->timer, &tv);
    *out = call;
    return FG_OK;
}
