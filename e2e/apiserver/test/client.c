/* client — libcurl-based test client and in-process server harness; see client.h. */
#include "client.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    struct fg_buf *b = arg;
    return fg_buf_append(b, data, size * n) == FG_OK ? size * n : 0;
}

static void copy_header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl))
        return;
    const char *v = line + nl;
    size_t vl = len - nl;
    while (vl && (*v == ' '))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        vl--;
    if (vl >= cap)
        vl = cap - 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    struct tc_reply *r = arg;
    copy_header_value(line, size * n, "Retry-After:", r->retry_after, sizeof(r->retry_after));
    copy_header_value(line, size * n, "Cache-Control:", r->cache_control, sizeof(r->cache_control));
    copy_header_value(line, size * n, "Content-Type:", r->content_type, sizeof(r->content_type));
    return size * n;
}

CURLcode tc_request(const char *base, const char *method, const char *path, const char *content_type,
                    const char *body, struct tc_reply *out)
{
    return tc_request_with(base, method, path, content_type, NULL, body, out);
}

CURLcode tc_request_with(const char *base, const char *method, const char *path, const char *content_type,
                         const char *header, const char *body, struct tc_reply *out)
{
    return tc_request_bytes(base, method, path, content_type, header, body, body ? strlen(body) : 0, out);
}

CURLcode tc_request_bytes(const char *base, const char *method, const char *path, const char *content_type,
                          const char *header, const void *body, size_t len, struct tc_reply *out)
{
    memset(out, 0, sizeof(*out));
    CURL *h = curl_easy_init();
    char *url = fg_asprintf("%s%s", base, path);
    struct fg_buf b = FG_BUF_INIT;
    struct curl_slist *headers = NULL;
    char *ct = fg_asprintf("Content-Type: %s", content_type ? content_type : "application/json");
    headers = curl_slist_append(headers, ct);
    headers = curl_slist_append(headers, "Expect:");
    if (header)
        headers = curl_slist_append(headers, header);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->code);
    out->len = b.len;
    out->body = fg_buf_take(&b);
    if (out->len && fg_json_parse(out->body, out->len, 0, &out->json, NULL) != FG_OK)
        out->json = NULL;
    curl_slist_free_all(headers);
    free(ct);
    free(url);
    curl_easy_cleanup(h);
    return rc;
}

void tc_reply_cleanup(struct tc_reply *r)
{
    free(r->body);
    json_object_put(r->json);
    memset(r, 0, sizeof(*r));
}

const char *tc_reason(const struct tc_reply *r)
{
    const char *s = fg_json_get_str(r->json, "reason", NULL);
    return s ? s : "";
}

static size_t watch_collect(char *data, size_t size, size_t n, void *arg)
{
    struct tc_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    enum fg_err err = fg_buf_append(&w->data, data, size * n);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return err == FG_OK ? size * n : 0;
}

static int watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    struct tc_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    bool stop = w->abort;
    pthread_mutex_unlock(&w->mu);
    return stop ? 1 : 0;
}

struct watch_args {
    struct tc_watch *w;
    long max_ms;
};

static void *watch_thread(void *arg)
{
    struct watch_args *a = arg;
    struct tc_watch *w = a->w;
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, w->url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, a->max_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
    free(a);
    curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    pthread_mutex_lock(&w->mu);
    w->code = code;
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void tc_watch_start(struct tc_watch *w, const char *base, const char *path, long max_ms)
{
    memset(w, 0, sizeof(*w));
    w->url = fg_asprintf("%s%s", base, path);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    struct watch_args *a = fg_malloc(sizeof(*a));
    a->w = w;
    a->max_ms = max_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, watch_thread, a), 0);
}

static void deadline_after(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

json_object *tc_watch_next(struct tc_watch *w, long wait_ms)
{
    struct timespec deadline;
    deadline_after(&deadline, wait_ms);
    json_object *ev = NULL;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        const char *start = w->data.data ? w->data.data + w->consumed : NULL;
        const char *nl = start ? memchr(start, '\n', w->data.len - w->consumed) : NULL;
        if (nl) {
            assert_int_equal(fg_json_parse(start, (size_t)(nl - start), 0, &ev, NULL), FG_OK);
            w->consumed += (size_t)(nl - start) + 1;
            break;
        }
        if (w->done || pthread_cond_timedwait(&w->cv, &w->mu, &deadline) != 0)
            break;
    }
    pthread_mutex_unlock(&w->mu);
    return ev;
}

bool tc_watch_wait_done(struct tc_watch *w, long wait_ms)
{
    struct timespec deadline;
    deadline_after(&deadline, wait_ms);
    pthread_mutex_lock(&w->mu);
    while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == 0)
        ;
    bool done = w->done;
    pthread_mutex_unlock(&w->mu);
    return done;
}

void tc_watch_stop(struct tc_watch *w)
{
    pthread_mutex_lock(&w->mu);
    w->abort = true;
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    fg_buf_cleanup(&w->data);
    free(w->url);
}

void tc_server_start(struct tc_server *s, const struct fg_apiserver_opts *opts)
{
    struct fg_apiserver_opts o = { 0 };
    if (opts)
        o = *opts;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_apiserver_new(&o, &s->srv, msg), FG_OK);
    snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%u", fg_apiserver_port(s->srv));
    assert_int_equal(fg_apiserver_start(s->srv, msg), FG_OK);
}

void tc_server_stop(struct tc_server *s)
{
    fg_apiserver_free(s->srv);
    s->srv = NULL;
}

struct tc_server tc_srv;

int tc_setup(void **state)
{
    (void)state;
    tc_server_start(&tc_srv, NULL);
    return 0;
}

int tc_teardown(void **state)
{
    (void)state;
    tc_server_stop(&tc_srv);
    return 0;
}

long tc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void tc_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

bool tc_wait_watchers(const char *base, long n)
{
    for (int i = 0; i < 500; i++) {
        struct tc_reply r;
        tc_request(base, "GET", "/fracgpu-test/stats", NULL, NULL, &r);
        int64_t have = -1;
        fg_json_get_int64(r.json, &have, "watchers", NULL);
        tc_reply_cleanup(&r);
        if (have == n)
            return true;
        tc_sleep_ms(10);
    }
    return false;
}

long tc_create(const char *base, const char *path, const char *body)
{
    struct tc_reply r;
    assert_int_equal(tc_request(base, "POST", path, NULL, body, &r), CURLE_OK);
    if (r.code != 201)
        fail_msg("create %s: %ld %s", path, r.code, r.body);
    const char *rv = fg_json_get_str(r.json, "metadata", "resourceVersion", NULL);
    assert_non_null(rv);
    long v = atol(rv);
    tc_reply_cleanup(&r);
    return v;
}

void tc_expect_status(const char *base, const char *method, const char *path, const char *ct, const char *body, long code,
                          const char *reason, const char *msg_part)
{
    struct tc_reply r;
    assert_int_equal(tc_request(base, method, path, ct, body, &r), CURLE_OK);
    if (r.code != code || strcmp(tc_reason(&r), reason))
        fail_msg("%s %s: want %ld %s, got %ld %s", method, path, code, reason, r.code, r.body);
    assert_string_equal(fg_json_get_str(r.json, "kind", NULL), "Status");
    assert_string_equal(fg_json_get_str(r.json, "status", NULL), "Failure");
    int64_t c = 0;
    assert_true(fg_json_get_int64(r.json, &c, "code", NULL));
    assert_int_equal(c, code);
    if (msg_part && !strstr(fg_json_get_str(r.json, "message", NULL), msg_part))
        fail_msg("message %s lacks %s", fg_json_get_str(r.json, "message", NULL), msg_part);
    tc_reply_cleanup(&r);
}

json_object *tc_expect_json(const char *base, const char *method, const char *path, const char *ct,
                            const char *body, long code)
{
    struct tc_reply r;
    assert_int_equal(tc_request(base, method, path, ct, body, &r), CURLE_OK);
    if (r.code != code)
        fail_msg("%s %s: %ld %s", method, path, r.code, r.body);
    json_object *o = json_object_get(r.json);
    tc_reply_cleanup(&r);
    return o;
}

json_object *tc_get_json(const char *base, const char *path)
{
    return tc_expect_json(base, "GET", path, NULL, NULL, 200);
}

json_object *tc_parse(const char *text)
{
    json_object *o = NULL;
    if (fg_json_parse(text, strlen(text), 0, &o, NULL) != FG_OK)
        fail_msg("not JSON: %s", text);
    return o;
}

struct fg__registry tc_reg;

int tc_registry_setup(void **state)
{
    (void)state;
    return fg__registry_init_builtin(&tc_reg, NULL) == FG_OK ? 0 : -1;
}

int tc_registry_teardown(void **state)
{
    (void)state;
    fg__registry_cleanup(&tc_reg);
    return 0;
}
