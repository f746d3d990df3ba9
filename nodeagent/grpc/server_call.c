/* The calls on a server connection: nghttp2's stream callbacks, the request's checks, the handler,
 * and the fg_grpc_call_* answers (server.h, server_int.h). */
#include "nodeagent/grpc/server_int.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/log.h"
#include "base/mem.h"
#include "nodeagent/grpc/metadata_int.h"

#define CONTENT_TYPE "application/grpc"
#define MAX_TIMEOUT_S (30 * 24 * 3600) /* longer grpc-timeouts are held to this */

static struct fg_grpc_call *call_of(nghttp2_session *session, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(session, stream_id);
}

static bool is_request(const nghttp2_frame *frame)
{
    return frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST;
}

static void call_unlink_free(struct fg_grpc_call *call)
{
    struct fg__grpc_conn *conn = call->conn;
    if (call->prev)
        call->prev->next = call->next;
    else
        conn->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    if (call->deadline)
        event_free(call->deadline);
    fg__grpc_reader_cleanup(&call->reader);
    fg_buf_cleanup(&call->request);
    evbuffer_free(call->out);
    free(call->path);
    free(call->content_type);
    free(call->message_text);
    free(call);
}

/* Hands the call back from a handler that can no longer answer it. */
static void call_gone(struct fg_grpc_call *call)
{
    call->state = FG__CALL_ENDED;
    call->method->gone(call, call->method->ud);
}

void fg__grpc_call_drop(struct fg_grpc_call *call)
{
    if (call->state == FG__CALL_HANDLED)
        call_gone(call);
    call_unlink_free(call);
}

/* nghttp2 asks for the next DATA bytes: queued messages, then (once ended) the trailers. */
static ssize_t read_response(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                             uint32_t *flags, nghttp2_data_source *source, void *ud)
{
    (void)ud;
    struct fg_grpc_call *call = source->ptr;
    int n = evbuffer_remove(call->out, buf, length);
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (evbuffer_get_length(call->out) == 0 && call->out_eof) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv trailers[2] = { fg__h2_nv("grpc-status", call->status_text) };
        size_t nt = 1;
        if (call->message_text)
            trailers[nt++] = fg__h2_nv("grpc-message", call->message_text);
        if (nghttp2_submit_trailer(session, stream_id, trailers, nt) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        return n;
    }
    if (n == 0) {
        call->out_deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    return n;
}

static void wake(struct fg_grpc_call *call)
{
    if (!call->out_deferred)
        return;
    call->out_deferred = false;
    nghttp2_session_resume_data(call->conn->h2.session, call->stream_id);
}

/* The response headers, before the first message: :status 200 and a body to come. */
static void start_response(struct fg_grpc_call *call)
{
    if (call->headers_sent)
        return;
    call->headers_sent = true;
    const nghttp2_nv headers[] = { fg__h2_nv(":status", "200"), fg__h2_nv("content-type", CONTENT_TYPE),
                                   fg__h2_nv("grpc-accept-encoding", "identity") };
    nghttp2_data_provider body = { .source.ptr = call, .read_callback = read_response };
    int rv = nghttp2_submit_response(call->conn->h2.session, call->stream_id, headers, 3, &body);
    if (rv != 0)
        fg_log(FG_LOG_DEBUG, FG__GRPC_COMPONENT, "%s: response not sent: %s", call->path, nghttp2_strerror(rv));
}

/* Ends the call with `status` after what was queued; http_status other than 200 only before any
 * response (a Trailers-Only answer to a request that is not gRPC). */
static void end_call(struct fg_grpc_call *call, int http_status, enum fg_grpc_status status, const char *message)
{
    call->state = FG__CALL_ENDED;
    if (call->deadline)
        event_del(call->deadline);
    if (call->conn->closing)
        return;
    fg_log(FG_LOG_DEBUG, FG__GRPC_COMPONENT, "%s on connection %u: %s %s", call->path ? call->path : "?",
           call->conn->id, fg_grpc_status_name(status), message ? message : "");
    snprintf(call->status_text, sizeof(call->status_text), "%d", (int)status);
    call->message_text = message && message[0] ? fg__grpc_percent_encode(message) : NULL;
    if (call->headers_sent) {
        call->out_eof = true;
        wake(call);
        return;
    }
    call->headers_sent = true; /* Trailers-Only: one HEADERS frame that also ends the stream */
    char http[8];
    snprintf(http, sizeof(http), "%d", http_status);
    nghttp2_nv headers[4] = { fg__h2_nv(":status", http), fg__h2_nv("content-type", CONTENT_TYPE),
                              fg__h2_nv("grpc-status", call->status_text) };
    size_t n = 3;
    if (call->message_text)
        headers[n++] = fg__h2_nv("grpc-message", call->message_text);
    int rv = nghttp2_submit_response(call->conn->h2.session, call->stream_id, headers, n, NULL);
    if (rv != 0)
        fg_log(FG_LOG_DEBUG, FG__GRPC_COMPONENT, "%s: status not sent: %s", call->path, nghttp2_strerror(rv));
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_grpc_call *call = arg;
    struct fg__grpc_conn *conn = call->conn;
    fg__grpc_conn_enter(conn);
    bool handled = call->state == FG__CALL_HANDLED;
    if (call->state != FG__CALL_ENDED)
        end_call(call, 200, FG_GRPC_DEADLINE_EXCEEDED, "deadline exceeded (grpc-timeout)");
    if (handled)
        call_gone(call);
    fg__grpc_conn_leave(conn);
}

static void arm_deadline(struct fg_grpc_call *call)
{
    uint64_t s = call->timeout_ns / 1000000000u;
    struct timeval tv = { .tv_sec = s > MAX_TIMEOUT_S ? MAX_TIMEOUT_S : (time_t)s,
                          .tv_usec = s > MAX_TIMEOUT_S ? 0 : (suseconds_t)(call->timeout_ns % 1000000000u / 1000u) };
    call->deadline = evtimer_new(call->conn->server->base, on_deadline, call);
    fg_assert(call->deadline);
    evtimer_add(call->deadline, &tv);
}

/* The request's headers are complete: answer what is not a call we can serve, else route it. */
static void route(struct fg_grpc_call *call)
{
    char why[FG_ERRMSG_MAX];
    if (!call->post) {
        end_call(call, 405, FG_GRPC_INTERNAL, "gRPC requests are POST");
        return;
    }
    if (!call->grpc_content_type) {
        snprintf(why, sizeof(why), "content-type \"%s\" is not application/grpc",
                 call->content_type ? call->content_type : "");
        end_call(call, 415, FG_GRPC_INTERNAL, why);
        return;
    }
    call->method = fg__grpc_server_method(call->conn->server, call->path ? call->path : "");
    if (!call->method) {
        snprintf(why, sizeof(why), "unknown method %s", call->path ? call->path : "(no :path)");
        end_call(call, 200, FG_GRPC_UNIMPLEMENTED, why);
        return;
    }
    if (call->compressed_encoding) {
        end_call(call, 200, FG_GRPC_UNIMPLEMENTED, "grpc-encoding: only identity is supported");
        return;
    }
    if (call->has_timeout)
        arm_deadline(call);
}

static bool keep_request(void *ud, const uint8_t *msg, size_t len)
{
    struct fg_grpc_call *call = ud;
    if (call->reader.count == 1)
        fg_buf_put(&call->request, msg, len);
    return true;
}

/* The client has sent all of its request: give its one message to the handler. */
static void request_complete(struct fg_grpc_call *call)
{
    if (call->state != FG__CALL_RECEIVING)
        return;
    char why[FG_ERRMSG_MAX];
    enum fg_grpc_status st = fg__grpc_reader_end(&call->reader, why);
    if (st != FG_GRPC_OK) {
        end_call(call, 200, st, why);
        return;
    }
    if (call->reader.count != 1) {
        snprintf(why, sizeof(why), "%s takes one request message, the request carried %zu", call->path,
                 call->reader.count);
        end_call(call, 200, FG_GRPC_INTERNAL, why);
        return;
    }
    call->state = FG__CALL_HANDLED;
    call->method->handler(call, (const uint8_t *)fg_buf_str(&call->request), call->request.len, call->method->ud);
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *ud)
{
    struct fg__grpc_conn *conn = ud;
    if (!is_request(frame))
        return 0;
    struct fg_grpc_call *call = fg_calloc(1, sizeof(*call));
    call->conn = conn;
    call->stream_id = frame->hd.stream_id;
    call->state = FG__CALL_RECEIVING;
    fg__grpc_reader_init(&call->reader, conn->server->max_message);
    fg_buf_init(&call->request, 0);
    call->out = evbuffer_new();
    fg_assert(call->out);
    call->next = conn->calls;
    if (conn->calls)
        conn->calls->prev = call;
    conn->calls = call;
    nghttp2_session_set_stream_user_data(session, call->stream_id, call);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    (void)flags;
    (void)ud;
    struct fg_grpc_call *call = is_request(frame) ? call_of(session, frame->hd.stream_id) : NULL;
    if (!call)
        return 0;
    if (fg__grpc_name_is(name, namelen, ":path")) {
        free(call->path);
        call->path = fg_strndup((const char *)value, valuelen);
    } else if (fg__grpc_name_is(name, namelen, ":method")) {
        call->post = fg__grpc_name_is(value, valuelen, "POST");
    } else if (fg__grpc_name_is(name, namelen, "content-type")) {
        call->grpc_content_type = fg__grpc_content_type_ok(value, valuelen);
        free(call->content_type);
        call->content_type = fg_strndup((const char *)value, valuelen < 128 ? valuelen : 128);
    } else if (fg__grpc_name_is(name, namelen, "grpc-timeout")) {
        call->has_timeout = fg__grpc_timeout_parse(value, valuelen, &call->timeout_ns); /* malformed: none */
    } else if (fg__grpc_name_is(name, namelen, "grpc-encoding")) {
        call->compressed_encoding = !fg__grpc_name_is(value, valuelen, "identity");
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *ud)
{
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    struct fg_grpc_call *call = call_of(session, frame->hd.stream_id);
    if (!call)
        return 0;
    if (is_request(frame))
        route(call);
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        request_complete(call);
    return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                              size_t len, void *ud)
{
    (void)flags;
    (void)ud;
    struct fg_grpc_call *call = call_of(session, stream_id);
    if (!call || call->state != FG__CALL_RECEIVING || !call->method)
        return 0;
    char why[FG_ERRMSG_MAX];
    enum fg_grpc_status st = fg__grpc_reader_feed(&call->reader, data, len, keep_request, call, why);
    if (st != FG_GRPC_OK)
        end_call(call, 200, st, why);
    return 0;
}

/* We ended a stream the client has not finished sending on (an early error): tell it to stop. */
static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *ud)
{
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    if (nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *ud)
{
    (void)error_code;
    (void)ud;
    struct fg_grpc_call *call = call_of(session, stream_id);
    if (call)
        fg__grpc_call_drop(call);
    return 0;
}

void fg__grpc_server_set_callbacks(nghttp2_session_callbacks *cbs)
{
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
}

/* Public: the handler's answers. None of them calls back into the handler. */

static void kick(struct fg_grpc_call *call)
{
    event_active(call->conn->kick, 0, 0);
}

static enum fg_err queue_message(struct fg_grpc_call *call, const ProtobufCMessage *msg)
{
    size_t n = FG__GRPC_PREFIX + protobuf_c_message_get_packed_size(msg);
    if (evbuffer_get_length(call->out) + n > FG_GRPC_MAX_QUEUED)
        return n > FG_GRPC_MAX_QUEUED ? FG_E_TOO_BIG : FG_E_BUSY;
    start_response(call);
    fg__grpc_message_pack(call->out, msg);
    wake(call);
    return FG_OK;
}

enum fg_err fg_grpc_call_reply(struct fg_grpc_call *call, const ProtobufCMessage *msg)
{
    fg_assert(call->state == FG__CALL_HANDLED && call->method->kind == FG_GRPC_UNARY);
    if (call->conn->closing) {
        call->state = FG__CALL_ENDED;
        return FG_E_CLOSED;
    }
    enum fg_err err = queue_message(call, msg);
    if (err == FG_OK)
        end_call(call, 200, FG_GRPC_OK, NULL);
    else
        end_call(call, 200, FG_GRPC_RESOURCE_EXHAUSTED, "the response is larger than the server sends");
    kick(call);
    return err;
}

enum fg_err fg_grpc_call_send(struct fg_grpc_call *call, const ProtobufCMessage *msg)
{
    fg_assert(call->state == FG__CALL_HANDLED && call->method->kind == FG_GRPC_SERVER_STREAM);
    if (call->conn->closing)
        return FG_E_CLOSED;
    enum fg_err err = queue_message(call, msg);
    kick(call);
    return err == FG_E_TOO_BIG ? FG_E_BUSY : err; /* too large to ever wait is more than may wait */
}

void fg_grpc_call_finish(struct fg_grpc_call *call, enum fg_grpc_status status, const char *message)
{
    fg_assert(call->state == FG__CALL_HANDLED);
    fg_assert(status != FG_GRPC_OK || call->method->kind == FG_GRPC_SERVER_STREAM);
    end_call(call, 200, status, message);
    if (!call->conn->closing)
        kick(call);
}

const char *fg_grpc_call_method(const struct fg_grpc_call *call)
{
    return call->method->path;
}
