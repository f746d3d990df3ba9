/*
 * fake_server — a canned-response HTTP(S) server for the client and loop tests.
 *
 * Runs libevent's evhttp on 127.0.0.1 with a free port, on its own thread. Each request is recorded
 * (method, URI, the headers the client must send, body) and handed to the test's handler on the
 * server thread, which answers with fake_reply or streams chunks with fake_stream. With an SSL_CTX
 * it serves HTTPS through bufferevent_openssl.
 */
#ifndef FG_KUBE_TEST_FAKE_SERVER_H
#define FG_KUBE_TEST_FAKE_SERVER_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

struct evhttp_request;
struct fake_server;

typedef void fake_handler_fn(struct fake_server *s, struct evhttp_request *req, const char *uri, void *ud);

struct fake_request {
    char method[16];
    char *uri;
    char *content_type;   /* NULL when the header was absent */
    char *authorization;
    char *accept;
    char *user_agent;
    char *body;
    size_t body_len;
};

/* tls NULL serves plain HTTP. The server takes a reference on tls. */
struct fake_server *fake_server_start(fake_handler_fn *handler, void *ud, SSL_CTX *tls);
void fake_server_stop(struct fake_server *s);
/* "http://127.0.0.1:PORT" or "https://..." */
const char *fake_server_url(const struct fake_server *s);
int fake_server_port(const struct fake_server *s);

size_t fake_server_nrequests(struct fake_server *s);
/* Copies request i (0-based) into *out; the caller calls fake_request_cleanup. */
void fake_server_request(struct fake_server *s, size_t i, struct fake_request *out);
void fake_request_cleanup(struct fake_request *r);

/* Replies with `code` and `body` (JSON content type); header/value add one more header when not NULL. */
void fake_reply(struct evhttp_request *req, int code, const char *body, const char *header, const char *value);
/* Starts a chunked 200 reply and sends chunks[i] every delay_ms; ends the reply after the last when
 * `end`, otherwise keeps the connection open until the client closes it or the server stops. */
void fake_stream(struct fake_server *s, struct evhttp_request *req, const char *const *chunks, size_t n,
                 unsigned delay_ms, bool end);

#endif
