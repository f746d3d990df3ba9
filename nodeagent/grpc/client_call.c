/* The calls of a gRPC client: the request on the wire, nghttp2's stream callbacks, the response's
 * checks, deadlines and cancels (client.h, client_int.h). */
#include "nodeagent/grpc/client_int.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/mem.h"
#include "nodeagent/grpc/metadata_int.h"

#define USER_AGENT "fracgpu-grpc/" FG_VERSION

static struct fg_grpc_client_call *call_of(nghttp2_session *session, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(session, stream_id);
}

void fg__grpc_client_call_release(struct fg_grpc_client_call *call)
{
    if (!call->ended || call->stream_open)
        return;
    struct fg_grpc_client *c = call->client;
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    if (call->deadline)
        event_free(call->deadline);
    evbuffer_free(call->request);
    fg__grpc_reader_cleanup(&call->reader);
    fg_buf_cleanup(&call->response);
    free(call->grpc_message);
    free(call->unsent_why);
    free(call->path);
    free(call);
}

void fg__grpc_client_call_end(struct fg_grpc_client_call *call, enum fg_grpc_status status, const char *message,
                              const uint8_t *resp, size_t len)
{
    if (call->ended)
        return;
    call->ended = true;
    if (call->deadline)
        event_del(call->deadline);
    call->done(call->ud, status, message ? message : "", resp, len);
    fg__grpc_client_call_release(call);
}

/* nghttp2 asks for the request's DATA: the one message, then the end of the stream. */
static ssize_t read_request(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *flags, nghttp2_data_source *source, void *ud)
{
    (void)session;
    (void)stream_id;
    (void)ud;
    struct fg_grpc_client_call *call = source->ptr;
    int n = evbuffer_remove(call->request, buf, length);
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (evbuffer_get_length(call->request) == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return n;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_grpc_client_call *call = arg;
    struct fg_grpc_client *c = call->client;
    fg__grpc_client_enter(c);
    if (call->stream_open && !c->h2.broken) /* the server learns it too: its handler's call is gone */
        nghttp2_submit_rst_stream(c->h2.session, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
    char why[96];
    snprintf(why, sizeof(why), "deadline of %llu ms exceeded", (unsigned long long)call->timeout_ms);
    fg__grpc_client_call_end(call, FG_GRPC_DEADLINE_EXCEEDED, why, NULL, 0);
    fg__grpc_client_leave(c);
}

static void arm_deadline(struct fg_grpc_client_call *call)
{
    struct timeval tv = { .tv_sec = (time_t)(call->timeout_ms / 1000),
                          .tv_usec = (suseconds_t)(call->timeout_ms % 1000 * 1000) };
    call->deadline = evtimer_new(call->client->base, on_deadline, call);
    fg_assert(call->deadline);
    evtimer_add(call->deadline, &tv);
}

void fg__grpc_client_call_start(struct fg_grpc_client_call *call, const ProtobufCMessage *req)
{
    struct fg_grpc_client *c = call->client;
    if (!c->h2.session || c->h2.broken) {
        call->unsent_why = fg_strdup(c->h2.why);
        event_active(c->report, 0, 0);
        return;
    }
    fg__grpc_message_pack(call->request, req);
    char timeout[FG__GRPC_TIMEOUT_MAX];
    nghttp2_nv headers[8] = { fg__h2_nv(":method", "POST"), fg__h2_nv(":scheme", "http"),
                              fg__h2_nv(":path", call->path), fg__h2_nv(":authority", "localhost"),
                              fg__h2_nv("content-type", "application/grpc"), fg__h2_nv("te", "trailers"),
                              fg__h2_nv("user-agent", USER_AGENT) };
    size_t n = 7;
    if (call->timeout_ms) {
        fg__grpc_timeout_format(call->timeout_ms, timeout);
        headers[n++] = fg__h2_nv("grpc-timeout", timeout);
    }
    nghttp2_data_provider body = { .source.ptr = call, .read_callback = read_request };
    int32_t id = nghttp2_submit_request(c->h2.session, NULL, headers, n, &body, call);
    if (id < 0) {
        call->unsent_why = fg_asprintf("cannot start a stream on unix:%s: %s", c->socket_path, nghttp2_strerror(id));
        event_active(c->report, 0, 0);
        return;
    }
    call->stream_id = id;
    call->stream_open = true;
    if (call->timeout_ms)
        arm_deadline(call);
    event_active(c->kick, 0, 0);
}

void fg_grpc_client_call_cancel(struct fg_grpc_client_call *call)
{
    fg_assert(!call->ended);
    struct fg_grpc_client *c = call->client;
    call->ended = true;
    if (call->deadline)
        event_del(call->deadline);
    if (call->stream_open && !c->h2.broken) {
        nghttp2_submit_rst_stream(c->h2.session, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
        event_active(c->kick, 0, 0);
    }
    fg__grpc_client_call_release(call);
}

/* A number header (:status, grpc-status): its value, or -1 when it is not 1-3 digits. */
static int small_number(const uint8_t *v, size_t n)
{
    if (n < 1 || n > 3)
        return -1;
    int x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        x = x * 10 + (v[i] - '0');
    }
    return x;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    (void)flags;
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    struct fg_grpc_client_call *call = call_of(session, frame->hd.stream_id);
    if (!call || call->ended)
        return 0;
    if (fg__grpc_name_is(name, namelen, ":status")) {
        call->http_status = small_number(value, valuelen);
    } else if (fg__grpc_name_is(name, namelen, "grpc-status")) {
        int st = small_number(value, valuelen);
        call->grpc_status = st < 0 || st > FG_GRPC_STATUS_MAX ? FG_GRPC_UNKNOWN : st;
    } else if (fg__grpc_name_is(name, namelen, "grpc-message")) {
        free(call->grpc_message);
        call->grpc_message = fg__grpc_percent_decode(value, valuelen);
    }
    return 0;
}

static bool deliver(void *ud, const uint8_t *msg, size_t len)
{
    struct fg_grpc_client_call *call = ud;
    if (call->streaming) {
        call->on_message(call->ud, msg, len);
        return !call->ended; /* cancelled, or the client freed, inside the callback */
    }
    if (call->reader.count > 1) {
        call->too_many = true;
        return false;
    }
    fg_buf_put(&call->response, msg, len);
    return true;
}

/* Ends the call with what the client itself found wrong, and tells the server to stop. */
static void fail(struct fg_grpc_client_call *call, enum fg_grpc_status status, const char *why)
{
    nghttp2_submit_rst_stream(call->client->h2.session, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
    fg__grpc_client_call_end(call, status, why, NULL, 0);
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                              size_t len, void *ud)
{
    (void)flags;
    (void)ud;
    struct fg_grpc_client_call *call = call_of(session, stream_id);
    if (!call || call->ended || call->http_status != 200)
        return 0;
    char why[FG_ERRMSG_MAX];
    enum fg_grpc_status st = fg__grpc_reader_feed(&call->reader, data, len, deliver, call, why);
    if (call->ended)
        return 0;
    if (call->too_many)
        fail(call, FG_GRPC_INTERNAL, "the server sent more than one response message to a unary call");
    else if (st != FG_GRPC_OK)
        fail(call, st, why);
    return 0;
}

/* The server has ended the stream: the call's status from its trailers (or its HTTP status). */
static void response_complete(struct fg_grpc_client_call *call)
{
    char why[FG_ERRMSG_MAX];
    if (call->grpc_status < 0) {
        if (call->http_status != 200) {
            snprintf(why, sizeof(why), "HTTP status %d without grpc-status", call->http_status);
            fg__grpc_client_call_end(call, fg_grpc_status_from_http(call->http_status), why, NULL, 0);
        } else {
            fg__grpc_client_call_end(call, FG_GRPC_INTERNAL, "the server ended the call without a grpc-status", NULL, 0);
        }
        return;
    }
    if (call->grpc_status != FG_GRPC_OK) {
        fg__grpc_client_call_end(call, (enum fg_grpc_status)call->grpc_status, call->grpc_message, NULL, 0);
        return;
    }
    enum fg_grpc_status st = fg__grpc_reader_end(&call->reader, why);
    if (st != FG_GRPC_OK)
        fg__grpc_client_call_end(call, st, why, NULL, 0);
    else if (call->streaming)
        fg__grpc_client_call_end(call, FG_GRPC_OK, call->grpc_message, NULL, 0);
    else if (call->reader.count != 1)
        fg__grpc_client_call_end(call, FG_GRPC_INTERNAL, "the server sent no response message", NULL, 0);
    else
        fg__grpc_client_call_end(call, FG_GRPC_OK, call->grpc_message, (const uint8_t *)fg_buf_str(&call->response),
                                 call->response.len);
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *ud)
{
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct fg_grpc_client_call *call = call_of(session, frame->hd.stream_id);
    if (call && !call->ended)
        response_complete(call);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *ud)
{
    (void)ud;
    struct fg_grpc_client_call *call = call_of(session, stream_id);
    if (!call)
        return 0;
    call->stream_open = false;
    if (call->ended) {
        fg__grpc_client_call_release(call);
        return 0;
    }
    char why[FG_ERRMSG_MAX];
    switch (error_code) {
    case NGHTTP2_REFUSED_STREAM:
        fg__grpc_client_call_end(call, FG_GRPC_UNAVAILABLE, "the server refused the stream", NULL, 0);
        break;
    case NGHTTP2_CANCEL:
        fg__grpc_client_call_end(call, FG_GRPC_CANCELLED, "the server cancelled the call", NULL, 0);
        break;
    default:
        snprintf(why, sizeof(why), "stream closed without a status (%s)", nghttp2_http2_strerror(error_code));
        fg__grpc_client_call_end(call, FG_GRPC_INTERNAL, why, NULL, 0);
    }
    return 0;
}

void fg__grpc_client_set_callbacks(nghttp2_session_callbacks *cbs)
{
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
}
