/* Integration tests of the loop (requests, streaming lists, watches, cancel, stop) against the fake server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <event2/http.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "fake_server.h"
#include "operator/kube/loop.h"
#include "test_tls.h"

#define EV(type, name) "{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"" name "\"}}}\n"

static void handler(struct fake_server *s, struct evhttp_request *req, const char *uri, void *ud)
{
    (void)ud;
    if (strcmp(uri, "/watch/split") == 0) {
        static const char *const chunks[] = {
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"na", "me\":\"a\"}}}\n{\"type\":\"MODI",
            "FIED\",\"object\":{\"metadata\":{\"name\":\"b\xc3", "\xa9\"}}}\n", EV("DELETED", "c"),
        };
        fake_stream(s, req, chunks, 5, 5, true);
    } else if (strcmp(uri, "/watch/garbage") == 0) {
        static const char *const chunks[] = { EV("ADDED", "a"), "<html>oops</html>\n", EV("ADDED", "late") };
        fake_stream(s, req, chunks, 3, 5, false);
    } else if (strcmp(uri, "/watch/midline") == 0) {
        static const char *const chunks[] = { EV("ADDED", "a"), "{\"type\":\"ADDED\",\"obj" };
        fake_stream(s, req, chunks, 2, 5, true);
    } else if (strcmp(uri, "/watch/open") == 0) {
        static const char *const chunks[] = { EV("ADDED", "a"), EV("ADDED", "b") };
        fake_stream(s, req, chunks, 2, 5, false);
    } else if (strcmp(uri, "/watch/many") == 0) {
        static const char *const chunks[] = { EV("ADDED", "a"), EV("MODIFIED", "a"), EV("DELETED", "a") };
        fake_stream(s, req, chunks, 3, 2, true);
    } else if (strcmp(uri, "/watch/gone") == 0) {
        fake_reply(req, 410, "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old\"}", NULL, NULL);
    } else if (strncmp(uri, "/api/v1/pods?", 13) == 0) {
        if (strstr(uri, "continue=p2"))
            fake_reply(req, 200, "{\"metadata\":{\"resourceVersion\":\"11\"},\"items\":[{\"metadata\":{\"name\":\"c\"}}]}",
                       NULL, NULL);
        else
            fake_reply(req, 200, "{\"metadata\":{\"resourceVersion\":\"9\",\"continue\":\"p2\"},"
                                 "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}]}", NULL, NULL);
    } else if (strncmp(uri, "/api/v1/namespaces/gone/pods", 28) == 0) {
        fake_reply(req, 410, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"message\":\"expired\"}", NULL, NULL);
    } else if (strcmp(uri, "/err/429") == 0) {
        fake_reply(req, 429, "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\"}", "Retry-After", "3");
    } else if (strcmp(uri, "/api/v1/namespaces/ns/pods") == 0) {
        fake_reply(req, 201, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"made\"}}", NULL, NULL);
    } else {
        fake_reply(req, 200, "{\"ok\":true}", NULL, NULL);
    }
}

/* What the callbacks saw, read by the test thread under the lock. */
struct seen {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char log[4096];
    int finals;
    enum fg_err err;
    long http_code;
    char reason[64];
    char msg[FG_ERRMSG_MAX];
    unsigned retry_after;
    int events;
    struct fg_kube_call *call;      /* for cancel-in-callback tests */
    bool cancel_on_first_event;
    bool stop_on_first_event;
    struct fg_kube_loop *loop;
};

static void seen_init(struct seen *s, struct fg_kube_loop *loop)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->loop = loop;
}

static void seen_cleanup(struct seen *s)
{
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}

static void append(struct seen *s, const char *text)
{
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof s->log - n, "%s", text);
}

static void record_final(struct seen *s, enum fg_err err, const struct fg_kube_status *st, const char *msg)
{
    pthread_mutex_lock(&s->lock);
    s->finals++;
    s->err = err;
    if (st) {
        s->http_code = st->http_code;
        snprintf(s->reason, sizeof s->reason, "%s", st->reason ? st->reason : "");
        s->retry_after = st->retry_after_s;
    }
    snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "");
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Waits (at most 10 s) until `finals` reaches n. */
static void wait_finals(struct seen *s, int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&s->lock);
    while (s->finals < n)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0)
            break;
    int got = s->finals;
    pthread_mutex_unlock(&s->lock);
    if (got < n)
        fail_msg("timed out waiting for %d final callbacks (got %d)", n, got);
}

static void on_done(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->lock);
    append(s, fg_buf_str(body));
    pthread_mutex_unlock(&s->lock);
    record_final(s, err, st, st ? st->message : NULL);
}

static void on_item(void *ud, json_object *item)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->lock);
    append(s, fg_json_get_str(item, "metadata", "name", NULL));
    pthread_mutex_unlock(&s->lock);
}

static void on_list_done(void *ud, enum fg_err err, const char *rv, const struct fg_kube_status *st, const char *msg)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->lock);
    append(s, "|rv=");
    append(s, rv ? rv : "(null)");
    pthread_mutex_unlock(&s->lock);
    record_final(s, err, st, msg);
}

static bool on_event(void *ud, enum fg_watch_type type, json_object *obj)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->lock);
    if (!fg_kube_loop_on_loop_thread(s->loop))
        append(s, "WRONG-THREAD ");
    append(s, fg_watch_type_str(type));
    append(s, ":");
    append(s, fg_json_get_str(obj, "metadata", "name", NULL));
    append(s, " ");
    s->events++;
    bool cancel = s->cancel_on_first_event, stop = s->stop_on_first_event;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (cancel)
        fg_kube_call_cancel(s->call);
    return !stop;
}

static void on_end(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *msg)
{
    record_final(ud, err, st, msg);
}

/* Starting calls must happen on the loop thread: the test hands a description over. */
struct start {
    struct fg_kube_loop *loop;
    struct seen *seen;
    const char *what, *path;
    struct fg_kube_list_opts opts;
    const char *ns;
};

static void start_on_loop(void *ud)
{
    struct start *st = ud;
    struct fg_kube_call *call;
    if (strcmp(st->what, "watch") == 0)
        call = fg_kube_loop_watch(st->loop, st->path, 4096, on_event, on_end, st->seen);
    else if (strcmp(st->what, "list") == 0)
        call = fg_kube_loop_list(st->loop, &fg_kube_pods, st->ns, &st->opts, on_item, on_list_done, st->seen);
    else if (strcmp(st->what, "post") == 0)
        call = fg_kube_loop_request(st->loop, "POST", st->path, "application/json", "{\"a\":1}", 7, on_done, st->seen);
    else
        call = fg_kube_loop_request(st->loop, "GET", st->path, NULL, NULL, 0, on_done, st->seen);
    pthread_mutex_lock(&st->seen->lock);
    st->seen->call = call;
    pthread_mutex_unlock(&st->seen->lock);
    free(st);
}

static void start(struct fg_kube_loop *loop, struct seen *seen, const char *what, const char *path)
{
    struct start *st = fg_calloc(1, sizeof *st);
    *st = (struct start){ .loop = loop, .seen = seen, .what = what, .path = path };
    fg_kube_loop_call(loop, start_on_loop, st);
}

struct env {
    struct fake_server *srv;
    struct fg_kube_client *client;
    struct fg_kube_loop *loop;
};

static void env_up(struct env *e, const struct fg_kube_client_opts *opts, SSL_CTX *tls, const char *ca_pem)
{
    e->srv = fake_server_start(handler, NULL, tls);
    struct fg_kube_config cfg = { .server = (char *)fake_server_url(e->srv), .ca_pem = (char *)ca_pem, .token = "lt" };
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&cfg, opts, &e->client, err), FG_OK);
    assert_int_equal(fg_kube_loop_new(e->client, &e->loop, err), FG_OK);
    assert_int_equal(fg_kube_loop_start(e->loop), FG_OK);
    assert_false(fg_kube_loop_on_loop_thread(e->loop));
    assert_ptr_equal(fg_kube_loop_client(e->loop), e->client);
    assert_non_null(fg_kube_loop_base(e->loop));
}

static void env_down(struct env *e)
{
    fg_kube_loop_stop(e->loop);
    fg_kube_loop_stop(e->loop);   /* twice is fine */
    fg_kube_loop_free(e->loop);
    fg_kube_client_free(e->client);
    fake_server_stop(e->srv);
}

static void requests(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL, NULL);
    struct seen s;
    seen_init(&s, e.loop);
    start(e.loop, &s, "post", "/api/v1/namespaces/ns/pods");
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_OK);
    assert_int_equal(s.http_code, 201);
    assert_non_null(strstr(s.log, "\"made\""));
    struct fake_request r;
    fake_server_request(e.srv, 0, &r);
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.content_type, "application/json");
    assert_string_equal(r.body, "{\"a\":1}");
    assert_string_equal(r.authorization, "Bearer lt");
    fake_request_cleanup(&r);

    start(e.loop, &s, "get", "/err/429");
    wait_finals(&s, 2);
    assert_int_equal(s.err, FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_int_equal(s.retry_after, 3);
    seen_cleanup(&s);
    env_down(&e);
}

static void streaming_list(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL, NULL);
    struct seen s;
    seen_init(&s, e.loop);
    struct start *st = fg_calloc(1, sizeof *st);
    *st = (struct start){ .loop = e.loop, .seen = &s, .what = "list", .opts = { .limit = 2, .label_selector = "a=b" } };
    fg_kube_loop_call(e.loop, start_on_loop, st);
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_OK);
    assert_string_equal(s.log, "abc|rv=9"); /* the first page's revision; the second said 11 */
    assert_int_equal(fake_server_nrequests(e.srv), 2);
    struct fake_request r;
    fake_server_request(e.srv, 1, &r);
    assert_string_equal(r.uri, "/api/v1/pods?labelSelector=a%3Db&limit=2&continue=p2");
    fake_request_cleanup(&r);

    s.log[0] = '\0';
    st = fg_calloc(1, sizeof *st);
    *st = (struct start){ .loop = e.loop, .seen = &s, .what = "list", .ns = "gone" };
    fg_kube_loop_call(e.loop, start_on_loop, st);
    wait_finals(&s, 2);
    assert_int_equal(s.err, FG_E_KUBE_GONE);
    assert_string_equal(s.reason, "Expired");
    assert_string_equal(s.log, "|rv=(null)");
    seen_cleanup(&s);
    env_down(&e);
}

static void watch_outcomes(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL, NULL);
    static const struct {
        const char *path;
        enum fg_err err;
        const char *log;
        const char *msg;
    } cases[] = {
        { "/watch/split", FG_OK, "ADDED:a MODIFIED:b\xc3\xa9 DELETED:c ", "" },
        { "/watch/garbage", FG_E_PARSE, "ADDED:a ", "watch event 2" },
        { "/watch/midline", FG_E_CLOSED, "ADDED:a ", "truncated" },
        { "/watch/gone", FG_E_KUBE_GONE, "", "too old" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct seen s;
        seen_init(&s, e.loop);
        start(e.loop, &s, "watch", cases[i].path);
        wait_finals(&s, 1);
        assert_int_equal(s.err, cases[i].err);
        assert_string_equal(s.log, cases[i].log);
        if (!strstr(s.msg, cases[i].msg))
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].path, s.msg, cases[i].msg);
        if (cases[i].err == FG_E_KUBE_GONE)
            assert_int_equal(s.http_code, 410);
        seen_cleanup(&s);
    }
    env_down(&e);
}

static void cancel_on_loop(void *ud)
{
    struct seen *s = ud;
    fg_kube_call_cancel(s->call);
    pthread_mutex_lock(&s->lock);
    s->finals = -100;   /* marks "cancel ran"; a later final callback would move it */
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

static void wait_events(struct seen *s, int n)
{
    uint64_t until = fg_clock_mono_ns() + 10 * FG_NS_PER_S;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        int got = s->events;
        pthread_mutex_unlock(&s->lock);
        if (got >= n)
            return;
        if (fg_clock_mono_ns() > until)
            fail_msg("timed out waiting for %d events (got %d)", n, got);
        sleep_ms(2);
    }
}

static void cancel_suppresses_callbacks(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL, NULL);
    /* Cancelled from the loop thread after events arrived. */
    struct seen s;
    seen_init(&s, e.loop);
    start(e.loop, &s, "watch", "/watch/open");
    wait_events(&s, 2);
    fg_kube_loop_call(e.loop, cancel_on_loop, &s);
    uint64_t until = fg_clock_mono_ns() + 5 * FG_NS_PER_S;
    for (;;) {
        pthread_mutex_lock(&s.lock);
        int f = s.finals;
        pthread_mutex_unlock(&s.lock);
        if (f == -100 || fg_clock_mono_ns() > until)
            break;
        sleep_ms(2);
    }
    sleep_ms(50);
    assert_int_equal(s.finals, -100);
    assert_int_equal(s.events, 2);
    seen_cleanup(&s);

    /* Cancelled by its own event callback, inside the transfer. */
    seen_init(&s, e.loop);
    s.cancel_on_first_event = true;
    start(e.loop, &s, "watch", "/watch/many");
    wait_events(&s, 1);
    sleep_ms(100);
    pthread_mutex_lock(&s.lock);
    assert_int_equal(s.events, 1);
    assert_int_equal(s.finals, 0);
    pthread_mutex_unlock(&s.lock);
    seen_cleanup(&s);
    env_down(&e);
}

static void many_watches_share_the_loop(void **state)
{
    (void)state;
    struct env e;
    struct fg_kube_client_opts o = FG_KUBE_CLIENT_OPTS_DEFAULT;
    o.qps = 0;
    env_up(&e, &o, NULL, NULL);
    enum { N = 100 };
    struct seen *s = fg_calloc(N, sizeof *s);
    for (int i = 0; i < N; i++) {
        seen_init(&s[i], e.loop);
        start(e.loop, &s[i], "watch", "/watch/many");
    }
    for (int i = 0; i < N; i++) {
        wait_finals(&s[i], 1);
        assert_int_equal(s[i].err, FG_OK);
        assert_string_equal(s[i].log, "ADDED:a MODIFIED:a DELETED:a ");
        seen_cleanup(&s[i]);
    }
    free(s);
    env_down(&e);
}

static void stop_cancels_open_watches(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL, NULL);
    struct seen s[3];
    for (int i = 0; i < 3; i++) {
        seen_init(&s[i], e.loop);
        start(e.loop, &s[i], "watch", "/watch/open");
    }
    for (int i = 0; i < 3; i++)
        wait_events(&s[i], 2);
    fg_kube_loop_stop(e.loop);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s[i].finals, 0);
        seen_cleanup(&s[i]);
    }
    /* Work queued after stop never runs, and is freed. */
    struct seen late;
    seen_init(&late, e.loop);
    struct start *st = fg_calloc(1, sizeof *st);
    *st = (struct start){ .loop = e.loop, .seen = &late, .what = "get", .path = "/ok" };
    fg_kube_loop_call(e.loop, start_on_loop, st);
    env_down(&e);
    assert_int_equal(late.finals, 0);
    free(st);   /* never ran, so never freed itself */
    seen_cleanup(&late);
}

static void rate_limited_requests_wait_on_a_timer(void **state)
{
    (void)state;
    struct env e;
    struct fg_kube_client_opts o = FG_KUBE_CLIENT_OPTS_DEFAULT;
    o.qps = 20;
    o.burst = 1;
    env_up(&e, &o, NULL, NULL);
    struct seen s;
    seen_init(&s, e.loop);
    uint64_t t0 = fg_clock_mono_ns();
    for (int i = 0; i < 5; i++)
        start(e.loop, &s, "get", "/ok");
    wait_finals(&s, 5);
    uint64_t took = fg_clock_mono_ns() - t0;
    assert_int_equal(s.err, FG_OK);
    assert_true(took >= 180 * FG_NS_PER_MS);   /* 4 refills at 50 ms */
    assert_true(took < 5 * FG_NS_PER_S);
    seen_cleanup(&s);
    env_down(&e);
}

static void unreachable_server(void **state)
{
    (void)state;
    struct fg_kube_config cfg = { .server = "http://127.0.0.1:1" };
    struct fg_kube_client *c;
    struct fg_kube_loop *loop;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_loop_new(c, &loop, err), FG_OK);
    assert_int_equal(fg_kube_loop_start(loop), FG_OK);
    struct seen s;
    seen_init(&s, loop);
    start(loop, &s, "watch", "/watch/open");
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_E_CONNECT);
    assert_non_null(strstr(s.msg, "127.0.0.1"));
    start(loop, &s, "get", "/x");
    wait_finals(&s, 2);
    assert_int_equal(s.err, FG_E_CONNECT);
    seen_cleanup(&s);
    fg_kube_loop_free(loop);
    fg_kube_client_free(c);
}

static void https_watch(void **state)
{
    (void)state;
    struct test_tls tls;
    test_tls_init(&tls);
    struct env e;
    env_up(&e, NULL, tls.server_ctx, tls.cert_pem);
    struct seen s;
    seen_init(&s, e.loop);
    start(e.loop, &s, "watch", "/watch/split");
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_OK);
    assert_string_equal(s.log, "ADDED:a MODIFIED:b\xc3\xa9 DELETED:c ");
    seen_cleanup(&s);
    env_down(&e);

    env_up(&e, NULL, tls.server_ctx, NULL);
    seen_init(&s, e.loop);
    start(e.loop, &s, "watch", "/watch/split");
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_E_TLS);
    seen_cleanup(&s);
    env_down(&e);
    test_tls_cleanup(&tls);
}

static void consumer_stop_and_unreadable_credentials(void **state)
{
    (void)state;
    struct env e;
    env_up(&e, NULL, NULL, NULL);
    struct seen s;
    seen_init(&s, e.loop);
    s.stop_on_first_event = true;
    start(e.loop, &s, "watch", "/watch/many");
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_E_CLOSED);
    assert_int_equal(s.events, 1);
    assert_non_null(strstr(s.msg, "consumer"));
    seen_cleanup(&s);
    env_down(&e);

    /* A token file that cannot be read fails the call through its final callback. */
    struct fake_server *srv = fake_server_start(handler, NULL, NULL);
    struct fg_kube_config cfg = { .server = (char *)fake_server_url(srv), .token_file = "/nonexistent/token" };
    struct fg_kube_client *c;
    struct fg_kube_loop *loop;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_loop_new(c, &loop, err), FG_OK);
    assert_int_equal(fg_kube_loop_start(loop), FG_OK);
    assert_int_equal(fg_kube_loop_start(loop), FG_E_INVAL);
    seen_init(&s, loop);
    start(loop, &s, "watch", "/watch/many");
    wait_finals(&s, 1);
    assert_int_equal(s.err, FG_E_IO);
    assert_non_null(strstr(s.msg, "/nonexistent/token"));
    assert_int_equal(fake_server_nrequests(srv), 0);
    seen_cleanup(&s);
    fg_kube_loop_free(loop);
    fg_kube_client_free(c);
    fake_server_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(requests),
        cmocka_unit_test(streaming_list),
        cmocka_unit_test(watch_outcomes),
        cmocka_unit_test(cancel_suppresses_callbacks),
        cmocka_unit_test(many_watches_share_the_loop),
        cmocka_unit_test(stop_cancels_open_watches),
        cmocka_unit_test(rate_limited_requests_wait_on_a_timer),
        cmocka_unit_test(unreachable_server),
        cmocka_unit_test(https_watch),
        cmocka_unit_test(consumer_stop_and_unreadable_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
