/*
 * client_int — what client.c (the connection and the client's life) and client_call.c (the calls
 * on it) share. Internal to nodeagent/grpc.
 *
 * Ownership: the client owns every call object (a list). A call object outlives its user's handle:
 * it is freed once it has ended (done ran, or it was cancelled) and its stream is closed — by
 * nghttp2, or because the connection is gone. A call that never reached the wire (the connection
 * had already failed) is ended by the `report` event, so that `done` never runs inside the function
 * that started the call.
 *
 * Re-entrancy (h2_int.h): every entry from the loop is bracketed by fg__grpc_client_enter /
 * fg__grpc_client_leave; a client freed inside a callback is only marked, and the outermost leave
 * frees it. When the connection is over, that leave ends every pending call with UNAVAILABLE and
 * releases the transport; the client stays, failing new calls, until it is freed.
 */
#ifndef FG_GRPC_CLIENT_INT_H
#define FG_GRPC_CLIENT_INT_H

#include "base/buf.h"
#include "nodeagent/grpc/client.h"
#include "nodeagent/grpc/h2_int.h"
#include "nodeagent/grpc/message_int.h"

struct fg_grpc_client {
    struct fg__h2 h2;                     /* session and bev NULL once the connection is gone;
                                             h2.why says why */
    struct event_base *base;
    char *socket_path;
    size_t max_message;
    struct event *kick;                   /* sends what calls started outside a callback queued */
    struct event *report;                 /* ends calls that never reached the wire */
    struct fg_grpc_client_call *calls;
    bool free_requested;
};

struct fg_grpc_client_call {
    struct fg_grpc_client *client;
    struct fg_grpc_client_call *prev, *next;
    char *path;
    int32_t stream_id;                    /* 0 until on the wire */
    bool stream_open;
    bool ended;                           /* done ran or the call was cancelled: no more callbacks */
    bool streaming;
    fg_grpc_message_fn *on_message;
    fg_grpc_done_fn *done;
    void *ud;
    uint64_t timeout_ms;
    struct event *deadline;
    struct evbuffer *request;             /* what nghttp2 has not taken yet */
    char *unsent_why;                     /* why a call never reached the wire */
    /* The response. */
    int http_status;                      /* 0 until :status */
    int grpc_status;                      /* -1 until grpc-status */
    char *grpc_message;
    struct fg__grpc_reader reader;
    struct fg_buf response;               /* unary: the one message */
    bool too_many;                        /* unary: a second message arrived */
};

/* client_call.c */
void fg__grpc_client_set_callbacks(nghttp2_session_callbacks *cbs);
/* Puts a new call on the wire, or marks it for `report` when the connection is gone. */
void fg__grpc_client_call_start(struct fg_grpc_client_call *call, const ProtobufCMessage *req);
/* Runs done (once; a no-op for an ended call) and frees the call if its stream is closed. */
void fg__grpc_client_call_end(struct fg_grpc_client_call *call, enum fg_grpc_status status, const char *message,
                              const uint8_t *resp, size_t len);
/* Frees an ended call whose stream is closed (or never opened); a no-op otherwise. */
void fg__grpc_client_call_release(struct fg_grpc_client_call *call);

/* client.c */
void fg__grpc_client_enter(struct fg_grpc_client *c);
void fg__grpc_client_leave(struct fg_grpc_client *c);
/* Ends every call not yet ended; callbacks may add and remove calls meanwhile. */
void fg__grpc_client_end_all(struct fg_grpc_client *c, enum fg_grpc_status status, const char *message);

#endif
