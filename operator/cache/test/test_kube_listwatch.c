/* Integration test of the kube lister-watcher: an informer on operator/kube's loop against a local
 * HTTP server (operator/kube's test server) that throttles, lists, watches, bookmarks and expires. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/http.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "fake_server.h"
#include "operator/cache/informer.h"
#include "operator/cache/kube_listwatch.h"
#include "operator/kube/loop.h"

#define POD(name, rv) "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"

static atomic_int lists, watches;
static _Atomic uint64_t list_ns[3];

static void handler(struct fake_server *s, struct evhttp_request *req, const char *uri, void *ud)
{
    (void)ud;
    if (strncmp(uri, "/api/v1/namespaces/ns/pods?", 27) != 0) {
        fake_reply(req, 404, "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}", NULL, NULL);
        return;
    }
    if (strstr(uri, "watch=1")) {
        if (atomic_fetch_add(&watches, 1) == 0) {
            static const char *const chunks[] = {
                EV("MODIFIED", POD("a", "11")),
                EV("BOOKMARK", "{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"15\"}}"),
                EV("ERROR", "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old\"}"),
            };
            fake_stream(s, req, chunks, 3, 5, true);
        } else {
            static const char *const chunks[] = { EV("ADDED", POD("d", "21")) };
            fake_stream(s, req, chunks, 1, 5, false);
        }
        return;
    }
    int n = atomic_fetch_add(&lists, 1);
    if (n < 3)
        atomic_store(&list_ns[n], fg_clock_mono_ns());
    if (n == 0)
        fake_reply(req, 429, "{\"kind\":\"Status\",\"code\":429,\"reason\":\"TooManyRequests\"}", "Retry-After", "1");
    else if (n == 1)
        fake_reply(req, 200, "{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[" POD("a", "5") "," POD("b", "6") "]}",
                   NULL, NULL);
    else
        fake_reply(req, 200, "{\"metadata\":{\"resourceVersion\":\"20\"},\"items\":[" POD("a", "11") "," POD("c", "18") "]}",
                   NULL, NULL);
}

struct env {
    struct fake_server *srv;
    struct fg_kube_client *client;
    struct fg_kube_loop *loop;
    struct fg_informer *inf;
    atomic_int deletes;
    atomic_bool done;
};

static void count_delete(void *ud, struct fg_kobj *obj)
{
    struct env *e = ud;
    if (strcmp(fg_kobj_key(obj), "ns/b") == 0)
        atomic_fetch_add(&e->deletes, 1);
}

static void start_on_loop(void *ud)
{
    struct env *e = ud;
    assert_int_equal(fg_informer_start(e->inf), FG_OK);
}

static void free_on_loop(void *ud)
{
    struct env *e = ud;
    fg_informer_free(e->inf);
    atomic_store(&e->done, true);
}

static bool has(struct fg_store *store, const char *key, uint64_t rv)
{
    struct fg_kobj *k = fg_store_get(store, key);
    bool ok = k && fg_kobj_rv(k) == rv;
    fg_kobj_unref(k);
    return ok;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static bool find_request(struct fake_server *srv, const char *needle1, const char *needle2)
{
    bool found = false;
    for (size_t i = 0; i < fake_server_nrequests(srv) && !found; i++) {
        struct fake_request r;
        fake_server_request(srv, i, &r);
        found = strstr(r.uri, needle1) && strstr(r.uri, needle2);
        fake_request_cleanup(&r);
    }
    return found;
}

static void test_informer_over_http(void **state)
{
    (void)state;
    struct env e = { 0 };
    e.srv = fake_server_start(handler, NULL, NULL);
    struct fg_kube_config cfg = { .server = (char *)fake_server_url(e.srv) };
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &e.client, err), FG_OK);
    assert_int_equal(fg_kube_loop_new(e.client, &e.loop, err), FG_OK);
    assert_int_equal(fg_kube_loop_start(e.loop), FG_OK);
    /* Built here, started (and later freed) on the loop thread; this thread only reads the store. */
    e.inf = fg_informer_new(fg_kube_listwatch_new(e.loop, &fg_kube_pods, "ns", NULL), NULL);
    static const struct fg_resource_handler h = { .on_delete = count_delete };
    assert_int_equal(fg_informer_add_handler(e.inf, &h, &e), FG_OK);
    fg_kube_loop_call(e.loop, start_on_loop, &e);

    /* Throttled list, list, watch (event, bookmark, 410), relist, watch: d arrives last. */
    uint64_t deadline = fg_clock_mono_ns() + 10 * FG_NS_PER_S;
    while (fg_clock_mono_ns() < deadline && !has(fg_informer_store(e.inf), "ns/d", 21))
        sleep_ms(5);
    struct fg_store *store = fg_informer_store(e.inf);
    assert_true(fg_informer_has_synced(e.inf));
    assert_true(has(store, "ns/d", 21));
    assert_true(has(store, "ns/a", 11));
    assert_true(has(store, "ns/c", 18));
    assert_null(fg_store_get(store, "ns/b"));
    assert_int_equal(fg_store_len(store), 3);
    assert_int_equal(atomic_load(&e.deletes), 1);
    assert_int_equal(atomic_load(&lists), 3);
    /* Retry-After: 1 was honoured. */
    assert_true(atomic_load(&list_ns[1]) - atomic_load(&list_ns[0]) >= 1000 * FG_NS_PER_MS);
    assert_true(find_request(e.srv, "limit=500", "ns/pods?"));
    assert_true(find_request(e.srv, "watch=1", "resourceVersion=10"));
    assert_true(find_request(e.srv, "resourceVersion=20", "allowWatchBookmarks=true"));
    assert_true(find_request(e.srv, "resourceVersion=20", "timeoutSeconds="));

    fg_kube_loop_call(e.loop, free_on_loop, &e);
    deadline = fg_clock_mono_ns() + 5 * FG_NS_PER_S;
    while (fg_clock_mono_ns() < deadline && !atomic_load(&e.done))
        sleep_ms(2);
    assert_true(atomic_load(&e.done));
    fg_kube_loop_stop(e.loop);
    fg_kube_loop_free(e.loop);
    fg_kube_client_free(e.client);
    fake_server_stop(e.srv);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer_over_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
