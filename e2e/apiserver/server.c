/*
 * server — lifecycle of the test API server: creation, the listener, the loop thread, restarts,
 * kubeconfig output.
 *
 * The listening socket is made here (SO_REUSEADDR, so a restart can bind the same port again at
 * once) and handed to evhttp. A restart is deferred to a zero-delay timer, because it is requested
 * from inside an evhttp callback: it saves the state file, finishes delayed requests, frees the
 * evhttp (closing every connection; watch close callbacks unlink their watchers), empties the watch
 * history like a real restart, and after down_ms listens again with all objects kept.
 * Cross-thread stop uses event_base_loopexit, which libevent makes thread-safe once
 * evthread_use_pthreads has run (done once per process before any base is made).
 */
#include "e2e/apiserver/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/apiserver/admit.h"
#include "e2e/apiserver/hook_client.h"

#define DEFAULT_BOOKMARK_MS 1000u
#define DEFAULT_MAX_BODY (3u << 20)
#define LIBEVENT_BODY_FACTOR 4 /* bodies past max_body * this are cut by libevent itself */
#define RELISTEN_RETRY_MS 100

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    evthread_use_pthreads();
    signal(SIGPIPE, SIG_IGN);
}

static enum fg_err open_listener(const char *host, uint16_t port, evutil_socket_t *fd_out, uint16_t *port_out,
                                 char *errmsg)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return fg_errmsg(errmsg, FG_E_INVAL, "listen address %s is not an IPv4 address", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return fg_errmsg(errmsg, FG_E_IO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    socklen_t len = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 512) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        enum fg_err err = fg_errmsg(errmsg, FG_E_IO, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        close(fd);
        return err;
    }
    *fd_out = fd;
    *port_out = ntohs(sa.sin_port);
    return FG_OK;
}

enum fg_err fg__server_listen(struct fg_apiserver *srv, char *errmsg)
{
    evutil_socket_t fd = -1;
    enum fg_err err = open_listener(srv->host, srv->port, &fd, &srv->port, errmsg);
    if (err)
        return err;
    srv->http = evhttp_new(srv->base);
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                                              EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
    evhttp_set_max_body_size(srv->http, (ev_ssize_t)(srv->max_body * LIBEVENT_BODY_FACTOR));
    evhttp_set_gencb(srv->http, fg__http_on_request, srv);
    fg__tls_attach(srv);
    if (!evhttp_accept_socket_with_handle(srv->http, fd)) {
        close(fd);
        evhttp_free(srv->http);
        srv->http = NULL;
        return fg_errmsg(errmsg, FG_E_IO, "evhttp cannot accept on port %u", srv->port);
    }
    return FG_OK;
}

static void close_http(struct fg_apiserver *srv)
{
    fg__delayed_flush(srv);
    fg__writes_flush(srv);
    if (srv->http)
        evhttp_free(srv->http);
    srv->http = NULL;
}

static void schedule(struct fg_apiserver *srv, event_callback_fn fn, uint32_t ms);

static void come_up(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_apiserver *srv = arg;
    char msg[FG_ERRMSG_MAX];
    if (fg__server_listen(srv, msg) != FG_OK) {
        fg_log(FG_LOG_WARN, "apiserver", "restart: %s; retrying", msg);
        schedule(srv, come_up, RELISTEN_RETRY_MS);
        return;
    }
    fg_log(FG_LOG_INFO, "apiserver", "back up on port %u", srv->port);
}

static void go_down(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fg_apiserver *srv = arg;
    char msg[FG_ERRMSG_MAX];
    if (srv->state_file && fg__state_save(srv, msg) != FG_OK)
        fg_log(FG_LOG_ERROR, "apiserver", "restart: %s", msg);
    close_http(srv);
    fg__store_compact(&srv->store);
    fg_log(FG_LOG_INFO, "apiserver", "down for %u ms", srv->down_ms);
    schedule(srv, come_up, srv->down_ms);
}

static void schedule(struct fg_apiserver *srv, event_callback_fn fn, uint32_t ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    event_base_once(srv->base, -1, EV_TIMEOUT, fn, srv, &tv);
}

void fg__server_restart(struct fg_apiserver *srv, uint32_t down_ms)
{
    srv->down_ms = down_ms;
    schedule(srv, go_down, 0);
}

enum fg_err fg_apiserver_new(const struct fg_apiserver_opts *opts, struct fg_apiserver **out, char *errmsg)
{
    pthread_once(&global_once, global_init);
    *out = NULL;
    struct fg_apiserver *srv = fg_calloc(1, sizeof(*srv));
    srv->host = fg_strdup(opts->host ? opts->host : "127.0.0.1");
    srv->port = opts->port;
    srv->state_file = opts->state_file ? fg_strdup(opts->state_file) : NULL;
    srv->bookmark_ms = opts->bookmark_ms ? opts->bookmark_ms : DEFAULT_BOOKMARK_MS;
    srv->max_body = opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
    srv->token = opts->token ? fg_strdup(opts->token) : NULL;
    enum fg_err err = fg__registry_init_builtin(&srv->reg, errmsg);
    if (err)
        goto out_free;
    if (opts->audit_log) {
        if (!(srv->audit = fopen(opts->audit_log, "a"))) {
            err = fg_errmsg(errmsg, FG_E_IO, "cannot open the audit log %s: %s", opts->audit_log, strerror(errno));
            goto out_free;
        }
        setvbuf(srv->audit, NULL, _IOLBF, 0);
    }
    if (opts->tls && (err = fg__tls_init(srv, errmsg)) != FG_OK)
        goto out_free;
    fg__store_init(&srv->store, &srv->reg, opts->history);
    if (srv->state_file) {
        err = fg__state_load(srv, errmsg);
        if (err && err != FG_E_NOT_FOUND_LOCAL)
            goto out_free;
    }
    fg__store_seed(&srv->store);
    srv->store.on_event = fg__watch_on_event;
    srv->store.on_event_ud = srv;
    srv->base = event_base_new();
    srv->scratch = evbuffer_new();
    if (!srv->base || !srv->scratch || fg__hook_client_new(srv->base, &srv->hooks) != FG_OK) {
        err = fg_errmsg(errmsg, FG_E_NOMEM, "cannot create the event loop");
        goto out_free;
    }
    if ((err = fg__server_listen(srv, errmsg)) != FG_OK)
        goto out_free;
    *out = srv;
    return FG_OK;
out_free:
    fg_apiserver_free(srv);
    return err;
}

void fg_apiserver_free(struct fg_apiserver *srv)
{
    if (!srv)
        return;
    fg_apiserver_stop(srv);
    close_http(srv);
    fg__hook_client_free(srv->hooks);
    if (srv->scratch)
        evbuffer_free(srv->scratch);
    fg_json_parser_cleanup(&srv->parser);
    if (srv->base)
        event_base_free(srv->base);
    fg__store_cleanup(&srv->store);
    fg__registry_cleanup(&srv->reg);
    free(srv->fault.method);
    free(srv->fault.path_prefix);
    fg__tls_cleanup(srv);
    free(srv->token);
    if (srv->audit)
        fclose(srv->audit);
    free(srv->host);
    free(srv->state_file);
    free(srv);
}

uint16_t fg_apiserver_port(const struct fg_apiserver *srv)
{
    return srv->port;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct fg_apiserver *srv = arg;
    fg_log(FG_LOG_INFO, "apiserver", "signal %d: shutting down", (int)sig);
    event_base_loopexit(srv->base, NULL);
}

enum fg_err fg_apiserver_run(struct fg_apiserver *srv, int handle_signals, char *errmsg)
{
    struct event *sigs[2] = { NULL, NULL };
    if (handle_signals) {
        sigs[0] = evsignal_new(srv->base, SIGINT, on_signal, srv);
        sigs[1] = evsignal_new(srv->base, SIGTERM, on_signal, srv);
        evsignal_add(sigs[0], NULL);
        evsignal_add(sigs[1], NULL);
    }
    int rc = event_base_dispatch(srv->base);
    for (int i = 0; i < 2; i++)
        if (sigs[i])
            event_free(sigs[i]);
    if (rc < 0)
        return fg_errmsg(errmsg, FG_E_INTERNAL, "event loop failed");
    return srv->state_file ? fg__state_save(srv, errmsg) : FG_OK;
}

static void *loop_thread(void *arg)
{
    struct fg_apiserver *srv = arg;
    pthread_setname_np(pthread_self(), "fg-apiserver");
    event_base_dispatch(srv->base);
    return NULL;
}

enum fg_err fg_apiserver_start(struct fg_apiserver *srv, char *errmsg)
{
    if (srv->thread_running)
        return fg_errmsg(errmsg, FG_E_BUSY, "the server loop is already running");
    int rc = pthread_create(&srv->thread, NULL, loop_thread, srv);
    if (rc != 0)
        return fg_errmsg(errmsg, FG_E_INTERNAL, "pthread_create: %s", strerror(rc));
    srv->thread_running = true;
    return FG_OK;
}

void fg_apiserver_stop(struct fg_apiserver *srv)
{
    if (srv->base)
        event_base_loopexit(srv->base, NULL);
    if (srv->thread_running) {
        pthread_join(srv->thread, NULL);
        srv->thread_running = false;
    }
}

enum fg_err fg_apiserver_save_state(struct fg_apiserver *srv, char *errmsg)
{
    if (!srv->state_file)
        return fg_errmsg(errmsg, FG_E_INVAL, "no state file was configured");
    return fg__state_save(srv, errmsg);
}

const char *fg_apiserver_ca_pem(const struct fg_apiserver *srv)
{
    return srv->cert_pem;
}

enum fg_err fg_apiserver_write_kubeconfig(const struct fg_apiserver *srv, const char *path, char *errmsg)
{
    char *server = fg_asprintf("%s://%s:%u", srv->ssl_ctx ? "https" : "http", srv->host, srv->port);
    json_object *cfg = json_object_new_object();
    json_object_object_add(cfg, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(cfg, "kind", json_object_new_string("Config"));
    json_object *cluster = json_object_new_object(), *clusters = json_object_new_array();
    fg_json_set_str(cluster, "name", "fracgpu-test");
    json_object *cl = fg_json_ensure_obj(cluster, "cluster");
    fg_json_set_str(cl, "server", server);
    if (srv->cert_pem) {
        char *b64 = fg_base64_encode(srv->cert_pem, strlen(srv->cert_pem));
        fg_json_set_str(cl, "certificate-authority-data", b64);
        free(b64);
    }
    json_object_array_add(clusters, cluster);
    json_object_object_add(cfg, "clusters", clusters);
    json_object *user = json_object_new_object(), *users = json_object_new_array();
    fg_json_set_str(user, "name", "fracgpu-test");
    json_object *u = fg_json_ensure_obj(user, "user");
    if (srv->token)
        fg_json_set_str(u, "token", srv->token);
    json_object_array_add(users, user);
    json_object_object_add(cfg, "users", users);
    json_object *ctx = json_object_new_object(), *contexts = json_object_new_array();
    fg_json_set_str(ctx, "name", "fracgpu-test");
    json_object *c = fg_json_ensure_obj(ctx, "context");
    fg_json_set_str(c, "cluster", "fracgpu-test");
    fg_json_set_str(c, "user", "fracgpu-test");
    fg_json_set_str(c, "namespace", "default");
    json_object_array_add(contexts, ctx);
    json_object_object_add(cfg, "contexts", contexts);
    json_object_object_add(cfg, "current-context", json_object_new_string("fracgpu-test"));
    enum fg_err err = FG_OK;
    if (json_object_to_file_ext(path, cfg, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) != 0)
        err = fg_errmsg(errmsg, FG_E_IO, "cannot write kubeconfig %s: %s", path, json_util_get_last_err());
    json_object_put(cfg);
    free(server);
    return err;
}
