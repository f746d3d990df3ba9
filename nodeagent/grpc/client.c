/* The gRPC client's connection and life (client.h, client_int.h); the calls on it are
 * client_call.c's. */
#include "nodeagent/grpc/client_int.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/mem.h"

#define MAX_STREAMS 100

void fg__grpc_client_end_all(struct fg_grpc_client *c, enum fg_grpc_status status, const char *message)
{
    for (;;) {
        struct fg_grpc_client_call *call = c->calls;
        while (call && call->ended)
            call = call->next;
        if (!call)
            return;
        fg__grpc_client_call_end(call, status, message, NULL, 0);
    }
}

static void destroy(struct fg_grpc_client *c)
{
    event_free(c->kick);
    event_free(c->report);
    fg__h2_cleanup(&c->h2);
    while (c->calls) {
        c->calls->stream_open = false;
        c->calls->ended = true;
        fg__grpc_client_call_release(c->calls);
    }
    free(c->socket_path);
    free(c);
}

/* The connection is over: every call on it ends UNAVAILABLE, and the transport goes. */
static void teardown(struct fg_grpc_client *c)
{
    if (!c->h2.why[0])
        fg__h2_break(&c->h2, "connection closed");
    c->h2.broken = true;
    fg__h2_enter(&c->h2); /* callbacks below may free the client: that waits for us */
    fg__grpc_client_end_all(c, FG_GRPC_UNAVAILABLE, c->h2.why);
    bool over = fg__h2_leave(&c->h2);
    (void)over; /* it is: broken */
    fg__h2_cleanup(&c->h2);
    for (struct fg_grpc_client_call *call = c->calls, *next; call; call = next) {
        next = call->next;
        call->stream_open = false;
        fg__grpc_client_call_release(call);
    }
    if (c->free_requested)
        destroy(c);
}

void fg__grpc_client_enter(struct fg_grpc_client *c)
{
    fg__h2_enter(&c->h2);
}

void fg__grpc_client_leave(struct fg_grpc_client *c)
{
    bool over = fg__h2_leave(&c->h2);
    if (c->h2.depth > 0)
        return;
    if (c->free_requested)
        destroy(c);
    else if (over && c->h2.session)
        teardown(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct fg_grpc_client *c = arg;
    fg__grpc_client_enter(c);
    fg__h2_recv(&c->h2);
    fg__grpc_client_leave(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct fg_grpc_client *c = arg;
    fg__grpc_client_enter(c);
    fg__grpc_client_leave(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct fg_grpc_client *c = arg;
    fg__grpc_client_enter(c);
    if (what & BEV_EVENT_ERROR)
        fg__h2_break(&c->h2, "connection to unix:%s failed: %s", c->socket_path,
                     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    else if (what & BEV_EVENT_EOF)
        fg__h2_break(&c->h2, "connection closed by the server at unix:%s", c->socket_path);
    fg__grpc_client_leave(c);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_grpc_client *c = arg;
    fg__grpc_client_enter(c);
    fg__grpc_client_leave(c);
}

/* Ends the calls that never reached the wire. */
static void on_report(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_grpc_client *c = arg;
    fg__grpc_client_enter(c);
    for (;;) {
        struct fg_grpc_client_call *call = c->calls;
        while (call && (call->ended || call->stream_id != 0))
            call = call->next;
        if (!call)
            break;
        fg__grpc_client_call_end(call, FG_GRPC_UNAVAILABLE, call->unsent_why, NULL, 0);
    }
    fg__grpc_client_leave(c);
}

/* Connects; a failure is kept in h2.why for the calls to report. */
static void connect_unix(struct fg_grpc_client *c, const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fg__h2_break(&c->h2, "socket: %s", strerror(errno));
        return;
    }
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0 && errno != EINPROGRESS) {
        fg__h2_break(&c->h2, "connect unix:%s: %s", c->socket_path, strerror(errno));
        close(fd);
        return;
    }
    struct bufferevent *bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        close(fd);
        fg__h2_break(&c->h2, "cannot make a bufferevent for unix:%s", c->socket_path);
        return;
    }
    nghttp2_session_callbacks *cbs;
    int rv = nghttp2_session_callbacks_new(&cbs);
    fg_assert(rv == 0);
    fg__grpc_client_set_callbacks(cbs);
    nghttp2_session *session;
    rv = nghttp2_session_client_new(&session, cbs, c);
    fg_assert(rv == 0);
    nghttp2_session_callbacks_del(cbs);
    fg__h2_init(&c->h2, bev, session, MAX_STREAMS);
    bufferevent_setcb(bev, on_read, on_write, on_event, c);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    event_active(c->kick, 0, 0); /* the preface and our SETTINGS */
}

enum fg_err fg_grpc_client_new(struct event_base *base, const struct fg_grpc_client_opts *opts,
                               struct fg_grpc_client **out, char *errmsg)
{
    *out = NULL;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    const char *path = opts->socket_path;
    if (!path || !path[0] || strlen(path) >= sizeof(sa.sun_path))
        return fg_errmsg(errmsg, FG_E_INVAL, "socket path \"%s\" is empty or longer than %zu bytes", path ? path : "",
                         sizeof(sa.sun_path) - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fg__h2_ignore_sigpipe();
    struct fg_grpc_client *c = fg_calloc(1, sizeof(*c));
    c->base = base;
    c->socket_path = fg_strdup(path);
    c->max_message = opts->max_message ? opts->max_message : FG_GRPC_DEFAULT_MAX_MESSAGE;
    c->kick = event_new(base, -1, 0, on_kick, c);
    c->report = event_new(base, -1, 0, on_report, c);
    fg_assert(c->kick && c->report);
    connect_unix(c, &sa);
    *out = c;
    return FG_OK;
}

void fg_grpc_client_free(struct fg_grpc_client *c)
{
    if (!c || c->free_requested)
        return;
    c->free_requested = true;
    fg__h2_break(&c->h2, "client closed");
    fg__grpc_client_enter(c);
    fg__grpc_client_end_all(c, FG_GRPC_CANCELLED, "client closed");
    fg__grpc_client_leave(c); /* frees it, unless a callback of ours is below us on the stack */
}

static enum fg_err start(struct fg_grpc_client *c, const char *path, const ProtobufCMessage *req, uint64_t timeout_ms,
                         fg_grpc_message_fn *on_message, fg_grpc_done_fn *done, void *ud,
                         struct fg_grpc_client_call **out)
{
    if (out)
        *out = NULL;
    if (!path || path[0] != '/')
        return FG_E_INVAL;
    if (c->free_requested)
        return FG_E_SHUTDOWN;
    struct fg_grpc_client_call *call = fg_calloc(1, sizeof(*call));
    call->client = c;
    call->path = fg_strdup(path);
    call->streaming = on_message != NULL;
    call->on_message = on_message;
    call->done = done;
    call->ud = ud;
    call->timeout_ms = timeout_ms;
    call->grpc_status = -1;
    call->request = evbuffer_new();
    fg_assert(call->request);
    fg__grpc_reader_init(&call->reader, c->max_message);
    fg_buf_init(&call->response, 0);
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    fg__grpc_client_call_start(call, req);
    if (out)
        *out = call;
    return FG_OK;
}

enum fg_err fg_grpc_client_unary(struct fg_grpc_client *c, const char *path, const ProtobufCMessage *req,
                                 uint64_t timeout_ms, fg_grpc_done_fn *done, void *ud,
                                 struct fg_grpc_client_call **out)
{
    return start(c, path, req, timeout_ms, NULL, done, ud, out);
}

enum fg_err fg_grpc_client_stream(struct fg_grpc_client *c, const char *path, const ProtobufCMessage *req,
                                  uint64_t timeout_ms, fg_grpc_message_fn *on_message, fg_grpc_done_fn *done,
                                  void *ud, struct fg_grpc_client_call **out)
{
    fg_assert(on_message);
    return start(c, path, req, timeout_ms, on_message, done, ud, out);
}
