/* The webhook's HTTPS endpoint (server.h). */
#include "operator/webhook/server.h"

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/manager/manager.h"

#define COMPONENT "webhook"

struct fg_webhook_server {
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;             /* guards ctx and has_cert */
    SSL_CTX *ctx;                   /* what the next connection gets */
    bool has_cert;
    const struct fg_admit_sources *sources;
    unsigned port;
    struct fg_counter *outcomes[FG_ADMIT_OUTCOMES];
    struct fg_counter *bad_requests;
    struct fg_histogram *latency;
};

/* A server context: TLS 1.2 at least, no certificate yet (a handshake then fails: nothing is ever
 * served in the clear). */
static SSL_CTX *new_ctx(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static struct bufferevent *on_connection(struct event_base *base, void *arg)
{
    struct fg_webhook_server *s = arg;
    pthread_mutex_lock(&s->mu);
    SSL *ssl = SSL_new(s->ctx); /* holds its own reference to the context */
    pthread_mutex_unlock(&s->mu);
    if (!ssl)
        abort(); /* evhttp would fall back to plain HTTP: never */
    return bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}

static void send_text(struct evhttp_request *req, int code, const char *reason, const char *ctype, const char *body)
{
    evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, reason, NULL);
}

static void bad_request(struct fg_webhook_server *s, struct evhttp_request *req, int code, const char *why)
{
    fg_counter_add(s->bad_requests, 1);
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    char *peer = NULL;
    ev_uint16_t port = 0;
    if (conn)
        evhttp_connection_get_peer(conn, &peer, &port);
    fg_log(FG_LOG_WARN, COMPONENT, "refused a request from %s:%u: %s", peer ? peer : "?", (unsigned)port, why);
    char body[FG_ERRMSG_MAX + 2];
    snprintf(body, sizeof(body), "%s\n", why);
    send_text(req, code, code == 413 ? "Payload Too Large" : "Bad Request", "text/plain; charset=utf-8", body);
}

static void on_review(struct evhttp_request *req, void *arg)
{
    struct fg_webhook_server *s = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
        send_text(req, 405, "Method Not Allowed", "text/plain; charset=utf-8", "POST an AdmissionReview\n");
        return;
    }
    uint64_t start = fg_clock_mono_ns();
    static const char *const managed_fields[] = { "request", "object", "metadata", "managedFields", NULL };
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = (char *)evbuffer_pullup(in, -1);
    if (body) /* a third of a pod's text, read by nobody here: not worth building as json-c objects */
        len = fg_json_cut_member(body, len, managed_fields);
    struct fg_review r;
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_review_parse(body ? body : "", body ? len : 0, &r, why);
    if (err != FG_OK) {
        bad_request(s, req, err == FG_E_TOO_BIG ? 413 : 400, why);
        return;
    }
    struct fg_admit_result res;
    fg_admit(&r, s->sources, &res);
    fg_counter_add(s->outcomes[res.outcome], 1);
    if (res.outcome == FG_ADMIT_WHOLE)
        fg_log(FG_LOG_INFO, COMPONENT, "pod in %s left whole: %s: %s", r.ns, res.reason, res.detail);
    send_text(req, 200, "OK", "application/json", res.response);
    fg_histogram_observe(s->latency, (double)(fg_clock_mono_ns() - start) / 1e9);
    fg_admit_result_cleanup(&res);
    fg_review_cleanup(&r);
}

static void on_other(struct evhttp_request *req, void *arg)
{
    (void)arg;
    send_text(req, 404, "Not Found", "text/plain; charset=utf-8", "the webhook serves POST " FG_WEBHOOK_PATH "\n");
}

static void register_metrics(struct fg_webhook_server *s, struct fg_metrics *m)
{
    static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05 };
    for (int o = 0; o < FG_ADMIT_OUTCOMES; o++) {
        const char *labels[] = { "outcome", fg_admit_outcome_name((enum fg_admit_outcome)o), NULL };
        s->outcomes[o] = fg_metrics_counter(m, "fracgpu_webhook_admissions_total",
                                            "AdmissionReviews answered, by what happened to the pod.", labels);
    }
    s->bad_requests = fg_metrics_counter(m, "fracgpu_webhook_bad_requests_total",
                                         "Requests refused because they were not AdmissionReviews.", NULL);
    s->latency = fg_metrics_histogram(m, "fracgpu_webhook_admission_seconds",
                                      "Time from a review read to its answer sent.", NULL, bounds,
                                      sizeof(bounds) / sizeof(*bounds));
}

enum fg_err fg_webhook_server_new(const struct fg_webhook_server_opts *opts, struct fg_webhook_server **out,
                                  char *errmsg)
{
    evthread_use_pthreads();
    struct fg_webhook_server *s = fg_calloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->sources = opts->sources;
    s->base = event_base_new();
    s->http = s->base ? evhttp_new(s->base) : NULL;
    s->ctx = new_ctx();
    if (!s->http || !s->ctx) {
        fg_webhook_server_free(s);
        return fg_errmsg(errmsg, FG_E_IO, "cannot create the webhook's HTTPS server");
    }
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH);
    evhttp_set_max_headers_size(s->http, 16384);
    evhttp_set_max_body_size(s->http, FG_REVIEW_MAX);
    evhttp_set_timeout(s->http, 30);
    evhttp_set_cb(s->http, FG_WEBHOOK_PATH, on_review, s);
    evhttp_set_gencb(s->http, on_other, s);
    evhttp_set_bevcb(s->http, on_connection, s);
    char shown[160], why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_manager_http_bind(s->http, opts->listen, shown, sizeof(shown), &s->port, why);
    if (err != FG_OK) {
        fg_webhook_server_free(s);
        return fg_errmsg(errmsg, err, "%s for the webhook", why);
    }
    register_metrics(s, opts->metrics);
    fg_log(FG_LOG_INFO, COMPONENT, "serving POST " FG_WEBHOOK_PATH " on %s (HTTPS once a certificate is set)", shown);
    *out = s;
    return FG_OK;
}

enum fg_err fg_webhook_server_set_cert(struct fg_webhook_server *s, const struct fg_pki_pair *pair, char *errmsg)
{
    SSL_CTX *ctx = new_ctx();
    if (!ctx)
        return fg_errmsg(errmsg, FG_E_IO, "cannot create a TLS context");
    enum fg_err err = fg_pki_ctx_use(ctx, pair, errmsg);
    if (err != FG_OK) {
        SSL_CTX_free(ctx);
        return err;
    }
    pthread_mutex_lock(&s->mu);
    SSL_CTX *old = s->ctx;
    s->ctx = ctx;
    s->has_cert = true;
    pthread_mutex_unlock(&s->mu);
    SSL_CTX_free(old); /* connections still using it hold their own references */
    return FG_OK;
}

bool fg_webhook_server_ready(struct fg_webhook_server *s)
{
    pthread_mutex_lock(&s->mu);
    bool ready = s->has_cert;
    pthread_mutex_unlock(&s->mu);
    return ready;
}

unsigned fg_webhook_server_port(const struct fg_webhook_server *s)
{
    return s->port;
}

static void *serve(void *arg)
{
    struct fg_webhook_server *s = arg;
    event_base_loop(s->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

enum fg_err fg_webhook_server_start(struct fg_webhook_server *s, char *errmsg)
{
    int rc = pthread_create(&s->thread, NULL, serve, s);
    if (rc != 0)
        return fg_errmsg(errmsg, FG_E_IO, "cannot start the webhook's thread: %s", strerror(rc));
    s->started = true;
    return FG_OK;
}

void fg_webhook_server_free(struct fg_webhook_server *s)
{
    if (!s)
        return;
    if (s->started) {
        event_base_loopexit(s->base, NULL); /* unlike loopbreak, not lost if the thread is not in dispatch yet */
        pthread_join(s->thread, NULL);
    }
    if (s->http)
        evhttp_free(s->http); /* closes open connections */
    if (s->base) {
        /* A closed TLS connection is released by callbacks queued on the loop (a deferred callback
         * holds a reference that event_base_free would drop unrun, leaking the SSL): run them out. */
        for (int i = 0; i < 16 && event_base_loop(s->base, EVLOOP_NONBLOCK) == 0; i++)
            ;
        event_base_free(s->base);
    }
    SSL_CTX_free(s->ctx);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
