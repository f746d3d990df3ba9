/*
 * server — a gRPC server on a unix socket, on the caller's libevent loop.
 *
 * What the kubelet's device-plugin API needs from gRPC and nothing more: unary and server-streaming
 * methods over HTTP/2 (libnghttp2) on a unix socket, messages from protobuf-c, no TLS, no
 * compression, no metadata beyond what the protocol itself uses. gRPC's C core is not used; the
 * wire format is the one in the gRPC specification (doc/PROTOCOL-HTTP2.md), so Go's and Python's
 * gRPC talk to it (test/test_interop.py checks that against Python's grpcio).
 *
 * Threading: everything happens on the thread that runs the event_base given to
 * fg_grpc_server_new: handlers and gone callbacks run there, and every fg_grpc_call_* function
 * must be called there too (from a handler, or later from any event of the same loop). The server
 * takes no locks.
 *
 * A call's life. A request arrives; the server checks it (POST, content-type application/grpc,
 * a registered method, exactly one uncompressed length-prefixed request message no larger than
 * max_message) and answers what fails on its own — HTTP 415 for another content-type (405 for
 * another HTTP method), status 12 UNIMPLEMENTED for a method nobody registered or a compressed
 * message, 8 RESOURCE_EXHAUSTED for a message over the limit (as soon as its length prefix
 * arrives), 13 INTERNAL for a request that ends mid-message or carries no message or two. Every
 * status travels as the grpc-status and grpc-message trailers, the message percent-encoded.
 * Otherwise the method's handler gets the call handle and the request's protobuf bytes, which it
 * unpacks itself. From
 * then on the handler owns the handle until it lets go of it in one of two ways:
 *   - it answers: fg_grpc_call_reply (unary success), or any number of fg_grpc_call_send then
 *     fg_grpc_call_finish (streams), or fg_grpc_call_finish with an error status (either kind).
 *     It may answer at once, inside the handler, or at any later time from the loop's thread;
 *     the device plugin's ListAndWatch stream stays open for the life of the process.
 *   - the call goes away first: the client cancelled it, its deadline (grpc-timeout) passed, its
 *     connection closed, or the server was freed. The method's `gone` callback then runs once
 *     with the handle, which is invalid when it returns.
 * A handle is valid from the handler until one of those, never after; the server frees it.
 *
 * Connections: each accepted connection is one HTTP/2 server session on a bufferevent. A peer that
 * does not speak HTTP/2 (or breaks it) is logged and disconnected; the others are not affected.
 * Output a peer does not read is queued per call up to FG_GRPC_MAX_QUEUED, after which send fails
 * with FG_E_BUSY, so a stuck kubelet cannot grow the agent without bound.
 *
 * Signals: the first server or client sets SIGPIPE to ignored if it is still at its default (a
 * kubelet that hangs up mid-write would otherwise kill the agent); a handler the program installed
 * is kept.
 *
 * Socket file: created at `socket_path` with `mode` (0600 when 0) before it listens; a stale
 * socket file left there by a previous process is removed first, anything that is not a socket is
 * left alone and refused. fg_grpc_server_free removes the file if it is still the one it created.
 *
 * Example — a device plugin's Allocate (unary) and ListAndWatch (stream):
 *
 *     static void allocate(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
 *     {
 *         V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(NULL, len, req);
 *         if (!in) {
 *             fg_grpc_call_finish(call, FG_GRPC_INVALID_ARGUMENT, "not an AllocateRequest");
 *             return;
 *         }
 *         V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
 *         ... fill out from in ...
 *         if (fg_grpc_call_reply(call, &out.base) != FG_OK)
 *             ... the answer was too large; the client got RESOURCE_EXHAUSTED ...
 *         v1beta1__allocate_request__free_unpacked(in, NULL);
 *     }
 *     static void watch(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
 *     {
 *         struct plugin *p = ud;
 *         p->watcher = call;                              // kept open: sent to on every change
 *         (void)fg_grpc_call_send(call, &p->devices.base);
 *     }
 *     static void watch_gone(struct fg_grpc_call *call, void *ud)
 *     {
 *         struct plugin *p = ud;
 *         if (p->watcher == call)
 *             p->watcher = NULL;                          // the kubelet went away
 *     }
 *     const struct fg_grpc_method methods[] = {
 *         { FG_DEVICE_PLUGIN_ALLOCATE, FG_GRPC_UNARY, allocate, NULL, p },
 *         { FG_DEVICE_PLUGIN_LIST_AND_WATCH, FG_GRPC_SERVER_STREAM, watch, watch_gone, p },
 *     };
 *     struct fg_grpc_server_opts opts = { .socket_path = "/var/lib/kubelet/device-plugins/fracgpu.sock",
 *                                         .methods = methods, .n_methods = 2 };
 *     enum fg_err err = fg_grpc_server_new(base, &opts, &p->server, errmsg);
 */
#ifndef FG_GRPC_SERVER_H
#define FG_GRPC_SERVER_H

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "nodeagent/grpc/status.h"

/* Bytes a call may have waiting for a peer that does not read before fg_grpc_call_send refuses. */
#define FG_GRPC_MAX_QUEUED (16u * 1024 * 1024)

struct fg_grpc_server;
struct fg_grpc_call;

enum fg_grpc_method_kind {
    FG_GRPC_UNARY,          /* one request, one response */
    FG_GRPC_SERVER_STREAM,  /* one request, any number of responses */
};

/* A request has arrived for the method: `req` (len bytes, borrowed for the handler's duration) is
 * the request message's protobuf encoding. The handler now owns `call` (see the essay). */
typedef void fg_grpc_handler_fn(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud);
/* The call went away before the handler answered it; `call` is invalid once this returns. */
typedef void fg_grpc_gone_fn(struct fg_grpc_call *call, void *ud);

struct fg_grpc_method {
    const char *path;                /* "/v1beta1.DevicePlugin/Allocate": "/" package.Service "/" Method */
    enum fg_grpc_method_kind kind;
    fg_grpc_handler_fn *handler;
    fg_grpc_gone_fn *gone;           /* NULL when the handler always answers at once */
    void *ud;                        /* given to both */
};

struct fg_grpc_server_opts {
    const char *socket_path;               /* at most 107 bytes */
    unsigned mode;                         /* the socket file's permissions; 0 means 0600 */
    size_t max_message;                    /* largest request message; 0 means FG_GRPC_DEFAULT_MAX_MESSAGE */
    const struct fg_grpc_method *methods;  /* copied */
    size_t n_methods;
};

/* Listens on opts->socket_path and serves on `base` (borrowed; it must outlive the server).
 * FG_E_INVAL (bad path, a method path twice or not starting with '/'), FG_E_IO (the socket cannot
 * be created, or something that is not a socket is in the way), with errmsg. */
enum fg_err fg_grpc_server_new(struct event_base *base, const struct fg_grpc_server_opts *opts,
                               struct fg_grpc_server **out, char *errmsg) FG_MUST_USE;

/* Closes every connection — each call still held by a handler gets its gone callback first —
 * stops listening and removes the socket file. Not from inside one of the server's callbacks.
 * NULL is ignored. */
void fg_grpc_server_free(struct fg_grpc_server *s);

/* Unary success: sends msg and status OK, and releases the handle. FG_E_TOO_BIG when msg packs to
 * more than FG_GRPC_MAX_QUEUED bytes (the client then gets RESOURCE_EXHAUSTED), FG_E_CLOSED when
 * the connection is closing (its gone callbacks are running); the handle is released in every
 * case. Only for FG_GRPC_UNARY methods (asserted). */
enum fg_err fg_grpc_call_reply(struct fg_grpc_call *call, const ProtobufCMessage *msg) FG_MUST_USE;

/* Streams: queues one message. FG_E_BUSY when more than FG_GRPC_MAX_QUEUED bytes would be waiting
 * for the peer (nothing is queued), FG_E_CLOSED when the connection is closing (its gone callback
 * follows). The handle stays the caller's. Only for FG_GRPC_SERVER_STREAM methods (asserted). */
enum fg_err fg_grpc_call_send(struct fg_grpc_call *call, const ProtobufCMessage *msg) FG_MUST_USE;

/* Ends the call with `status` and `message` (NULL or "" for none; sent percent-encoded, cut at
 * 1 KiB) after whatever was sent before, and releases the handle. A unary method ends with
 * FG_GRPC_OK only through fg_grpc_call_reply (asserted). */
void fg_grpc_call_finish(struct fg_grpc_call *call, enum fg_grpc_status status, const char *message);

/* The method path the call was made on ("/v1beta1.DevicePlugin/Allocate"); borrowed. */
const char *fg_grpc_call_method(const struct fg_grpc_call *call);

#endif
