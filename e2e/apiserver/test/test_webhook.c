/*
 * Admission webhooks called without blocking the server: while one write waits for a slow
 * webhook, other clients' GETs, writes and watch events are served at once; timeouts and garbage
 * replies follow failurePolicy; a client leaving mid-call and a server stopped mid-call lose
 * nothing and leak nothing; concurrent writes each get their own call; a webhook sees the pod after
 * built-in admission; a webhook behind a Service is reached through its EndpointSlices, its
 * certificate checked against the Service's name, and every way of not reaching it follows
 * failurePolicy; object and namespace selectors and subresource rules match as kube's do; a
 * refusal's Status is kube-apiserver's (code at least 400, a message always); connections are kept
 * alive, a dropped one replaced, a refused one and a host name that fails the certificate reported
 * in Go's words. The webhook is the HTTPS test webhook the kubectl suite serves
 * (e2e/kubectl/test/webhook_server.h).
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "client.h"
#include "e2e/apiserver/admit.h"
#include "e2e/kubectl/test/webhook_server.h"

#define PODS "/api/v1/namespaces/default/pods"
#define FAST_MS 100

struct ctx {
    struct tc_server server;
    struct kcw_server wh;
    char dir[64];
};

static int setup(void **state)
{
    struct ctx *c = fg_calloc(1, sizeof(*c));
    snprintf(c->dir, sizeof(c->dir), "/tmp/fg-webhook-XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    assert_true(kcw_start(&c->wh, c->dir, KCW_MUTATE));
    tc_server_start(&c->server, NULL);
    *state = c;
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    if (c->server.srv)
        tc_server_stop(&c->server);
    kcw_stop(&c->wh);
    assert_int_equal(nftw(c->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0); /* the certificate's files, then dir */
    free(c);
    return 0;
}

/* Registers a configuration (kind "Mutating" or "Validating") named `name` of `hooks` webhooks on pod
 * operations `op` (CREATE, UPDATE), all served by wh, with this failurePolicy and timeoutSeconds. */
static void add_config(struct ctx *c, const char *kind, const char *name, const char *op, int hooks,
                       struct kcw_server *wh, const char *policy, int timeout_s)
{
    struct fg_buf b = FG_BUF_INIT;
    int ok = fg_buf_printf(&b, "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"%sWebhookConfiguration\","
                           "\"metadata\":{\"name\":\"%s\"},\"webhooks\":[", kind, name) == FG_OK;
    for (int i = 0; i < hooks && ok; i++)
        ok = fg_buf_printf(&b, "%s{\"name\":\"h%d.%s.test.fracgpu.io\",\"admissionReviewVersions\":[\"v1\"],"
                           "\"sideEffects\":\"None\",\"failurePolicy\":\"%s\",\"timeoutSeconds\":%d,"
                           "\"clientConfig\":{\"url\":\"https://127.0.0.1:%u/hook\",\"caBundle\":\"%s\"},"
                           "\"rules\":[{\"operations\":[\"%s\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
                           "\"resources\":[\"pods\"]}]}", i ? "," : "", i, name, policy, timeout_s, wh->port,
                           wh->ca_b64, op) == FG_OK;
    assert_true(ok && fg_buf_puts(&b, "]}") == FG_OK);
    char *path = fg_asprintf("/apis/admissionregistration.k8s.io/v1/%swebhookconfigurations",
                             !strcmp(kind, "Mutating") ? "mutating" : "validating");
    tc_create(c->server.base, path, fg_buf_str(&b));
    free(path);
    fg_buf_cleanup(&b);
}

/* Registers a ValidatingWebhookConfiguration `name` of one webhook served by the test's webhook, on
 * operation `op` of `resource` (a rule's resources entry: "pods", "pods/status", "*\/\*", ...) in
 * the core group, with `more` (",\"objectSelector\":{...}" or "") added to the webhook. */
static void add_rule_hook(struct ctx *c, const char *name, const char *op, const char *resource, const char *more)
{
    char *body = fg_asprintf("{\"metadata\":{\"name\":\"%s\"},\"webhooks\":[{\"name\":\"%s.test.fracgpu.io\","
                             "\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\",\"clientConfig\":{\"url\":"
                             "\"https://127.0.0.1:%u/hook\",\"caBundle\":\"%s\"},\"rules\":[{\"operations\":[\"%s\"],"
                             "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"%s\"]}]%s}]}", name, name,
                             c->wh.port, c->wh.ca_b64, op, resource, more);
    tc_create(c->server.base, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", body);
    free(body);
}

/* One mutating webhook on pod creates, served by the test's webhook. */
static void add_hook(struct ctx *c, const char *policy, int timeout_s)
{
    add_config(c, "Mutating", "test", "CREATE", 1, &c->wh, policy, timeout_s);
}

static char *pod_body(const char *name)
{
    return fg_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":"
                       "{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", name);
}

/* POSTs pod `name` and returns the reply's code (0 when none came); *json (when not NULL) gets the
 * body (caller puts). Asserts nothing, so threads may call it. */
static long try_create_pod(const char *base, const char *name, json_object **json)
{
    char *body = pod_body(name);
    struct tc_reply r;
    long code = tc_request(base, "POST", PODS, "application/json", body, &r) == CURLE_OK ? r.code : 0;
    if (json)
        *json = json_object_get(r.json);
    tc_reply_cleanup(&r);
    free(body);
    return code;
}

static long create_pod(struct ctx *c, const char *name, json_object **json)
{
    long code = try_create_pod(c->server.base, name, json);
    assert_true(code > 0);
    return code;
}

static long get_code(struct ctx *c, const char *path)
{
    struct tc_reply r;
    assert_int_equal(tc_request(c->server.base, "GET", path, NULL, NULL, &r), CURLE_OK);
    long code = r.code;
    tc_reply_cleanup(&r);
    return code;
}

struct creator {
    struct ctx *c;
    char base[64];
    char name[32];
    pthread_t thread;
    long code;
    json_object *json;
};

static void *create_thread(void *arg)
{
    struct creator *k = arg;
    k->code = try_create_pod(k->base, k->name, &k->json);
    return NULL;
}

static void wait_reviews(struct ctx *c, unsigned n)
{
    for (int i = 0; i < 500 && kcw_reviews(&c->wh) < n; i++)
        tc_sleep_ms(10);
    assert_true(kcw_reviews(&c->wh) >= n);
}

/* A webhook taking 2.5 s: meanwhile GETs, another write and a watch event come within 100 ms. */
static void test_slow_webhook_does_not_block(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 10);
    kcw_set_mode(&c->wh, KCW_SLOW, 0);
    struct tc_watch w;
    tc_watch_start(&w, c->server.base, "/api/v1/namespaces/default/configmaps?watch=1", 10000);
    assert_true(tc_wait_watchers(c->server.base, 1));
    struct creator k = { .c = c, .name = "slow" };
    snprintf(k.base, sizeof(k.base), "%s", c->server.base);
    long start = tc_now_ms();
    assert_int_equal(pthread_create(&k.thread, NULL, create_thread, &k), 0);
    wait_reviews(c, 1);
    for (int i = 0; i < 5; i++) {
        long t = tc_now_ms();
        assert_int_equal(get_code(c, PODS), 200);
        assert_int_equal(get_code(c, "/api/v1/namespaces/default"), 200);
        assert_in_range(tc_now_ms() - t, 0, FAST_MS);
    }
    long t = tc_now_ms();
    tc_create(c->server.base, "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"cm\"}}");
    json_object *ev = tc_watch_next(&w, FAST_MS);
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "type", NULL), "ADDED");
    json_object_put(ev);
    assert_in_range(tc_now_ms() - t, 0, FAST_MS);
    assert_int_equal(get_code(c, PODS "/slow"), 404); /* still waiting for its webhook */
    pthread_join(k.thread, NULL);
    assert_int_equal(k.code, 201);
    assert_true(tc_now_ms() - start >= KCW_SLOW_MS - 100);
    json_object_put(k.json);
    assert_int_equal(get_code(c, PODS "/slow"), 200);
    tc_watch_stop(&w);
}

static void expect_failure(struct ctx *c, const char *name, const char *msg_part)
{
    json_object *json = NULL;
    assert_int_equal(create_pod(c, name, &json), 500);
    const char *msg = fg_json_get_str(json, "message", NULL);
    assert_non_null(msg);
    if (!strstr(msg, msg_part))
        fail_msg("message \"%s\" lacks \"%s\"", msg, msg_part);
    assert_string_equal(fg_json_get_str(json, "reason", NULL), "InternalError");
    json_object_put(json);
    char *path = fg_asprintf(PODS "/%s", name);
    assert_int_equal(get_code(c, path), 404);
    free(path);
}

static void expect_created_unmutated(struct ctx *c, const char *name)
{
    json_object *json = NULL;
    assert_int_equal(create_pod(c, name, &json), 201);
    assert_null(fg_json_get(json, "metadata", "labels", "mutated-by", NULL));
    json_object_put(json);
}

static void test_timeout_fail(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 1);
    kcw_set_mode(&c->wh, KCW_SLOW, 0);
    long t = tc_now_ms();
    expect_failure(c, "late", "context deadline exceeded");
    assert_in_range(tc_now_ms() - t, 900, 2000);
}

static void test_timeout_ignore(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Ignore", 1);
    kcw_set_mode(&c->wh, KCW_SLOW, 0);
    long t = tc_now_ms();
    expect_created_unmutated(c, "late");
    assert_in_range(tc_now_ms() - t, 900, 2000);
}

/* Each kind of garbage refuses the create under Fail and lets it through unmutated under Ignore. */
static void check_garbage(struct ctx *c, const char *policy)
{
    static const struct { enum kcw_mode mode; const char *msg; } cases[] = {
        { KCW_NOT_JSON, "not JSON" },
        { KCW_WRONG_UID, "expected response.uid" },
        { KCW_WRONG_KIND, "AdmissionReview" },
    };
    add_hook(c, policy, 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        kcw_set_mode(&c->wh, cases[i].mode, 0);
        char name[16];
        snprintf(name, sizeof(name), "garbage-%zu", i);
        if (!strcmp(policy, "Fail"))
            expect_failure(c, name, cases[i].msg);
        else
            expect_created_unmutated(c, name);
    }
    assert_int_equal(kcw_reviews(&c->wh), 3);
}

static void test_garbage_fail(void **state) { check_garbage(*state, "Fail"); }
static void test_garbage_ignore(void **state) { check_garbage(*state, "Ignore"); }

/* The creating client gives up while the webhook is slow: the server finishes the write, replies
 * into the void and goes on serving. */
static void test_client_leaves_mid_call(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 10);
    kcw_set_mode(&c->wh, KCW_MUTATE, 1000);
    char *body = pod_body("orphan");
    char *url = fg_asprintf("%s" PODS, c->server.base);
    CURL *curl = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 300L);
    assert_int_equal(curl_easy_perform(curl), CURLE_OPERATION_TIMEDOUT);
    curl_easy_cleanup(curl);
    curl_slist_free_all(h);
    free(url);
    free(body);
    assert_int_equal(get_code(c, PODS), 200);
    for (int i = 0; i < 300 && get_code(c, PODS "/orphan") != 200; i++)
        tc_sleep_ms(10);
    json_object *pod = tc_get_json(c->server.base, PODS "/orphan");
    assert_string_equal(fg_json_get_str(pod, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
    json_object_put(pod);
    json_object *json = NULL;
    assert_int_equal(create_pod(c, "after", &json), 201);
    json_object_put(json);
}

/* The server stops while a write waits for its webhook: the call is cancelled, nothing leaks. */
static void test_stop_mid_call(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 10);
    kcw_set_mode(&c->wh, KCW_SLOW, 0);
    struct creator k = { .c = c, .name = "cut" };
    snprintf(k.base, sizeof(k.base), "%s", c->server.base);
    assert_int_equal(pthread_create(&k.thread, NULL, create_thread, &k), 0);
    wait_reviews(c, 1);
    tc_sleep_ms(50);
    tc_server_stop(&c->server);
    pthread_join(k.thread, NULL);
    assert_true(k.code != 201);
    json_object_put(k.json);
}

/* Two creates needing the webhook at once each get their call, side by side. */
static void test_concurrent_creates(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 10);
    kcw_set_mode(&c->wh, KCW_MUTATE, 500);
    struct creator k[2] = { { .c = c, .name = "one" }, { .c = c, .name = "two" } };
    long t = tc_now_ms();
    for (int i = 0; i < 2; i++) {
        snprintf(k[i].base, sizeof(k[i].base), "%s", c->server.base);
        assert_int_equal(pthread_create(&k[i].thread, NULL, create_thread, &k[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(k[i].thread, NULL);
        assert_int_equal(k[i].code, 201);
        assert_string_equal(fg_json_get_str(k[i].json, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
        json_object_put(k[i].json);
    }
    assert_in_range(tc_now_ms() - t, 500, 950); /* side by side, not one after the other */
    assert_int_equal(kcw_reviews(&c->wh), 2);
}

static json_object *create_generated(struct ctx *c)
{
    return tc_expect_json(c->server.base, "POST", PODS, "application/json",
                          "{\"metadata\":{\"generateName\":\"gen-\",\"uid\":\"mine\",\"labels\":{\"app\":\"g\"}},"
                          "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", 201);
}

/* Kube-apiserver's order on create: a mutating webhook sees the pod as sent (with defaults), with
 * no name yet when it has generateName, no uid and no creationTimestamp (the client's uid wiped);
 * the registry fills them after mutation, so a validating webhook sees those stored. A write that
 * waited goes on from where it stopped: two creates of one name both wait; the second to come back
 * finds the name taken. */
static void test_write_goes_on_from_what_the_webhook_saw(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 10);
    kcw_set_mode(&c->wh, KCW_MUTATE, 200);
    json_object *pod = create_generated(c);
    json_object *review = kcw_last_review(&c->wh);
    json_object *seen = fg_json_get(review, "request", "object", "metadata", NULL);
    assert_string_equal(fg_json_get_str(seen, "generateName", NULL), "gen-");
    static const char *const filled[] = { "name", "uid", "creationTimestamp" };
    for (size_t i = 0; i < sizeof(filled) / sizeof(*filled); i++) {
        assert_null(fg_json_get(seen, filled[i], NULL));
        assert_non_null(fg_json_get_str(pod, "metadata", filled[i], NULL));
    }
    assert_null(fg_json_get(review, "request", "name", NULL));
    assert_true(fg_str_has_prefix(fg_json_get_str(pod, "metadata", "name", NULL), "gen-"));
    assert_string_not_equal(fg_json_get_str(pod, "metadata", "uid", NULL), "mine");
    assert_string_equal(fg_json_get_str(pod, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
    json_object_put(review);
    json_object_put(pod);

    struct creator k[2] = { { .c = c, .name = "dup" }, { .c = c, .name = "dup" } };
    for (int i = 0; i < 2; i++) {
        snprintf(k[i].base, sizeof(k[i].base), "%s", c->server.base);
        assert_int_equal(pthread_create(&k[i].thread, NULL, create_thread, &k[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(k[i].thread, NULL);
    assert_true((k[0].code == 201 && k[1].code == 409) || (k[0].code == 409 && k[1].code == 201));
    json_object *lost = k[0].code == 409 ? k[0].json : k[1].json;
    assert_string_equal(fg_json_get_str(lost, "reason", NULL), "AlreadyExists");
    for (int i = 0; i < 2; i++)
        json_object_put(k[i].json);
    assert_int_equal(kcw_reviews(&c->wh), 3);

    add_config(c, "Validating", "check", "CREATE", 1, &c->wh, "Fail", 10);
    pod = create_generated(c);
    assert_int_equal(kcw_reviews(&c->wh), 5);
    review = kcw_last_review(&c->wh);
    seen = fg_json_get(review, "request", "object", "metadata", NULL);
    for (size_t i = 0; i < sizeof(filled) / sizeof(*filled); i++)
        assert_string_equal(fg_json_get_str(seen, filled[i], NULL), fg_json_get_str(pod, "metadata", filled[i], NULL));
    assert_string_equal(fg_json_get_str(review, "request", "name", NULL),
                        fg_json_get_str(pod, "metadata", "name", NULL));
    json_object_put(review);
    json_object_put(pod);
}

struct updater {
    char base[64];
    pthread_t thread;
    char *body;
    long code;
    json_object *json;
};

static void *update_thread(void *arg)
{
    struct updater *u = arg;
    struct tc_reply r;
    u->code = tc_request(u->base, "PUT", PODS "/moving", "application/json", u->body, &r) == CURLE_OK ? r.code : 0;
    u->json = json_object_get(r.json);
    tc_reply_cleanup(&r);
    return NULL;
}

/* The stored object changes while an update waits for its webhook (a binding, which calls none): the
 * update is worked out again on the new stored object, the webhook's reply used as it came. */
static void test_update_redone_when_object_changed(void **state)
{
    struct ctx *c = *state;
    char *body = pod_body("moving");
    tc_create(c->server.base, PODS, body);
    free(body);
    add_config(c, "Mutating", "updates", "UPDATE", 1, &c->wh, "Fail", 5);
    kcw_set_mode(&c->wh, KCW_MUTATE, 400);
    json_object *pod = tc_get_json(c->server.base, PODS "/moving");
    json_object_object_del(fg_json_get(pod, "metadata", NULL), "resourceVersion"); /* unconditional */
    fg_json_set_str(fg_json_get(pod, "metadata", "labels", NULL), "tier", "back");
    struct updater u = { .body = fg_strdup(json_object_to_json_string(pod)) };
    snprintf(u.base, sizeof(u.base), "%s", c->server.base);
    json_object_put(pod);
    assert_int_equal(pthread_create(&u.thread, NULL, update_thread, &u), 0);
    wait_reviews(c, 1);
    struct tc_reply r;
    assert_int_equal(tc_request(c->server.base, "POST", PODS "/moving/binding", "application/json",
                                "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"moving\"},"
                                "\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    tc_reply_cleanup(&r);
    json_object *bound = tc_get_json(c->server.base, PODS "/moving");
    pthread_join(u.thread, NULL);
    assert_int_equal(u.code, 200);
    assert_string_equal(fg_json_get_str(u.json, "metadata", "labels", "tier", NULL), "back");
    assert_string_equal(fg_json_get_str(u.json, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
    assert_true(atol(fg_json_get_str(u.json, "metadata", "resourceVersion", NULL)) >
                atol(fg_json_get_str(bound, "metadata", "resourceVersion", NULL)));
    assert_int_equal(kcw_reviews(&c->wh), 1);
    json_object_put(bound);
    json_object_put(u.json);
    free(u.body);
}

/* Two mutating webhooks, then a validating one that denies: each is called once, in order, the write
 * waiting for each in turn, and the denial is the answer. */
static void test_webhooks_in_order(void **state)
{
    struct ctx *c = *state;
    struct kcw_server deny;
    assert_true(kcw_start(&deny, c->dir, KCW_DENY));
    add_config(c, "Mutating", "first", "CREATE", 2, &c->wh, "Fail", 5);
    add_config(c, "Validating", "last", "CREATE", 1, &deny, "Fail", 5);
    kcw_set_mode(&c->wh, KCW_MUTATE, 100);
    json_object *json = NULL;
    assert_int_equal(create_pod(c, "denied", &json), 400);
    assert_string_equal(fg_json_get_str(json, "message", NULL),
                        "admission webhook \"h0.last.test.fracgpu.io\" denied the request: no pods today");
    json_object_put(json);
    assert_int_equal(kcw_reviews(&c->wh), 2);
    assert_int_equal(kcw_reviews(&deny), 1);
    assert_int_equal(get_code(c, PODS "/denied"), 404);
    kcw_stop(&deny);
}

/* A refusal's Status as kube-apiserver makes it: the webhook's code unless absent or below 400
 * (then 400), its message, else its reason, else "without explanation". */
static void test_denial_status(void **state)
{
    (void)state;
    static const struct { const char *status; int code; const char *reason, *message; } cases[] = {
        { NULL, 400, "BadRequest", "admission webhook \"h\" denied the request without explanation" },
        { "{}", 400, "BadRequest", "admission webhook \"h\" denied the request without explanation" },
        { "{\"code\":200,\"message\":\"\"}", 400, "BadRequest",
          "admission webhook \"h\" denied the request without explanation" },
        { "{\"code\":399,\"message\":\"nope\"}", 400, "BadRequest",
          "admission webhook \"h\" denied the request: nope" },
        { "{\"code\":403,\"reason\":\"Forbidden\"}", 403, "Forbidden",
          "admission webhook \"h\" denied the request: Forbidden" },
        { "{\"code\":422,\"reason\":\"Invalid\",\"message\":\"bad spec\"}", 422, "Invalid",
          "admission webhook \"h\" denied the request: bad spec" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_object *status = cases[i].status ? json_tokener_parse(cases[i].status) : NULL;
        json_object *out = fg__webhook_denial("h", status);
        int64_t code = 0;
        assert_true(fg_json_get_int64(out, &code, "code", NULL));
        assert_int_equal(code, cases[i].code);
        assert_string_equal(fg_json_get_str(out, "reason", NULL), cases[i].reason);
        assert_string_equal(fg_json_get_str(out, "message", NULL), cases[i].message);
        assert_string_equal(fg_json_get_str(out, "status", NULL), "Failure");
        json_object_put(out);
        json_object_put(status);
    }
}

/* Selectors as kube-apiserver's matchers read them: an update is sent when the old object matches
 * the objectSelector though the new one does not; a Namespace meets a namespaceSelector by its own
 * labels. */
static void test_selectors(void **state)
{
    struct ctx *c = *state;
    char *body = pod_body("web");
    tc_create(c->server.base, PODS, body);
    free(body);
    add_rule_hook(c, "objsel", "UPDATE", "pods", ",\"objectSelector\":{\"matchLabels\":{\"app\":\"web\"}}");
    struct tc_reply r;
    assert_int_equal(tc_request(c->server.base, "PATCH", PODS "/web", "application/merge-patch+json",
                                "{\"metadata\":{\"labels\":{\"app\":null}}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    assert_int_equal(kcw_reviews(&c->wh), 1); /* the old pod matched */
    assert_int_equal(tc_request(c->server.base, "PATCH", PODS "/web", "application/merge-patch+json",
                                "{\"metadata\":{\"labels\":{\"tier\":\"x\"}}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    assert_int_equal(kcw_reviews(&c->wh), 1); /* neither did */

    add_rule_hook(c, "nssel", "CREATE", "namespaces", ",\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}}");
    tc_create(c->server.base, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"ns-b\"}}");
    assert_int_equal(kcw_reviews(&c->wh), 1);
    tc_create(c->server.base, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"ns-a\",\"labels\":{\"team\":\"a\"}}}");
    assert_int_equal(kcw_reviews(&c->wh), 2);
}

static void merge_patch(struct ctx *c, const char *path, const char *patch)
{
    struct tc_reply r;
    assert_int_equal(tc_request(c->server.base, "PATCH", path, "application/merge-patch+json", patch, &r), CURLE_OK);
    if (r.code != 200)
        fail_msg("PATCH %s: %ld %s", path, r.code, r.body);
    tc_reply_cleanup(&r);
}

/* A write to a subresource reaches only the webhooks whose rules name it ("pods/status", "*\/\*"),
 * not those on "pods", and its review says which subresource it is. */
static void test_subresource_rules(void **state)
{
    struct ctx *c = *state;
    char *body = pod_body("web");
    tc_create(c->server.base, PODS, body);
    free(body);
    add_rule_hook(c, "main", "UPDATE", "pods", "");
    merge_patch(c, PODS "/web/status", "{\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(kcw_reviews(&c->wh), 0);
    merge_patch(c, PODS "/web", "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}");
    assert_int_equal(kcw_reviews(&c->wh), 1);
    json_object *review = kcw_last_review(&c->wh);
    assert_null(fg_json_get(review, "request", "subResource", NULL));
    json_object_put(review);

    add_rule_hook(c, "status", "UPDATE", "pods/status", "");
    merge_patch(c, PODS "/web/status", "{\"status\":{\"phase\":\"Succeeded\"}}");
    assert_int_equal(kcw_reviews(&c->wh), 2);
    review = kcw_last_review(&c->wh);
    assert_string_equal(fg_json_get_str(review, "request", "subResource", NULL), "status");
    assert_string_equal(fg_json_get_str(review, "request", "requestSubResource", NULL), "status");
    json_object_put(review);
    merge_patch(c, PODS "/web", "{\"metadata\":{\"labels\":{\"a\":\"2\"}}}");
    assert_int_equal(kcw_reviews(&c->wh), 3); /* "pods" only */

    add_rule_hook(c, "every", "UPDATE", "*/*", "");
    merge_patch(c, PODS "/web/status", "{\"status\":{\"phase\":\"Failed\"}}");
    assert_int_equal(kcw_reviews(&c->wh), 5); /* "pods/status" and "*\/\*" */
}

/* A PATCH and a PUT wait for an UPDATE webhook the same way, and its JSONPatch lands on the result. */
static void test_update_waits_for_webhook(void **state)
{
    struct ctx *c = *state;
    char *body = pod_body("web");
    tc_create(c->server.base, PODS, body);
    free(body);
    add_config(c, "Mutating", "updates", "UPDATE", 1, &c->wh, "Fail", 5);
    kcw_set_mode(&c->wh, KCW_MUTATE, 300);
    struct tc_reply r;
    long t = tc_now_ms();
    assert_int_equal(tc_request(c->server.base, "PATCH", PODS "/web", "application/merge-patch+json",
                                "{\"metadata\":{\"labels\":{\"tier\":\"front\"}}}", &r), CURLE_OK);
    if (r.code != 200)
        fail_msg("PATCH: %ld %s", r.code, r.body);
    assert_true(tc_now_ms() - t >= 300);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "labels", "tier", NULL), "front");
    assert_string_equal(fg_json_get_str(r.json, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
    tc_reply_cleanup(&r);
    json_object *pod = tc_get_json(c->server.base, PODS "/web");
    json_object *labels = json_object_new_object(); /* back to app=web alone */
    fg_json_set_str(labels, "app", "web");
    json_object_object_add(fg_json_get(pod, "metadata", NULL), "labels", labels);
    assert_int_equal(tc_request(c->server.base, "PUT", PODS "/web", "application/json",
                                json_object_to_json_string(pod), &r), CURLE_OK);
    if (r.code != 200)
        fail_msg("PUT: %ld %s", r.code, r.body);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
    assert_null(fg_json_get(r.json, "metadata", "labels", "tier", NULL));
    tc_reply_cleanup(&r);
    json_object *review = kcw_last_review(&c->wh);
    assert_string_equal(fg_json_get_str(review, "request", "operation", NULL), "UPDATE");
    assert_string_equal(fg_json_get_str(review, "request", "oldObject", "metadata", "labels", "tier", NULL), "front");
    assert_string_equal(fg_json_get_str(review, "request", "oldObject", "metadata", "resourceVersion", NULL),
                        fg_json_get_str(pod, "metadata", "resourceVersion", NULL));
    json_object_put(review);
    json_object_put(pod);
    assert_int_equal(kcw_reviews(&c->wh), 2);
}

/* A mutating webhook sees the pod as defaulting and built-in admission left it: defaults filled in,
 * its priority resolved. */
static void test_webhook_sees_admitted_pod(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 5);
    json_object *json = NULL;
    assert_int_equal(create_pod(c, "seen", &json), 201);
    json_object_put(json);
    json_object *review = kcw_last_review(&c->wh);
    assert_non_null(review);
    json_object *pod = fg_json_get(review, "request", "object", NULL);
    int64_t priority = -1;
    assert_true(fg_json_get_int64(pod, &priority, "spec", "priority", NULL));
    assert_int_equal(priority, 0);
    assert_string_equal(fg_json_get_str(pod, "spec", "preemptionPolicy", NULL), "PreemptLowerPriority");
    assert_string_equal(fg_json_get_str(pod, "spec", "schedulerName", NULL), "default-scheduler");
    json_object *ct = json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), 0);
    assert_string_equal(fg_json_get_str(ct, "imagePullPolicy", NULL), "Always");
    json_object *want = json_tokener_parse(
        "{\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\","
        "\"version\":\"v1\",\"resource\":\"pods\"},\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"name\":\"seen\","
        "\"namespace\":\"default\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"kubernetes-admin\","
        "\"groups\":[\"system:masters\",\"system:authenticated\"]},\"oldObject\":null,\"dryRun\":false}");
    json_object *req = fg_json_get(review, "request", NULL);
    assert_string_equal(fg_json_get_str(review, "apiVersion", NULL), "admission.k8s.io/v1");
    assert_string_equal(fg_json_get_str(review, "kind", NULL), "AdmissionReview");
    assert_non_null(fg_json_get_str(req, "uid", NULL));
    json_object_object_foreach(want, key, value) {
        json_object *got = NULL;
        if (!json_object_object_get_ex(req, key, &got) || !json_object_equal(got, value))
            fail_msg("request.%s: got %s", key, json_object_to_json_string(got));
    }
    json_object_put(want);
    json_object_put(review);

    /* a dry run says so; an update carries the stored object as oldObject */
    struct tc_reply r;
    char *body = pod_body("dry");
    assert_int_equal(tc_request(c->server.base, "POST", PODS "?dryRun=All", "application/json", body, &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    tc_reply_cleanup(&r);
    free(body);
    review = kcw_last_review(&c->wh);
    assert_true(json_object_get_boolean(fg_json_get(review, "request", "dryRun", NULL)));
    json_object_put(review);
}

/* A Service in default with the port 443 named https (target 8443, which no slice needs to match). */
static void add_service(struct ctx *c, const char *name)
{
    char *body = fg_asprintf("{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"ports\":[{\"name\":\"https\","
                             "\"port\":443,\"targetPort\":8443}]}}", name);
    tc_create(c->server.base, "/api/v1/namespaces/default/services", body);
    free(body);
}

/* An EndpointSlice of the service with one endpoint, 127.0.0.1 on `port` named port_name; ready is
 * the JSON of conditions.ready, or NULL to leave it out. */
static void add_slice(struct ctx *c, const char *name, const char *service, const char *port_name, unsigned port,
                      const char *ready)
{
    char *body = fg_asprintf("{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/service-name\":\"%s\"}},"
                             "\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"%s\",\"port\":%u}],\"endpoints\":"
                             "[{\"addresses\":[\"127.0.0.1\"]%s%s%s}]}", name, service, port_name, port,
                             ready ? ",\"conditions\":{\"ready\":" : "", ready ? ready : "", ready ? "}" : "");
    tc_create(c->server.base, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", body);
    free(body);
}

/* A mutating configuration "svc" whose one webhook is reached through the service (port 443 unless
 * port is given) at /hook. */
static void add_service_hook(struct ctx *c, const char *service, const char *policy, unsigned port)
{
    char port_field[32] = "";
    if (port)
        snprintf(port_field, sizeof(port_field), ",\"port\":%u", port);
    char *body = fg_asprintf(
        "{\"metadata\":{\"name\":\"svc\"},\"webhooks\":[{\"name\":\"h0.svc.test.fracgpu.io\","
        "\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\",\"failurePolicy\":\"%s\",\"timeoutSeconds\":5,"
        "\"clientConfig\":{\"service\":{\"namespace\":\"default\",\"name\":\"%s\",\"path\":\"/hook\"%s},"
        "\"caBundle\":\"%s\"},\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
        "\"resources\":[\"pods\"]}]}]}", policy, service, port_field, c->wh.ca_b64);
    tc_create(c->server.base, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", body);
    free(body);
}

/* Through a Service and its EndpointSlices: the not-ready endpoint is passed over, the ready one
 * called, its certificate checked against e2e-webhook.default.svc. */
static void test_service_webhook(void **state)
{
    struct ctx *c = *state;
    add_service(c, KCW_SERVICE_NAME);
    add_slice(c, "a-not-ready", KCW_SERVICE_NAME, "https", 1, "false");
    add_slice(c, "b-ready", KCW_SERVICE_NAME, "https", c->wh.port, NULL);
    add_service_hook(c, KCW_SERVICE_NAME, "Fail", 0);
    json_object *json = NULL;
    assert_int_equal(create_pod(c, "through-service", &json), 201);
    assert_string_equal(fg_json_get_str(json, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
    json_object_put(json);
    assert_int_equal(kcw_reviews(&c->wh), 1);
}

/* TLS checks the Service's name, not the address: a Service whose name the certificate lacks fails. */
static void test_service_name_checked(void **state)
{
    struct ctx *c = *state;
    add_service(c, "impostor");
    add_slice(c, "impostor", "impostor", "https", c->wh.port, "true");
    add_service_hook(c, "impostor", "Fail", 0);
    expect_failure(c, "unchecked", "failed calling webhook \"h0.svc.test.fracgpu.io\": failed to call webhook: Post "
                   "\"https://impostor.default.svc:443/hook?timeout=5s\": tls: failed to verify certificate: x509: "
                   "hostname mismatch");
    assert_int_equal(kcw_reviews(&c->wh), 0);
}

#define SVC_POST "Internal error occurred: failed calling webhook \"h0.svc.test.fracgpu.io\": failed to call webhook: " \
                 "Post \"https://" KCW_SERVICE_NAME ".default.svc:"

/* Each way a service cannot be reached fails the call without calling anything: refused under Fail,
 * let through unmutated under Ignore. */
static void check_service_failures(struct ctx *c, const char *policy)
{
    bool fail = !strcmp(policy, "Fail");
    static const char no_endpoints[] = SVC_POST "443/hook?timeout=5s\": no endpoints available for service \""
                                       KCW_SERVICE_NAME "\"";
    add_service_hook(c, KCW_SERVICE_NAME, policy, 0);
    for (int step = 0; step < 5; step++) {
        const char *msg = no_endpoints;
        if (step == 0) {
            msg = SVC_POST "443/hook?timeout=5s\": service \"" KCW_SERVICE_NAME "\" not found";
        } else if (step == 1) {
            add_service(c, KCW_SERVICE_NAME); /* and no slices */
        } else if (step == 2) {
            add_slice(c, "not-ready", KCW_SERVICE_NAME, "https", c->wh.port, "false");
        } else if (step == 3) {
            add_slice(c, "wrong-port-name", KCW_SERVICE_NAME, "metrics", c->wh.port, "true");
        } else {
            json_object_put(tc_expect_json(c->server.base, "DELETE", "/apis/admissionregistration.k8s.io/v1/"
                                           "mutatingwebhookconfigurations/svc", NULL, NULL, 200));
            add_service_hook(c, KCW_SERVICE_NAME, policy, 8443);
            msg = SVC_POST "8443/hook?timeout=5s\": no service port 8443 found for service \"" KCW_SERVICE_NAME "\"";
        }
        char name[16];
        snprintf(name, sizeof(name), "step-%d", step);
        if (fail) {
            json_object *json = NULL;
            assert_int_equal(create_pod(c, name, &json), 500);
            assert_string_equal(fg_json_get_str(json, "message", NULL), msg);
            json_object_put(json);
        } else {
            expect_created_unmutated(c, name);
        }
    }
    assert_int_equal(kcw_reviews(&c->wh), 0);
}

static void test_service_failures_fail(void **state) { check_service_failures(*state, "Fail"); }
static void test_service_failures_ignore(void **state) { check_service_failures(*state, "Ignore"); }

/* Calls reuse one kept-alive connection; one the webhook drops on the next request is replaced by a
 * fresh connection and the call still goes through. */
static void test_connections_kept_alive(void **state)
{
    struct ctx *c = *state;
    add_hook(c, "Fail", 5);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "kept-%d", i);
        json_object *json = NULL;
        assert_int_equal(create_pod(c, name, &json), 201);
        json_object_put(json);
    }
    assert_int_equal(kcw_accepted(&c->wh), 1);
    kcw_drop_reused(&c->wh, true);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "again-%d", i);
        json_object *json = NULL;
        assert_int_equal(create_pod(c, name, &json), 201);
        assert_string_equal(fg_json_get_str(json, "metadata", "labels", "mutated-by", NULL), "e2e-webhook");
        json_object_put(json);
    }
    assert_int_equal(kcw_accepted(&c->wh), 4);
    assert_int_equal(kcw_reviews(&c->wh), 7);
}

/* A mutating configuration "url" whose one webhook is at url. */
static void add_url_hook(struct ctx *c, const char *url)
{
    char *body = fg_asprintf(
        "{\"metadata\":{\"name\":\"url\"},\"webhooks\":[{\"name\":\"h0.url.test.fracgpu.io\","
        "\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\",\"timeoutSeconds\":5,"
        "\"clientConfig\":{\"url\":\"%s\",\"caBundle\":\"%s\"},\"rules\":[{\"operations\":[\"CREATE\"],"
        "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]}]}", url, c->wh.ca_b64);
    tc_create(c->server.base, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", body);
    free(body);
}

/* Nothing listening: the call fails as Go's dialer says it. */
static void test_connection_refused(void **state)
{
    struct ctx *c = *state;
    add_url_hook(c, "https://127.0.0.1:1/hook");
    expect_failure(c, "refused", "failed to call webhook: Post \"https://127.0.0.1:1/hook?timeout=5s\": dial tcp "
                   "127.0.0.1:1: connect: connection refused");
}

/* A host name is resolved (asynchronously) and checked against the certificate, which names
 * 127.0.0.1 and e2e-webhook.default.svc but not localhost. */
static void test_host_name_resolved_and_checked(void **state)
{
    struct ctx *c = *state;
    char *url = fg_asprintf("https://localhost:%u/hook", c->wh.port);
    add_url_hook(c, url);
    char *msg = fg_asprintf("Post \"%s?timeout=5s\": tls: failed to verify certificate: x509: hostname mismatch", url);
    expect_failure(c, "by-name", msg);
    free(msg);
    free(url);
    assert_int_equal(kcw_reviews(&c->wh), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_denial_status),
        cmocka_unit_test_setup_teardown(test_slow_webhook_does_not_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_ignore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_ignore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_leaves_mid_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_mid_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_creates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_webhooks_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_goes_on_from_what_the_webhook_saw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_redone_when_object_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_waits_for_webhook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subresource_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_webhook_sees_admitted_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_webhook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_name_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_failures_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_failures_ignore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connections_kept_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_name_resolved_and_checked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
