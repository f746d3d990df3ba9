/*
 * server_int — what server.c (the listener and its connections) and server_call.c (the calls on
 * them) share. Internal to nodeagent/grpc.
 *
 * Ownership: the server owns its connections (a list), a connection owns its calls (a list; each is
 * also the user data of its nghttp2 stream). A call is freed when its stream closes or its
 * connection goes, never by the handler: fg_grpc_call_finish only hands it back. A connection is
 * torn down by the outermost fg__h2_leave that finds it over (h2_int.h), at which point every call a
 * handler still holds gets its gone callback.
 */
#ifndef FG_GRPC_SERVER_INT_H
#define FG_GRPC_SERVER_INT_H

#include <event2/listener.h>
#include <sys/types.h>

#include "base/buf.h"
#include "nodeagent/grpc/h2_int.h"
#include "nodeagent/grpc/message_int.h"
#include "nodeagent/grpc/server.h"

#define FG__GRPC_COMPONENT "grpc"

struct fg_grpc_server {
    struct event_base *base;
    struct evconnlistener *listener;
    char *socket_path;
    dev_t socket_dev;                  /* the file it created, so free removes only that one */
    ino_t socket_ino;
    size_t max_message;
    struct fg_grpc_method *methods;    /* copies; paths owned */
    size_t n_methods;
    struct fg__grpc_conn *conns;
    unsigned next_conn_id;
};

struct fg__grpc_conn {
    struct fg__h2 h2;                  /* first: the session's user data is the connection */
    struct fg_grpc_server *server;
    struct fg__grpc_conn *prev, *next;
    struct fg_grpc_call *calls;
    struct event *kick;                /* sends what handlers queued outside the connection's callbacks */
    unsigned id;                       /* for logs */
    bool closing;                      /* being torn down: calls only mark their state */
};

enum fg__grpc_call_state {
    FG__CALL_RECEIVING,   /* the request is arriving */
    FG__CALL_HANDLED,     /* the handler holds the handle */
    FG__CALL_ENDED,       /* the status is on its way; waiting for the stream to close */
};

struct fg_grpc_call {
    struct fg__grpc_conn *conn;
    struct fg_grpc_call *prev, *next;
    int32_t stream_id;
    enum fg__grpc_call_state state;
    const struct fg_grpc_method *method;     /* once routed */
    /* The request's headers and message. */
    char *path;
    bool post, grpc_content_type, compressed_encoding, has_timeout;
    uint64_t timeout_ns;
    char *content_type;
    struct fg__grpc_reader reader;
    struct fg_buf request;                   /* the first message */
    /* The response. */
    struct evbuffer *out;                    /* message bytes nghttp2 has not taken yet */
    bool headers_sent, out_eof, out_deferred;
    char status_text[12];                    /* the trailers, kept until nghttp2 copies them */
    char *message_text;
    struct event *deadline;
};

/* server_call.c */
void fg__grpc_server_set_callbacks(nghttp2_session_callbacks *cbs);
/* The connection is being torn down: fires the gone callback if a handler holds the call, then
 * frees it. */
void fg__grpc_call_drop(struct fg_grpc_call *call);

/* server.c */
const struct fg_grpc_method *fg__grpc_server_method(const struct fg_grpc_server *s, const char *path);
/* Brackets an entry from the loop (h2_int.h); the last leave may tear the connection down. */
void fg__grpc_conn_enter(struct fg__grpc_conn *conn);
void fg__grpc_conn_leave(struct fg__grpc_conn *conn);

#endif
