/*
 * client — a gRPC client over one connection to a unix socket, on the caller's libevent loop.
 *
 * The other half of server.h: the device plugin dials the kubelet's socket to Register and the
 * kubelet's PodResources socket to List; the simulated kubelets of e2e/cluster dial each plugin's
 * socket for GetDevicePluginOptions, ListAndWatch and Allocate. Unary and server-streaming calls,
 * HTTP/2 from libnghttp2, messages from protobuf-c, no TLS, no compression.
 *
 * One client is one connection, made in fg_grpc_client_new and never remade: when it cannot be
 * made, or the peer goes away, every call pending on it ends with FG_GRPC_UNAVAILABLE and the
 * connection's reason ("connect unix:PATH: Connection refused", "connection closed by the server
 * at unix:PATH"), and so does every call started afterwards. Whoever wants to try again frees the
 * client and makes a new one, when it chooses — as the kubelet re-dials a plugin on its own
 * schedule.
 *
 * Threading: everything happens on the thread that runs the event_base; the functions below are
 * called there and the callbacks run there. No locks. SIGPIPE: as server.h says.
 *
 * A call's life. fg_grpc_client_unary / fg_grpc_client_stream pack the request, send it and
 * return at once. Then, for a stream, `on_message` runs once per response message as it arrives,
 * and for both, `done` runs exactly once: status OK with the response bytes (unary), or OK with
 * none (a stream that ended well), or an error status and message — the server's, or the client's
 * own: DEADLINE_EXCEEDED when timeout_ms passed first (the server is told with grpc-timeout and a
 * cancel), UNAVAILABLE when the connection failed, RESOURCE_EXHAUSTED for a response message over
 * max_message, INTERNAL for a response that breaks the protocol, CANCELLED when the client is
 * freed. `done` never runs inside the function that started the call. Byte pointers given to a
 * callback are borrowed for its duration. The only way to end a call without `done` is
 * fg_grpc_client_call_cancel. Callbacks may start calls, cancel calls and free the client.
 *
 * Example — the device plugin registers with the kubelet:
 *
 *     static void registered(void *ud, enum fg_grpc_status status, const char *message,
 *                            const uint8_t *resp, size_t len)
 *     {
 *         struct plugin *p = ud;
 *         if (status != FG_GRPC_OK)
 *             fg_log(FG_LOG_WARN, "deviceplugin", "kubelet refused registration: %s: %s",
 *                    fg_grpc_status_name(status), message);
 *         fg_grpc_client_free(p->kubelet);                // allowed inside the callback
 *         p->kubelet = NULL;
 *     }
 *     struct fg_grpc_client_opts opts = { .socket_path = FG_KUBELET_DEVICE_PLUGIN_DIR FG_KUBELET_SOCKET };
 *     if (fg_grpc_client_new(base, &opts, &p->kubelet, errmsg) != FG_OK) ...
 *     V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
 *     req.version = FG_DEVICE_PLUGIN_VERSION;
 *     req.endpoint = "fracgpu.sock";
 *     req.resource_name = "fracgpu.io/gpu-share";
 *     if (fg_grpc_client_unary(p->kubelet, FG_REGISTRATION_REGISTER, &req.base, 10000, registered, p, NULL) != FG_OK) ...
 *
 * and a simulated kubelet watches a plugin's devices:
 *
 *     static void devices(void *ud, const uint8_t *msg, size_t len)
 *     {
 *         V1beta1__ListAndWatchResponse *r = v1beta1__list_and_watch_response__unpack(NULL, len, msg);
 *         ... r->n_devices, r->devices[i]->id, r->devices[i]->health ...
 *         v1beta1__list_and_watch_response__free_unpacked(r, NULL);
 *     }
 *     V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
 *     err = fg_grpc_client_stream(c, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 0, devices, watch_ended,
 *                                 node, &node->watch);
 */
#ifndef FG_GRPC_CLIENT_H
#define FG_GRPC_CLIENT_H

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "nodeagent/grpc/status.h"

struct fg_grpc_client;
struct fg_grpc_client_call;

/* The call ended. `message` is never NULL ("" when the server sent none); `resp`/`len` are the
 * response message's protobuf bytes for a unary call that ended OK, NULL/0 otherwise. */
typedef void fg_grpc_done_fn(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp,
                             size_t len);
/* One message of a stream, in order. */
typedef void fg_grpc_message_fn(void *ud, const uint8_t *msg, size_t len);

struct fg_grpc_client_opts {
    const char *socket_path;   /* at most 107 bytes */
    size_t max_message;        /* largest response message; 0 means FG_GRPC_DEFAULT_MAX_MESSAGE (4 MiB) */
};

/* Connects to opts->socket_path on `base` (borrowed; it must outlive the client). A connection
 * that fails is not an error here: the calls report it. FG_E_INVAL for a path that is empty or
 * too long, with errmsg. */
enum fg_err fg_grpc_client_new(struct event_base *base, const struct fg_grpc_client_opts *opts,
                               struct fg_grpc_client **out, char *errmsg) FG_MUST_USE;

/* Ends every pending call with CANCELLED ("client closed") through its `done`, then closes the
 * connection and frees the client. Allowed inside the client's own callbacks (the memory goes when
 * the callback returns). NULL is ignored. */
void fg_grpc_client_free(struct fg_grpc_client *c);

/* Starts a unary call of `path` ("/v1beta1.Registration/Register") with `req`. timeout_ms 0 means
 * no deadline. `out` (may be NULL) receives a handle valid until `done` runs or the call is
 * cancelled. FG_E_INVAL for a path that does not start with '/', FG_E_SHUTDOWN once the client is
 * being freed (from a callback that fg_grpc_client_free ran); nothing is started then. */
enum fg_err fg_grpc_client_unary(struct fg_grpc_client *c, const char *path, const ProtobufCMessage *req,
                                 uint64_t timeout_ms, fg_grpc_done_fn *done, void *ud,
                                 struct fg_grpc_client_call **out) FG_MUST_USE;

/* Starts a server-streaming call: on_message for each response message, then done (resp NULL). */
enum fg_err fg_grpc_client_stream(struct fg_grpc_client *c, const char *path, const ProtobufCMessage *req,
                                  uint64_t timeout_ms, fg_grpc_message_fn *on_message, fg_grpc_done_fn *done,
                                  void *ud, struct fg_grpc_client_call **out) FG_MUST_USE;

/* Ends the call now without any further callback (the server sees a cancel); the handle is
 * invalid afterwards. */
void fg_grpc_client_call_cancel(struct fg_grpc_client_call *call);

#endif
