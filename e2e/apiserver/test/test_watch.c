/* Watch semantics against an in-process server: initial state, history replay, 410 on expired
 * resourceVersions, bookmarks, timeouts, initial-events-end, selector transitions, fan-out, and the
 * query parameters parsed as kube-apiserver parses them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "client.h"

#define HISTORY 64
#define WAIT_MS 3000

static struct tc_server server;
#define BASE server.base

static int setup(void **state)
{
    (void)state;
    struct fg_apiserver_opts o = { .history = HISTORY, .bookmark_ms = 100 };
    tc_server_start(&server, &o);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tc_server_stop(&server);
    return 0;
}

static void make_ns(const char *ns)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", ns);
    tc_create(BASE, "/api/v1/namespaces", body);
}

static void request_ok(const char *method, const char *path, const char *ct, const char *body)
{
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, method, path, ct, body, &r), CURLE_OK);
    if (r.code != 200 && r.code != 201)
        fail_msg("%s %s: %ld %s", method, path, r.code, r.body);
    tc_reply_cleanup(&r);
}

static void label_pod(const char *ns, const char *name, const char *app)
{
    char path[256], body[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"app\":\"%s\"}}}", app);
    request_ok("PATCH", path, "application/merge-patch+json", body);
}

/* Takes the next event and checks its type and object name (name NULL: not checked). */
/* The server's count of watch events sent (its stats). */
static int64_t events_sent(void)
{
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", "/fracgpu-test/stats", NULL, NULL, &r), CURLE_OK);
    int64_t sent = -1;
    assert_true(fg_json_get_int64(r.json, &sent, "eventsSent", NULL));
    tc_reply_cleanup(&r);
    return sent;
}

static json_object *expect_event(struct tc_watch *w, const char *type, const char *name)
{
    json_object *ev = tc_watch_next(w, WAIT_MS);
    if (!ev)
        fail_msg("no %s event for %s within %d ms", type, name ? name : "-", WAIT_MS);
    if (strcmp(fg_json_get_str(ev, "type", NULL), type) ||
        (name && strcmp(fg_json_get_str(ev, "object", "metadata", "name", NULL), name)))
        fail_msg("want %s %s, got %s", type, name ? name : "-", json_object_to_json_string(ev));
    return ev;
}

static void expect_and_put(struct tc_watch *w, const char *type, const char *name)
{
    json_object_put(expect_event(w, type, name));
}

static void from_zero_then_changes(void **state)
{
    (void)state;
    make_ns("w0");
    make_ns("w0-other");
    tc_create(BASE, "/api/v1/namespaces/w0/pods", "{\"metadata\":{\"name\":\"a\"}}");
    tc_create(BASE, "/api/v1/namespaces/w0/pods", "{\"metadata\":{\"name\":\"b\"}}");
    int64_t sent_before = events_sent();
    struct tc_watch w;
    tc_watch_start(&w, BASE, "/api/v1/namespaces/w0/pods?watch=true", 20000);
    expect_and_put(&w, "ADDED", "a");
    expect_and_put(&w, "ADDED", "b");
    assert_true(tc_wait_watchers(BASE, 1));
    tc_create(BASE, "/api/v1/namespaces/w0-other/pods", "{\"metadata\":{\"name\":\"elsewhere\"}}");
    label_pod("w0", "a", "x");
    json_object *ev = expect_event(&w, "MODIFIED", "a");
    assert_string_equal(fg_json_get_str(ev, "object", "metadata", "labels", "app", NULL), "x");
    json_object_put(ev);
    request_ok("DELETE", "/api/v1/namespaces/w0/pods/b", NULL, NULL);
    expect_and_put(&w, "DELETED", "b");
    tc_watch_stop(&w);
    assert_true(tc_wait_watchers(BASE, 0));
    /* the server counts what it sent: 2 initial ADDED, a MODIFIED and a DELETED, and it keeps the
     * count once the watch is gone */
    assert_int_equal(events_sent() - sent_before, 4);
}

static void from_rv_replays_history(void **state)
{
    (void)state;
    make_ns("w1");
    long rv = tc_create(BASE, "/api/v1/namespaces/w1/pods", "{\"metadata\":{\"name\":\"h\"}}");
    label_pod("w1", "h", "one");
    label_pod("w1", "h", "two");
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/namespaces/w1/pods?watch=1&resourceVersion=%ld", rv);
    struct tc_watch w;
    tc_watch_start(&w, BASE, path, 20000);
    json_object *e1 = expect_event(&w, "MODIFIED", "h");
    json_object *e2 = expect_event(&w, "MODIFIED", "h");
    assert_string_equal(fg_json_get_str(e1, "object", "metadata", "labels", "app", NULL), "one");
    assert_string_equal(fg_json_get_str(e2, "object", "metadata", "labels", "app", NULL), "two");
    long rv1 = atol(fg_json_get_str(e1, "object", "metadata", "resourceVersion", NULL));
    long rv2 = atol(fg_json_get_str(e2, "object", "metadata", "resourceVersion", NULL));
    assert_true(rv < rv1 && rv1 < rv2);
    json_object_put(e1);
    json_object_put(e2);
    assert_null(tc_watch_next(&w, 200)); /* nothing older was replayed, nothing else pending */
    tc_watch_stop(&w);
}

static void expired_rv_gets_410_then_close(void **state)
{
    (void)state;
    make_ns("w2");
    long first = tc_create(BASE, "/api/v1/namespaces/w2/configmaps", "{\"metadata\":{\"name\":\"c\"}}");
    for (int i = 0; i < HISTORY + 2; i++) {
        char body[96];
        snprintf(body, sizeof(body), "{\"data\":{\"i\":\"%d\"}}", i);
        request_ok("PATCH", "/api/v1/namespaces/w2/configmaps/c", "application/merge-patch+json", body);
    }
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/namespaces/w2/configmaps?watch=true&resourceVersion=%ld", first);
    struct tc_watch w;
    tc_watch_start(&w, BASE, path, 20000);
    json_object *ev = expect_event(&w, "ERROR", NULL);
    assert_string_equal(fg_json_get_str(ev, "object", "kind", NULL), "Status");
    assert_string_equal(fg_json_get_str(ev, "object", "apiVersion", NULL), "v1");
    assert_string_equal(fg_json_get_str(ev, "object", "status", NULL), "Failure");
    assert_string_equal(fg_json_get_str(ev, "object", "reason", NULL), "Expired");
    int64_t code = 0;
    assert_true(fg_json_get_int64(ev, &code, "object", "code", NULL));
    assert_int_equal(code, 410);
    char want[64];
    snprintf(want, sizeof(want), "too old resource version: %ld (", first);
    assert_non_null(strstr(fg_json_get_str(ev, "object", "message", NULL), want));
    json_object_put(ev);
    assert_true(tc_watch_wait_done(&w, WAIT_MS));
    assert_int_equal(w.code, 200);
    tc_watch_stop(&w);
}

static void bookmarks_and_timeout(void **state)
{
    (void)state;
    struct tc_watch w;
    tc_watch_start(&w, BASE, "/api/v1/nodes?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=0",
                   20000);
    json_object *ev = expect_event(&w, "BOOKMARK", NULL);
    json_object *obj = fg_json_get(ev, "object", NULL);
    assert_int_equal(json_object_object_length(obj), 3);
    assert_string_equal(fg_json_get_str(obj, "kind", NULL), "Node");
    assert_string_equal(fg_json_get_str(obj, "apiVersion", NULL), "v1");
    assert_int_equal(json_object_object_length(fg_json_get(obj, "metadata", NULL)), 1);
    assert_non_null(fg_json_get_str(obj, "metadata", "resourceVersion", NULL));
    json_object_put(ev);
    /* timeoutSeconds=1 ends the stream cleanly */
    assert_true(tc_watch_wait_done(&w, WAIT_MS));
    assert_int_equal(w.code, 200);
    tc_watch_stop(&w);
    assert_true(tc_wait_watchers(BASE, 0));
}

static void initial_events_end_bookmark(void **state)
{
    (void)state;
    make_ns("w3");
    tc_create(BASE, "/api/v1/namespaces/w3/pods", "{\"metadata\":{\"name\":\"i1\"}}");
    tc_create(BASE, "/api/v1/namespaces/w3/pods", "{\"metadata\":{\"name\":\"i2\"}}");
    struct tc_watch w;
    /* RV 1 is long gone from the history (see the test before), yet NotOlderThan streams the state */
    tc_watch_start(&w, BASE, "/api/v1/namespaces/w3/pods?watch=true&sendInitialEvents=true&resourceVersion=1"
                   "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", 20000);
    expect_and_put(&w, "ADDED", "i1");
    expect_and_put(&w, "ADDED", "i2");
    json_object *ev = expect_event(&w, "BOOKMARK", NULL);
    assert_string_equal(fg_json_get_str(ev, "object", "metadata", "annotations", "k8s.io/initial-events-end", NULL),
                        "true");
    json_object_put(ev);
    tc_watch_stop(&w);
}

static void selector_transitions(void **state)
{
    (void)state;
    make_ns("w4");
    tc_create(BASE, "/api/v1/namespaces/w4/pods", "{\"metadata\":{\"name\":\"s\",\"labels\":{\"app\":\"b\"}}}");
    struct tc_watch w, byname;
    tc_watch_start(&w, BASE, "/api/v1/namespaces/w4/pods?watch=true&labelSelector=app%3Da", 20000);
    tc_watch_start(&byname, BASE, "/api/v1/namespaces/w4/pods?watch=true&fieldSelector=metadata.name%3Dt", 20000);
    assert_true(tc_wait_watchers(BASE, 2));
    label_pod("w4", "s", "a");
    expect_and_put(&w, "ADDED", "s");
    label_pod("w4", "s", "c");
    expect_and_put(&w, "DELETED", "s");
    label_pod("w4", "s", "a");
    expect_and_put(&w, "ADDED", "s");
    request_ok("DELETE", "/api/v1/namespaces/w4/pods/s", NULL, NULL);
    expect_and_put(&w, "DELETED", "s");
    tc_create(BASE, "/api/v1/namespaces/w4/pods", "{\"metadata\":{\"name\":\"t\"}}");
    expect_and_put(&byname, "ADDED", "t"); /* s never matched the field selector */
    assert_null(tc_watch_next(&w, 200));
    tc_watch_stop(&w);
    tc_watch_stop(&byname);
}

static void fan_out_identical_streams(void **state)
{
    (void)state;
    make_ns("w5");
    enum { N = 4, EVENTS = 20 };
    struct tc_watch w[N];
    for (int i = 0; i < N; i++)
        tc_watch_start(&w[i], BASE, "/api/v1/namespaces/w5/pods?watch=true&resourceVersion=0", 20000);
    assert_true(tc_wait_watchers(BASE, N));
    for (int e = 0; e < EVENTS; e++) {
        char body[96];
        snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"f%d\"}}", e);
        tc_create(BASE, "/api/v1/namespaces/w5/pods", body);
    }
    for (int e = 0; e < EVENTS; e++) {
        json_object *first = expect_event(&w[0], "ADDED", NULL);
        for (int i = 1; i < N; i++) {
            json_object *ev = expect_event(&w[i], "ADDED", NULL);
            assert_true(json_object_equal(first, ev));
            json_object_put(ev);
        }
        json_object_put(first);
    }
    for (int i = 0; i < N; i++)
        tc_watch_stop(&w[i]);
}

/* Opens a watch on w6's pods with these query parameters and expects the existing pod as ADDED. */
static void expect_watch_opens(const char *params)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/namespaces/w6/pods?%s", params);
    struct tc_watch w;
    tc_watch_start(&w, BASE, path, 20000);
    expect_and_put(&w, "ADDED", "b");
    tc_watch_stop(&w);
    assert_true(tc_wait_watchers(BASE, 0));
}

/* A plain list, not a watch: 200 with a PodList. */
static void expect_list(const char *params)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/namespaces/w6/pods?%s", params);
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", path, NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "kind", NULL), "PodList");
    tc_reply_cleanup(&r);
}

/* kube-apiserver's query booleans: absent, "0" and "false" in any case are false, every other value
 * true (it never refuses one); integers follow strconv.ParseInt and garbage is 400 naming both. */
static void query_booleans_and_integers(void **state)
{
    (void)state;
    make_ns("w6");
    tc_create(BASE, "/api/v1/namespaces/w6/pods", "{\"metadata\":{\"name\":\"b\"}}");
    expect_watch_opens("watch=True");
    expect_watch_opens("watch=1");
    expect_watch_opens("watch=TRUE");
    expect_watch_opens("watch=t");
    expect_watch_opens("watch=yes");
    expect_list("watch=false");
    expect_list("watch=FALSE");
    expect_list("watch=False");
    expect_list("watch=0");
    expect_list("limit=%2B2");

    struct tc_watch w;
    tc_watch_start(&w, BASE, "/api/v1/namespaces/w6/pods?watch=1&allowWatchBookmarks=T&resourceVersion=0", 20000);
    expect_and_put(&w, "ADDED", "b");
    json_object_put(expect_event(&w, "BOOKMARK", NULL));
    tc_watch_stop(&w);
    assert_true(tc_wait_watchers(BASE, 0));

    const char *const bad[][2] = {
        { "limit=abc", "invalid limit \"abc\"" },
        { "limit=", "invalid limit \"\"" },
        { "limit=5x", "invalid limit \"5x\"" },
        { "limit=%205", "invalid limit \" 5\"" },
        { "limit=99999999999999999999", "invalid limit \"99999999999999999999\"" },
        { "limit=-1", "invalid limit \"-1\"" },
        { "timeoutSeconds=soon", "invalid timeoutSeconds \"soon\"" },
        { "watch=true&limit=abc", "invalid limit \"abc\"" },
        { "watch=true&timeoutSeconds=1.5", "invalid timeoutSeconds \"1.5\"" },
        { "watch=true&timeoutSeconds=-1", "invalid timeoutSeconds \"-1\"" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/w6/pods?%s", bad[i][0]);
        tc_expect_status(BASE, "GET", path, NULL, NULL, 400, "BadRequest", bad[i][1]);
    }
    /* nothing was opened or lost */
    assert_true(tc_wait_watchers(BASE, 0));
    expect_list("limit=1");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_zero_then_changes),
        cmocka_unit_test(from_rv_replays_history),
        cmocka_unit_test(expired_rv_gets_410_then_close),
        cmocka_unit_test(bookmarks_and_timeout),
        cmocka_unit_test(initial_events_end_bookmark),
        cmocka_unit_test(selector_transitions),
        cmocka_unit_test(fan_out_identical_streams),
        cmocka_unit_test(query_booleans_and_integers),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
