/* webhook_server — the tests' HTTPS admission webhook; see webhook_server.h. */
#include "e2e/kubectl/test/webhook_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

#define MAX_REQUEST (1u << 20)

/* Reads one HTTP request's body (Content-Length framed); NULL on failure. */
static char *read_request(SSL *ssl)
{
    struct fg_buf b;
    fg_buf_init(&b, MAX_REQUEST);
    char chunk[4096];
    const char *hdr_end = NULL;
    size_t want = 0;
    for (;;) {
        if (!hdr_end && (hdr_end = b.data ? strstr(b.data, "\r\n\r\n") : NULL)) {
            const char *cl = strcasestr(b.data, "Content-Length:");
            want = (size_t)(hdr_end - b.data) + 4 + (cl ? strtoul(cl + 15, NULL, 10) : 0);
        }
        if (hdr_end && b.len >= want)
            break;
        int n = SSL_read(ssl, chunk, sizeof(chunk));
        if (n <= 0 || fg_buf_append(&b, chunk, (size_t)n)) {
            fg_buf_cleanup(&b);
            return NULL;
        }
    }
    char *body = fg_strdup(strstr(b.data, "\r\n\r\n") + 4);
    fg_buf_cleanup(&b);
    return body;
}

/* One write for head and body: two small segments would meet Nagle and delayed ACKs (40 ms). */
static void write_reply(SSL *ssl, const char *text)
{
    char *msg = fg_asprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                            strlen(text), text);
    SSL_write(ssl, msg, (int)strlen(msg));
    free(msg);
}

/* Sleeps until `delay_ms` after `since` (CLOCK_MONOTONIC), so that the answer leaves that long after
 * the review arrived, however long reading it took. */
static void sleep_until(const struct timespec *since, unsigned delay_ms)
{
    struct timespec at = *since;
    at.tv_sec += delay_ms / 1000;
    at.tv_nsec += (long)(delay_ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

/* The review without its object and old object, which no answer reads: they are cut from a copy of
 * the text before it is parsed rather than built into json-c objects for nothing. */
static enum fg_err parse_envelope(const char *body, json_object **doc)
{
    static const char *const object[] = { "request", "object", NULL };
    static const char *const old_object[] = { "request", "oldObject", NULL };
    size_t len = strlen(body);
    char *text = fg_strndup(body, len);
    len = fg_json_cut_member(text, len, object);
    len = fg_json_cut_member(text, len, old_object);
    enum fg_err err = fg_json_parse(text, len, MAX_REQUEST, doc, NULL);
    free(text);
    return err;
}

/* Answers one review (body taken) that arrived at `since`; false when the request was not one (the
 * connection is then closed). */
static bool answer(struct kcw_server *w, SSL *ssl, char *body, const struct timespec *since)
{
    json_object *doc = NULL;
    if (parse_envelope(body, &doc) != FG_OK) {
        free(body);
        return false;
    }
    pthread_mutex_lock(&w->mu);
    w->reviews++;
    free(w->last_review);
    w->last_review = body;
    const char *op = fg_json_get_str(doc, "request", "operation", NULL);
    const char *kind = fg_json_get_str(doc, "request", "kind", "kind", NULL);
    snprintf(w->last_op, sizeof(w->last_op), "%s", op ? op : "");
    snprintf(w->last_kind, sizeof(w->last_kind), "%s", kind ? kind : "");
    enum kcw_mode mode = w->mode;
    unsigned delay_ms = mode == KCW_SLOW ? KCW_SLOW_MS : w->delay_ms;
    pthread_mutex_unlock(&w->mu);
    if (delay_ms)
        sleep_until(since, delay_ms);
    if (mode == KCW_NOT_JSON) {
        write_reply(ssl, "this is not JSON");
        json_object_put(doc);
        return true;
    }
    json_object *resp = json_object_new_object();
    fg_json_set_str(resp, "uid", mode == KCW_WRONG_UID ? "not-the-uid" : fg_json_get_str(doc, "request", "uid", NULL));
    json_object_object_add(resp, "allowed", json_object_new_boolean(mode != KCW_DENY));
    if (mode == KCW_MUTATE) {
        static const char patch[] =
            "[{\"op\":\"add\",\"path\":\"/metadata/labels/mutated-by\",\"value\":\"e2e-webhook\"}]";
        char *p = fg_base64_encode(patch, sizeof(patch) - 1);
        fg_json_set_str(resp, "patchType", "JSONPatch");
        fg_json_set_str(resp, "patch", p);
        free(p);
    } else if (mode == KCW_DENY) {
        json_object *st = json_object_new_object();
        fg_json_set_str(st, "message", "no pods today");
        json_object_object_add(resp, "status", st);
    }
    json_object *out = json_object_new_object();
    fg_json_set_str(out, "apiVersion", "admission.k8s.io/v1");
    fg_json_set_str(out, "kind", mode == KCW_WRONG_KIND ? "Pod" : "AdmissionReview");
    json_object_object_add(out, "response", resp);
    write_reply(ssl, json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
    json_object_put(out);
    json_object_put(doc);
    return true;
}

struct conn {
    struct kcw_server *w;
    int fd;
    size_t slot;
};

/* Should the n-th request of a connection go unanswered, its connection closed (kcw_drop_reused)? */
static bool dropped(struct kcw_server *w, unsigned n)
{
    pthread_mutex_lock(&w->mu);
    bool drop = w->drop_reused && n > 1;
    pthread_mutex_unlock(&w->mu);
    return drop;
}

/* One connection: reviews answered until the peer closes it, it idles 5 s or the server stops. */
static void *serve_conn(void *arg)
{
    struct conn *c = arg;
    SSL *ssl = SSL_new(c->w->ctx);
    SSL_set_fd(ssl, c->fd);
    if (SSL_accept(ssl) == 1) {
        char *body;
        bool more = true;
        struct timespec since;
        for (unsigned n = 1; more && (body = read_request(ssl)) && clock_gettime(CLOCK_MONOTONIC, &since) == 0; n++) {
            if (dropped(c->w, n)) {
                free(body);
                break;
            }
            more = answer(c->w, ssl, body, &since);
        }
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    pthread_mutex_lock(&c->w->mu);
    c->w->conn_fds[c->slot] = -1;
    c->w->conns--;
    pthread_cond_broadcast(&c->w->cv);
    pthread_mutex_unlock(&c->w->mu);
    close(c->fd);
    free(c);
    return NULL;
}

/* Starts a thread for the accepted connection fd; closes it when there is no room. */
static void start_conn(struct kcw_server *w, int fd)
{
    size_t n = sizeof(w->conn_fds) / sizeof(*w->conn_fds), slot = n;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < n && slot == n; i++)
        if (w->conn_fds[i] < 0)
            slot = i;
    pthread_t t;
    struct conn *c = fg_malloc(sizeof(*c));
    *c = (struct conn){ w, fd, slot };
    if (slot < n && pthread_create(&t, NULL, serve_conn, c) == 0) {
        pthread_detach(t);
        w->conn_fds[slot] = fd;
        w->conns++;
        w->accepted++;
    } else {
        close(fd);
        free(c);
    }
    pthread_mutex_unlock(&w->mu);
}

static void *serve(void *arg)
{
    struct kcw_server *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        bool stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        if (stop)
            break;
        struct pollfd p = { .fd = w->fd, .events = POLLIN };
        if (poll(&p, 1, 100) <= 0)
            continue;
        int c = accept(w->fd, NULL, NULL);
        if (c < 0)
            continue;
        struct timeval tv = { 5, 0 };
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        start_conn(w, c);
    }
    return NULL;
}

static bool make_cert(struct kcw_server *w, const char *dir)
{
    char *cmd = fg_asprintf("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                            "-keyout %s/wh.key -out %s/wh.crt -days 1 -subj /CN=e2e-webhook "
                            "-addext subjectAltName=IP:127.0.0.1,DNS:" KCW_SERVICE_NAME "." KCW_SERVICE_NAMESPACE ".svc "
                            "-addext basicConstraints=critical,CA:TRUE "
                            ">/dev/null 2>&1", dir, dir);
    int rc = system(cmd);
    free(cmd);
    char *crt = fg_asprintf("%s/wh.crt", dir), *key = fg_asprintf("%s/wh.key", dir);
    struct fg_buf pem = { 0 };
    char msg[FG_ERRMSG_MAX];
    bool ok = rc == 0 && (w->ctx = SSL_CTX_new(TLS_server_method())) &&
              SSL_CTX_use_certificate_file(w->ctx, crt, SSL_FILETYPE_PEM) == 1 &&
              SSL_CTX_use_PrivateKey_file(w->ctx, key, SSL_FILETYPE_PEM) == 1 &&
              fg_buf_read_file(&pem, crt, msg) == FG_OK;
    if (ok)
        w->ca_b64 = fg_base64_encode(fg_buf_str(&pem), pem.len);
    fg_buf_cleanup(&pem);
    free(crt);
    free(key);
    return ok;
}

bool kcw_start(struct kcw_server *w, const char *dir, enum kcw_mode mode)
{
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    w->mode = mode;
    for (size_t i = 0; i < sizeof(w->conn_fds) / sizeof(*w->conn_fds); i++)
        w->conn_fds[i] = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (!make_cert(w, dir)) {
        fprintf(stderr, "webhook server: cannot make a certificate with the openssl command\n");
        return false;
    }
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    w->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (w->fd < 0 || bind(w->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(w->fd, 16) ||
        getsockname(w->fd, (struct sockaddr *)&sa, &len)) {
        fprintf(stderr, "webhook server: cannot listen on 127.0.0.1\n");
        return false;
    }
    w->port = ntohs(sa.sin_port);
    return pthread_create(&w->thread, NULL, serve, w) == 0;
}

void kcw_stop(struct kcw_server *w)
{
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    if (w->port)
        pthread_join(w->thread, NULL);
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < sizeof(w->conn_fds) / sizeof(*w->conn_fds); i++)
        if (w->conn_fds[i] >= 0)
            shutdown(w->conn_fds[i], SHUT_RDWR);
    while (w->conns)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    if (w->fd >= 0)
        close(w->fd);
    SSL_CTX_free(w->ctx);
    free(w->ca_b64);
    free(w->last_review);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

void kcw_set_mode(struct kcw_server *w, enum kcw_mode mode, unsigned delay_ms)
{
    pthread_mutex_lock(&w->mu);
    w->mode = mode;
    w->delay_ms = delay_ms;
    pthread_mutex_unlock(&w->mu);
}

unsigned kcw_reviews(struct kcw_server *w)
{
    pthread_mutex_lock(&w->mu);
    unsigned n = w->reviews;
    pthread_mutex_unlock(&w->mu);
    return n;
}

json_object *kcw_last_review(struct kcw_server *w)
{
    json_object *doc = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->last_review && fg_json_parse(w->last_review, strlen(w->last_review), MAX_REQUEST, &doc, NULL) != FG_OK)
        doc = NULL;
    pthread_mutex_unlock(&w->mu);
    return doc;
}

void kcw_drop_reused(struct kcw_server *w, bool drop)
{
    pthread_mutex_lock(&w->mu);
    w->drop_reused = drop;
    pthread_mutex_unlock(&w->mu);
}

unsigned kcw_accepted(struct kcw_server *w)
{
    pthread_mutex_lock(&w->mu);
    unsigned n = w->accepted;
    pthread_mutex_unlock(&w->mu);
    return n;
}
