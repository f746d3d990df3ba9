/*
 * The operator's own endpoints, with the operator started in-process against the test API server
 * before the fracgpu CRDs are installed: /healthz answers at once, /readyz says 503 because the
 * informers cannot list, /metrics counts the failed lists and stays well-formed Prometheus text.
 * Anything but GET/HEAD is refused (evhttp answers 501). Then the CRDs are applied with kubectl: the
 * informers recover on their own, /readyz turns 200, the four built-ins are created and get one
 * status write each — and no more: an unchanged status is not rewritten. A clean stop follows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "base/buf.h"
#include "base/log.h"
#include "e2e/operator/kubectl.h"
#include "e2e/tests/harness.h"
#include "operator/run/operator.h"

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
    return fg_buf_append(ud, data, size * n) == FG_OK ? size * n : 0;
}

static long http_get(unsigned port, const char *path, const char *method, struct fg_buf *body)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    fg_buf_reset(body);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code;
}

/* The value of the first sample line starting with `prefix`, or -1. */
static long long sample(const char *text, const char *prefix)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, prefix, strlen(prefix)) && line[strlen(prefix)] == ' ')
            return atoll(line + strlen(prefix) + 1);
    return -1;
}

static void test_endpoints_before_and_after_crds(void **state)
{
    (void)state;
    struct fg_harness h;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    struct fg_operator op;
    struct fg_operator_opts opts = { .kubeconfig = h.kubeconfig, .listen_host = "127.0.0.1", .workers = 2 };
    if (fg_operator_start(&op, &opts, msg) != FG_OK)
        fail_msg("operator: %s", msg);
    assert_true(op.http_port > 0);

    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(http_get(op.http_port, "/healthz", "GET", &body), 200);
    assert_string_equal(fg_buf_str(&body), "ok\n");
    assert_int_equal(http_get(op.http_port, "/readyz", "GET", &body), 503);
    assert_int_equal(http_get(op.http_port, "/nope", "GET", &body), 404);
    assert_int_equal(http_get(op.http_port, "/metrics", "POST", &body), 501);   /* evhttp: method not allowed */

    /* The lists fail (no such resource yet) and are retried with backoff: the counter shows it. */
    long long restarts = 0;
    for (int i = 0; i < 100 && restarts < 2; i++) {
        fg_operator_tick(&op);
        assert_int_equal(http_get(op.http_port, "/metrics", "GET", &body), 200);
        restarts = sample(fg_buf_str(&body), "fracgpu_operator_watch_restarts_total{resource=\"gpupolicies\"}");
        if (restarts < 2) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    assert_true(restarts >= 2);
    const char *m = fg_buf_str(&body);
    assert_int_equal(sample(m, "fracgpu_operator_informer_synced{resource=\"gpuworkloads\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_operator_reconciles_total{controller=\"gpupolicy\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_operator_queue_depth{controller=\"gpupolicy\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_operator_builtin_policies_created_total"), 0);
    assert_non_null(strstr(m, "# TYPE fracgpu_operator_reconciles_total counter\n"));
    assert_non_null(strstr(m, "# TYPE fracgpu_operator_queue_depth gauge\n"));
    /* Not ready: nothing may have been enqueued by the ticks. */
    assert_false(fg_operator_ready(&op));
    assert_false(op.builtins_enqueued);

    /* Now install the CRDs: the informers' retries find them (backoff is capped, the wait bounded). */
    char kdir[] = "/tmp/fg-e2e-endpoints-XXXXXX";   /* kubectl's files; the harness's directory stays its own */
    assert_non_null(mkdtemp(kdir));
    struct fg_kubectl k;
    fg_kubectl_init(&k, kdir, h.kubeconfig);
    char crds[512];
    snprintf(crds, sizeof crds, "%s/crds", getenv("FG_SOURCE_DIR"));
    if (fg_kubectl_run(&k, &body, NULL, "apply", "-k", crds, NULL) != 0)
        fail_msg("kubectl apply -k crds: %s", fg_buf_str(&body));
    long long created = 0, writes = 0;
    for (int i = 0; i < 900 && (created < 4 || writes < 4); i++) {
        fg_operator_tick(&op);
        assert_int_equal(http_get(op.http_port, "/metrics", "GET", &body), 200);
        created = sample(fg_buf_str(&body), "fracgpu_operator_builtin_policies_created_total");
        writes = sample(fg_buf_str(&body), "fracgpu_operator_policy_status_writes_total");
        if (created < 4 || writes < 4) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(created, 4);
    assert_int_equal(writes, 4);
    assert_true(fg_operator_ready(&op));
    assert_int_equal(http_get(op.http_port, "/readyz", "GET", &body), 200);
    /* Settled: a second later nothing was rewritten, nothing failed, nothing waits. */
    struct timespec second = { 1, 0 };
    nanosleep(&second, NULL);
    assert_int_equal(http_get(op.http_port, "/metrics", "GET", &body), 200);
    m = fg_buf_str(&body);
    assert_int_equal(sample(m, "fracgpu_operator_policy_status_writes_total"), 4);
    assert_int_equal(sample(m, "fracgpu_operator_builtin_policies_created_total"), 4);
    assert_int_equal(sample(m, "fracgpu_operator_reconcile_errors_total{controller=\"gpupolicy\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_operator_queue_depth{controller=\"gpupolicy\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_operator_cached_objects{resource=\"gpupolicies\"}"), 4);
    assert_int_equal(sample(m, "fracgpu_operator_informer_synced{resource=\"gpuworkloads\"}"), 1);
    assert_true(sample(m, "fracgpu_operator_reconciles_total{controller=\"gpupolicy\"}") >= 8);

    fg_buf_cleanup(&body);
    fg_operator_stop(&op);
    char rm[64];
    snprintf(rm, sizeof rm, "rm -rf '%s'", kdir);
    assert_int_equal(system(rm), 0);
    fg_harness_stop(&h);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoints_before_and_after_crds),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
