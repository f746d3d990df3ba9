/* The gRPC server's socket, method table and connections (server.h, server_int.h); the calls on a
 * connection are server_call.c's. */
#include "nodeagent/grpc/server_int.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/log.h"
#include "base/mem.h"

#define MAX_STREAMS 100
#define BACKLOG 64

const struct fg_grpc_method *fg__grpc_server_method(const struct fg_grpc_server *s, const char *path)
{
    for (size_t i = 0; i < s->n_methods; i++)
        if (!strcmp(s->methods[i].path, path))
            return &s->methods[i];
    return NULL;
}

/* Tears the connection down: every call a handler holds hears that it is gone. */
static void conn_destroy(struct fg__grpc_conn *conn)
{
    struct fg_grpc_server *s = conn->server;
    fg_assert(conn->h2.depth == 0);
    conn->closing = true;
    while (conn->calls)
        fg__grpc_call_drop(conn->calls);
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        s->conns = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    fg_log(FG_LOG_DEBUG, FG__GRPC_COMPONENT, "connection %u on %s closed: %s", conn->id, s->socket_path,
           conn->h2.why[0] ? conn->h2.why : "finished");
    event_free(conn->kick);
    fg__h2_cleanup(&conn->h2);
    free(conn);
}

void fg__grpc_conn_enter(struct fg__grpc_conn *conn)
{
    fg__h2_enter(&conn->h2);
}

void fg__grpc_conn_leave(struct fg__grpc_conn *conn)
{
    if (fg__h2_leave(&conn->h2))
        conn_destroy(conn);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct fg__grpc_conn *conn = arg;
    fg__grpc_conn_enter(conn);
    fg__h2_recv(&conn->h2);
    if (conn->h2.broken) /* the one place a peer's bytes are judged: say so once */
        fg_log(FG_LOG_WARN, FG__GRPC_COMPONENT, "closing connection %u on %s: %s", conn->id,
               conn->server->socket_path, conn->h2.why);
    fg__grpc_conn_leave(conn);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct fg__grpc_conn *conn = arg;
    fg__grpc_conn_enter(conn);
    fg__grpc_conn_leave(conn);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct fg__grpc_conn *conn = arg;
    fg__grpc_conn_enter(conn);
    if (what & BEV_EVENT_ERROR)
        fg__h2_break(&conn->h2, "connection error: %s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    else if (what & BEV_EVENT_EOF)
        fg__h2_break(&conn->h2, "closed by the client");
    fg__grpc_conn_leave(conn);
}

/* Sends what calls answered outside the connection's own callbacks queued. */
static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg__grpc_conn *conn = arg;
    fg__grpc_conn_enter(conn);
    fg__grpc_conn_leave(conn);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    struct fg_grpc_server *s = arg;
    struct bufferevent *bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        evutil_closesocket(fd);
        fg_log(FG_LOG_ERROR, FG__GRPC_COMPONENT, "cannot take a connection on %s", s->socket_path);
        return;
    }
    struct fg__grpc_conn *conn = fg_calloc(1, sizeof(*conn));
    conn->server = s;
    conn->id = ++s->next_conn_id;
    nghttp2_session_callbacks *cbs;
    int rv = nghttp2_session_callbacks_new(&cbs);
    fg_assert(rv == 0);
    fg__grpc_server_set_callbacks(cbs);
    nghttp2_session *session;
    rv = nghttp2_session_server_new(&session, cbs, conn);
    fg_assert(rv == 0);
    nghttp2_session_callbacks_del(cbs);
    fg__h2_init(&conn->h2, bev, session, MAX_STREAMS);
    conn->kick = event_new(s->base, -1, 0, on_kick, conn);
    fg_assert(conn->kick);
    conn->next = s->conns;
    if (s->conns)
        s->conns->prev = conn;
    s->conns = conn;
    bufferevent_setcb(bev, on_read, on_write, on_event, conn);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    fg_log(FG_LOG_DEBUG, FG__GRPC_COMPONENT, "connection %u on %s opened", conn->id, s->socket_path);
    fg__grpc_conn_enter(conn); /* sends our SETTINGS */
    fg__grpc_conn_leave(conn);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    (void)l;
    struct fg_grpc_server *s = arg;
    fg_log(FG_LOG_ERROR, FG__GRPC_COMPONENT, "accepting on %s: %s", s->socket_path,
           evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void ignore_gone(struct fg_grpc_call *call, void *ud)
{
    (void)call;
    (void)ud;
}

static enum fg_err copy_methods(struct fg_grpc_server *s, const struct fg_grpc_server_opts *opts, char *errmsg)
{
    s->methods = fg_calloc(opts->n_methods ? opts->n_methods : 1, sizeof(*s->methods));
    for (size_t i = 0; i < opts->n_methods; i++) {
        const struct fg_grpc_method *m = &opts->methods[i];
        if (!m->path || m->path[0] != '/' || !m->handler)
            return fg_errmsg(errmsg, FG_E_INVAL, "gRPC method %zu: a path starting with '/' and a handler are needed", i);
        if (fg__grpc_server_method(s, m->path))
            return fg_errmsg(errmsg, FG_E_INVAL, "gRPC method %s registered twice", m->path);
        s->methods[i] = *m;
        s->methods[i].path = fg_strdup(m->path);
        if (!m->gone)
            s->methods[i].gone = ignore_gone;
        s->n_methods = i + 1;
    }
    return FG_OK;
}

/* Binds a fresh socket file at path with `mode` and listens on it. */
static enum fg_err listen_unix(struct fg_grpc_server *s, const char *path, unsigned mode, int *out, char *errmsg)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (!path || !path[0] || strlen(path) >= sizeof(sa.sun_path))
        return fg_errmsg(errmsg, FG_E_INVAL, "socket path \"%s\" is empty or longer than %zu bytes", path ? path : "",
                         sizeof(sa.sun_path) - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return fg_errmsg(errmsg, FG_E_IO, "%s exists and is not a socket; not removing it", path);
        if (unlink(path) != 0 && errno != ENOENT)
            return fg_errmsg(errmsg, FG_E_IO, "removing the stale socket %s: %s", path, strerror(errno));
        fg_log(FG_LOG_INFO, FG__GRPC_COMPONENT, "removed the stale socket %s", path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fg_errmsg(errmsg, FG_E_IO, "socket: %s", strerror(errno));
    const char *failed = NULL; /* chmod before listen: until then nobody can connect, whatever the umask */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        failed = "bind";
    else if (chmod(path, mode) != 0 || stat(path, &st) != 0)
        failed = "chmod";
    else if (listen(fd, BACKLOG) != 0)
        failed = "listen";
    if (failed) {
        int saved = errno;
        if (strcmp(failed, "bind") != 0)
            unlink(path);
        close(fd);
        return fg_errmsg(errmsg, FG_E_IO, "%s %s: %s", failed, path, strerror(saved));
    }
    s->socket_dev = st.st_dev;
    s->socket_ino = st.st_ino;
    *out = fd;
    return FG_OK;
}

enum fg_err fg_grpc_server_new(struct event_base *base, const struct fg_grpc_server_opts *opts,
                               struct fg_grpc_server **out, char *errmsg)
{
    *out = NULL;
    fg__h2_ignore_sigpipe();
    struct fg_grpc_server *s = fg_calloc(1, sizeof(*s));
    s->base = base;
    s->max_message = opts->max_message ? opts->max_message : FG_GRPC_DEFAULT_MAX_MESSAGE;
    s->socket_path = fg_strdup(opts->socket_path ? opts->socket_path : "");
    enum fg_err err = copy_methods(s, opts, errmsg);
    int fd = -1;
    if (err == FG_OK)
        err = listen_unix(s, opts->socket_path, opts->mode ? opts->mode : 0600, &fd, errmsg);
    if (err != FG_OK) {
        fg_grpc_server_free(s);
        return err;
    }
    s->listener = evconnlistener_new(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
    if (!s->listener) {
        close(fd);
        fg_grpc_server_free(s);
        return fg_errmsg(errmsg, FG_E_IO, "cannot listen on %s", opts->socket_path);
    }
    evconnlistener_set_error_cb(s->listener, on_accept_error);
    fg_log(FG_LOG_INFO, FG__GRPC_COMPONENT, "serving gRPC on unix:%s (%zu methods)", s->socket_path, s->n_methods);
    *out = s;
    return FG_OK;
}

void fg_grpc_server_free(struct fg_grpc_server *s)
{
    if (!s)
        return;
    if (s->listener) {
        evconnlistener_free(s->listener);
        struct stat st; /* remove the file only if it is still ours: a new server may have replaced it */
        if (lstat(s->socket_path, &st) == 0 && st.st_dev == s->socket_dev && st.st_ino == s->socket_ino)
            unlink(s->socket_path);
    }
    while (s->conns)
        conn_destroy(s->conns);
    for (size_t i = 0; i < s->n_methods; i++)
        free((char *)s->methods[i].path);
    free(s->methods);
    free(s->socket_path);
    free(s);
}
