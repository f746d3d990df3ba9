/*
 * The kube client against the test API server: every verb, the error mapping of real replies,
 * paging, selectors, the three patch types, and a watch stream driven by the kube loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/tests/harness.h"

static struct fg_harness h;

static int setup(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX] = "";
    fg_log_set_level(FG_LOG_ERROR);
    if (fg_harness_start(&h, NULL, msg) != FG_OK) {
        fprintf(stderr, "harness: %s\n", msg);
        return -1;
    }
    return fg_harness_namespace(&h, "ml") == FG_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    return 0;
}

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    return o;
}

static json_object *pod(const char *name, const char *tier)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"tier\":\"%s\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"img:1\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}]}}",
             name, tier);
    return parse(text);
}

static void crud_and_error_mapping(void **state)
{
    (void)state;
    char *coll = fg_kube_path(&fg_kube_pods, "ml", NULL, NULL, NULL);
    char *path = fg_kube_path(&fg_kube_pods, "ml", "llm-0", NULL, NULL);
    json_object *p = pod("llm-0", "gpu"), *out = NULL;
    struct fg_kube_status st = { 0 };

    assert_int_equal(fg_kube_create(h.client, coll, p, &out, NULL), FG_OK);
    const char *rv1 = fg_json_get_str(out, "metadata", "resourceVersion", NULL);
    assert_non_null(rv1);
    char *stale_rv = fg_strdup(rv1);
    json_object_put(out);

    /* create again: AlreadyExists, not Conflict */
    assert_int_equal(fg_kube_create(h.client, coll, p, NULL, &st), FG_E_KUBE_ALREADY_EXISTS);
    assert_int_equal(st.http_code, 409);
    assert_string_equal(st.reason, "AlreadyExists");
    fg_kube_status_cleanup(&st);

    /* update with the current resourceVersion succeeds; with the stale one it conflicts */
    assert_int_equal(fg_kube_get(h.client, path, &out, NULL), FG_OK);
    fg_json_set_str(fg_json_ensure_obj(fg_json_get(out, "metadata", NULL), "annotations"), "x", "1");
    assert_int_equal(fg_kube_update(h.client, path, out, NULL, NULL), FG_OK);
    fg_json_set_str(fg_json_get(out, "metadata", NULL), "resourceVersion", stale_rv);
    assert_int_equal(fg_kube_update(h.client, path, out, NULL, &st), FG_E_KUBE_CONFLICT);
    assert_int_equal(st.http_code, 409);
    fg_kube_status_cleanup(&st);
    json_object_put(out);

    /* strategic merge: env merges by name, keeping A */
    const char *smp = "{\"spec\":{\"containers\":[{\"name\":\"main\",\"env\":[{\"name\":\"B\",\"value\":\"2\"}]}]}}";
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_STRATEGIC, smp, &out, NULL), FG_OK);
    json_object *env = fg_json_get(json_object_array_get_idx(fg_json_get(out, "spec", "containers", NULL), 0),
                                   "env", NULL);
    assert_int_equal(json_object_array_length(env), 2);
    json_object_put(out);

    /* JSON patch: a failing test operation is refused and changes nothing */
    const char *jp = "[{\"op\":\"test\",\"path\":\"/metadata/labels/tier\",\"value\":\"cpu\"},"
                     "{\"op\":\"replace\",\"path\":\"/metadata/labels/tier\",\"value\":\"x\"}]";
    assert_int_not_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_JSON, jp, NULL, &st), FG_OK);
    fg_kube_status_cleanup(&st);
    assert_int_equal(fg_kube_get(h.client, path, &out, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(out, "metadata", "labels", "tier", NULL), "gpu");
    json_object_put(out);

    /* merge patch with null deletes a key */
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE,
                                   "{\"metadata\":{\"annotations\":{\"x\":null}}}", &out, NULL), FG_OK);
    assert_null(fg_json_get(out, "metadata", "annotations", "x", NULL));
    json_object_put(out);

    /* invalid JSON body: 400 BadRequest with a message, nothing stored */
    struct fg_buf reply = FG_BUF_INIT;
    assert_int_equal(fg_kube_request(h.client, "POST", coll, "application/json", "{\"kind\":", 8, &reply, &st),
                     FG_E_KUBE_BAD_REQUEST);
    assert_non_null(st.message);
    fg_kube_status_cleanup(&st);
    fg_buf_cleanup(&reply);

    /* an oversized object is refused, not stored, and the server lives on */
    size_t big = 4u << 20;
    char *huge = fg_malloc(big + 256);
    int n = snprintf(huge, 256, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"huge\",\"annotations\":{\"a\":\"");
    memset(huge + n, 'x', big);
    strcpy(huge + n + big, "\"}}}");
    assert_int_not_equal(fg_kube_request(h.client, "POST", coll, "application/json", huge, strlen(huge), &reply, &st), FG_OK);
    assert_true(st.http_code >= 400 && st.http_code < 500);
    fg_kube_status_cleanup(&st);
    fg_buf_cleanup(&reply);
    free(huge);
    char *huge_path = fg_kube_path(&fg_kube_pods, "ml", "huge", NULL, NULL);
    assert_int_equal(fg_kube_get(h.client, huge_path, NULL, &st), FG_E_KUBE_NOT_FOUND);
    fg_kube_status_cleanup(&st);
    free(huge_path);

    /* delete, then 404 */
    assert_int_equal(fg_kube_delete(h.client, path, NULL, NULL, NULL), FG_OK);
    assert_int_equal(fg_kube_get(h.client, path, NULL, &st), FG_E_KUBE_NOT_FOUND);
    assert_int_equal(st.http_code, 404);
    fg_kube_status_cleanup(&st);

    /* injected 429 carries Retry-After into the status */
    assert_int_equal(fg_harness_fault(&h, "fail?count=1&code=429&retryAfter=3"), FG_OK);
    assert_int_equal(fg_kube_get(h.client, coll, NULL, &st), FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 3);
    fg_kube_status_cleanup(&st);

    free(stale_rv);
    json_object_put(p);
    free(path);
    free(coll);
}

static void count_item(void *ud, json_object *item)
{
    (void)item;
    (*(int *)ud)++;
}

static void paging_and_selectors(void **state)
{
    (void)state;
    char *coll = fg_kube_path(&fg_kube_pods, "ml", NULL, NULL, NULL);
    for (int i = 0; i < 25; i++) {
        char name[16];
        snprintf(name, sizeof name, "pg-%d", i);
        json_object *p = pod(name, i % 5 == 0 ? "gpu" : "cpu");
        assert_int_equal(fg_kube_create(h.client, coll, p, NULL, NULL), FG_OK);
        json_object_put(p);
    }
    int items = 0;
    char *rv = NULL;
    struct fg_kube_list_opts lo = { .limit = 4 };
    assert_int_equal(fg_kube_list(h.client, &fg_kube_pods, "ml", &lo, count_item, &items, &rv, NULL), FG_OK);
    assert_int_equal(items, 25);
    assert_non_null(rv);
    free(rv);
    rv = NULL;
    items = 0;
    lo.label_selector = "tier=gpu";
    assert_int_equal(fg_kube_list(h.client, &fg_kube_pods, NULL, &lo, count_item, &items, &rv, NULL), FG_OK);
    assert_int_equal(items, 5);
    free(rv);
    rv = NULL;
    items = 0;
    struct fg_kube_list_opts fo = { .field_selector = "metadata.name=pg-7" };
    assert_int_equal(fg_kube_list(h.client, &fg_kube_pods, "ml", &fo, count_item, &items, &rv, NULL), FG_OK);
    assert_int_equal(items, 1);
    free(rv);
    free(coll);
}

/* ---- watch through the loop ---- */

struct watch_ctx {
    int added, modified, deleted;
    enum fg_err error_event;   /* decoded Status of the last ERROR event */
    bool ended;
    enum fg_err end_err;
    struct fg_kube_call *call;
    char *path;
};

static bool on_event(void *ud, enum fg_watch_type type, json_object *obj)
{
    struct watch_ctx *w = ud;
    if (type == FG_WATCH_ADDED)
        w->added++;
    else if (type == FG_WATCH_MODIFIED)
        w->modified++;
    else if (type == FG_WATCH_DELETED)
        w->deleted++;
    else if (type == FG_WATCH_ERROR) {
        struct fg_kube_status st = { 0 };
        w->error_event = fg_kube_status_from_object(obj, &st);
        fg_kube_status_cleanup(&st);
    }
    return true;
}

static void on_end(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *errmsg)
{
    (void)st;
    (void)errmsg;
    struct watch_ctx *w = ud;
    w->ended = true;
    w->end_err = err;
    w->call = NULL;
}

static void start_watch(void *ud)
{
    struct watch_ctx *w = ud;
    w->call = fg_kube_loop_watch(h.loop, w->path, 1u << 20, on_event, on_end, w);
}

static void cancel_watch(void *ud)
{
    struct watch_ctx *w = ud;
    if (w->call)
        fg_kube_call_cancel(w->call);
    w->call = NULL;
}

static struct watch_ctx *wctx;
static bool saw_all(void *ud)
{
    (void)ud;
    return wctx->added >= 1 && wctx->modified >= 1 && wctx->deleted >= 1;
}
static bool ended(void *ud)
{
    (void)ud;
    return wctx->ended;
}

static void watch_stream_events_and_end(void **state)
{
    (void)state;
    struct watch_ctx w = { 0 };
    wctx = &w;
    json_object *list = NULL;
    char *coll = fg_kube_path(&fg_kube_pods, "ml", NULL, NULL, NULL);
    assert_int_equal(fg_kube_get(h.client, coll, &list, NULL), FG_OK);
    const char *rv = fg_json_get_str(list, "metadata", "resourceVersion", NULL);
    assert_non_null(rv);
    char *q = fg_asprintf("watch=true&resourceVersion=%s", rv);
    w.path = fg_kube_path(&fg_kube_pods, "ml", NULL, NULL, q);
    json_object_put(list);
    assert_int_equal(fg_kube_loop_call_wait(h.loop, start_watch, &w, 10000), FG_OK);

    json_object *p = pod("w-0", "gpu");
    assert_int_equal(fg_kube_create(h.client, coll, p, NULL, NULL), FG_OK);
    char *path = fg_kube_path(&fg_kube_pods, "ml", "w-0", NULL, NULL);
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE, "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
                                   NULL, NULL), FG_OK);
    assert_int_equal(fg_kube_delete(h.client, path, NULL, NULL, NULL), FG_OK);
    assert_true(fg_harness_wait(saw_all, NULL, 10000));
    assert_false(w.ended);

    /* the server drops every watch: the stream ends with a transport error or a clean close */
    assert_int_equal(fg_harness_fault(&h, "drop-watches"), FG_OK);
    assert_true(fg_harness_wait(ended, NULL, 10000));

    /* a watch from a compacted revision gets one ERROR event carrying 410 Expired, then ends */
    w = (struct watch_ctx){ .path = w.path };
    assert_int_equal(fg_harness_fault(&h, "compact"), FG_OK);
    assert_int_equal(fg_kube_create(h.client, coll, p, NULL, NULL), FG_OK);
    free(w.path);
    w.path = fg_kube_path(&fg_kube_pods, "ml", NULL, NULL, "watch=true&resourceVersion=1");
    int events_before = w.added;
    assert_int_equal(fg_kube_loop_call_wait(h.loop, start_watch, &w, 10000), FG_OK);
    assert_true(fg_harness_wait(ended, NULL, 10000));
    assert_int_equal(w.error_event, FG_E_KUBE_GONE);
    assert_int_equal(w.added, events_before);
    assert_int_equal(fg_kube_loop_call_wait(h.loop, cancel_watch, &w, 10000), FG_OK);

    json_object_put(p);
    free(path);
    free(w.path);
    free(q);
    free(coll);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crud_and_error_mapping),
        cmocka_unit_test(paging_and_selectors),
        cmocka_unit_test(watch_stream_events_and_end),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
