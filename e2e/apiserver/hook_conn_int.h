/*
 * hook_conn_int — the webhook client's connections (hook_conn.c), for hook_client.c and nothing else.
 *
 * A connection is one of libevent's HTTP client connections (evhttp_connection) over an OpenSSL
 * bufferevent: TLS to one address, for one server name (SNI and the name or IP the certificate
 * must hold) and one CA bundle. It carries one call at a time and waits in the pool's idle list
 * between calls, up to 32 in all, until libevent notices the peer closed it or it sits quiet for
 * 90 s (Go's idle timeout). A connection libevent has closed is never connected again (an OpenSSL
 * bufferevent cannot carry a second session): it is freed, and never inside libevent's callbacks —
 * it waits on the `closed` list, which the reap event empties from the loop. The pool also keeps an
 * SSL_CTX per CA bundle and, from the first host name that is not an address, an evdns resolver.
 */
#ifndef FG_E2E_APISERVER_HOOK_CONN_INT_H
#define FG_E2E_APISERVER_HOOK_CONN_INT_H

#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define FG__HOOK_MAX_REPLY (4u << 20) /* bytes of a reply body */

struct fg__hook_tls;

struct fg__hook_conn {
    struct fg__hook_conn *next; /* idle or closed list */
    struct fg__hook_pool *pool;
    struct evhttp_connection *evcon;
    char *addr;                 /* "ADDRESS:PORT" dialled */
    char *server_name;
    SSL_CTX *ctx;
    bool busy;                  /* a call's, not idle */
    bool closed;                /* libevent closed it after its handshake (its close callback ran) */
    bool reused;                /* it carried a call before the current one */
};

struct fg__hook_pool {
    struct event_base *base;
    struct evdns_base *dns;
    struct fg__hook_conn *idle;
    size_t nidle;
    struct fg__hook_conn *closed;
    struct event *reap;
    struct fg__hook_tls *tls;
};

enum fg_err fg__hook_pool_init(struct fg__hook_pool *p, struct event_base *base) FG_MUST_USE;
/* Frees every connection, idle or not (libevent frees their requests without reporting them). */
void fg__hook_pool_cleanup(struct fg__hook_pool *p);
/* The SSL_CTX trusting this CA bundle (PEM; NULL: the system's roots), made on first use. */
enum fg_err fg__hook_pool_ctx(struct fg__hook_pool *p, const void *ca, size_t ca_len, SSL_CTX **out,
                              char *errmsg) FG_MUST_USE;
/* An idle connection to addr for server_name and ctx, now busy; NULL when none. */
struct fg__hook_conn *fg__hook_pool_take(struct fg__hook_pool *p, const char *addr, const char *server_name,
                                         SSL_CTX *ctx);
/* A new busy connection that libevent connects to host:port (an address, or a name it resolves
 * asynchronously) when a request is made on it; addr is its key. */
enum fg_err fg__hook_conn_new(struct fg__hook_pool *p, const char *host, int port, const char *addr,
                              const char *server_name, SSL_CTX *ctx, struct fg__hook_conn **out,
                              char *errmsg) FG_MUST_USE;
/* Ends k's call: k waits for the next one when keep is true and it may, else it is freed from the
 * loop. Safe inside libevent's callbacks. */
void fg__hook_conn_release(struct fg__hook_conn *k, bool keep);

#endif
