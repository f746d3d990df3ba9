/*
 * The operator's manager and endpoints, started in-process (the operator role's setup calls on a
 * manager, with leader election) against the test API server before the fracgpu CRDs are installed:
 * /healthz answers at once, /readyz says 503 naming the informers that cannot list, /metrics counts
 * the failed lists and stays well-formed Prometheus text, and although this replica leads nothing is
 * reconciled before the caches sync. Anything but GET/HEAD is refused (evhttp answers 501). Then the
 * CRDs are applied with kubectl: the informers recover on their own, /readyz turns 200, the four
 * built-ins are created and get one status write each — and no more: an unchanged status is not
 * rewritten. A clean stop releases the Lease.
 */
#include <pthread.h>
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
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/kubectl.h"
#include "e2e/tests/harness.h"
#include "operator/manager/manager.h"
#include "reconcilers/policy.h"

/* The value of the first sample line starting with `prefix` (a whole name and label set, or a prefix
 * of the labels ending in '='), or -1. */
static long long sample(const char *text, const char *prefix)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, prefix, strlen(prefix)))
            continue;
        const char *value = line[strlen(prefix)] == ' ' ? line + strlen(prefix) : strchr(line, ' ');
        if (value && (line[strlen(prefix)] == ' ' || prefix[strlen(prefix) - 1] == '='))
            return atoll(value + 1);
    }
    return -1;
}

/* The operator's log, kept while the test runs (the sink is called from the loop thread). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fg_buf log_lines = FG_BUF_INIT;

static void keep_log(void *ud, const char *line, unsigned long len)
{
    (void)ud;
    pthread_mutex_lock(&log_mu);
    fg_buf_put(&log_lines, line, len);
    pthread_mutex_unlock(&log_mu);
}

/* How many lines of the kept log hold all of the given pieces. */
static int log_count(const char *a, const char *b)
{
    int n = 0;
    pthread_mutex_lock(&log_mu);
    for (const char *line = fg_buf_str(&log_lines); *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = memmem(line, len, a, strlen(a));
        n += hit && memmem(line, len, b, strlen(b)) != NULL;
        line += len + (end != NULL);
    }
    pthread_mutex_unlock(&log_mu);
    return n;
}

/* Fails, showing the log, unless exactly want lines hold both pieces. */
static void expect_log(int want, const char *a, const char *b)
{
    int n = log_count(a, b);
    if (n != want)
        fail_msg("%d log lines with \"%s\" and \"%s\", not %d:\n%s", n, a, b, want, fg_buf_str(&log_lines));
}

static void test_endpoints_before_and_after_crds(void **state)
{
    (void)state;
    fg_log_set_sink(keep_log, NULL);
    struct fg_harness h;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    assert_int_equal(fg_harness_namespace(&h, "fracgpu-system"), FG_OK);
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = "operator";
    opts.kubeconfig = h.kubeconfig;
    opts.listen = "127.0.0.1:0";
    opts.leader.lease_duration_ns = 2 * FG_NS_PER_S;
    opts.leader.renew_deadline_ns = 1500 * FG_NS_PER_MS;
    opts.leader.retry_period_ns = 200 * FG_NS_PER_MS;
    struct fg_manager *op;
    if (fg_manager_new(&opts, &op, msg) != FG_OK || fg_policy_reconciler_setup(op, 2, msg) != FG_OK ||
        fg_manager_start(op, msg) != FG_OK)
        fail_msg("operator: %s", msg);
    unsigned port = fg_manager_http_port(op);
    assert_true(port > 0);

    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/healthz", &body), 200);
    assert_string_equal(fg_buf_str(&body), "ok\n");
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/readyz", &body), 503);
    assert_non_null(strstr(fg_buf_str(&body), "[-]informers failed: "));
    assert_non_null(strstr(fg_buf_str(&body), "readyz check failed\n"));
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/nope", &body), 404);
    assert_int_equal(fg_harness_http(NULL, port, "POST", "/metrics", &body), 501);   /* evhttp: method not allowed */

    /* The lists fail (no such resource yet) and are retried with backoff: the counter shows it. */
    long long restarts = 0, leading = 0;
    for (int i = 0; i < 200 && (restarts < 2 || leading < 1); i++) {
        assert_int_equal(fg_harness_http(NULL, port, "GET", "/metrics", &body), 200);
        restarts = sample(fg_buf_str(&body), "fracgpu_informer_watch_restarts_total{resource=\"gpupolicies\"}");
        leading = sample(fg_buf_str(&body), "fracgpu_leader{lease=\"operator\",identity=");
        if (restarts < 2 || leading < 1) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    assert_true(restarts >= 2);
    /* A missing CRD is said once per resource, with what installs it, however often the list is tried. */
    expect_log(1, "GPUPolicy in all namespaces: the API server does not serve this resource (404)",
               "kubectl apply -k manifests");
    expect_log(0, "GPUPolicy", "list failed");
    assert_true(fg_manager_is_leader(op));
    const char *m = fg_buf_str(&body);
    assert_int_equal(sample(m, "fracgpu_informer_synced{resource=\"gpuworkloads\"}"), 0);
    /* It leads, but reconciles nothing before the caches have synced. */
    assert_int_equal(sample(m, "fracgpu_reconcile_total{controller=\"gpupolicy\",result=\"success\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_workqueue_depth{controller=\"gpupolicy\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_builtin_policies_created_total"), 0);
    assert_non_null(strstr(m, "# TYPE fracgpu_reconcile_total counter\n"));
    assert_non_null(strstr(m, "# TYPE fracgpu_reconcile_duration_seconds histogram\n"));
    assert_non_null(strstr(m, "# TYPE fracgpu_workqueue_depth gauge\n"));
    assert_non_null(strstr(m, "# TYPE process_resident_memory_bytes gauge\n"));

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
        assert_int_equal(fg_harness_http(NULL, port, "GET", "/metrics", &body), 200);
        created = sample(fg_buf_str(&body), "fracgpu_builtin_policies_created_total");
        writes = sample(fg_buf_str(&body), "fracgpu_policy_status_writes_total");
        if (created < 4 || writes < 4) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(created, 4);
    assert_int_equal(writes, 4);
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/readyz", &body), 200);
    assert_string_equal(fg_buf_str(&body), "ok\n");
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/readyz?verbose", &body), 200);
    assert_string_equal(fg_buf_str(&body), "[+]informers ok\nreadyz check passed\n");
    /* Settled: a second later nothing was rewritten, nothing failed, nothing waits. */
    struct timespec second = { 1, 0 };
    nanosleep(&second, NULL);
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/metrics", &body), 200);
    m = fg_buf_str(&body);
    assert_int_equal(sample(m, "fracgpu_policy_status_writes_total"), 4);
    assert_int_equal(sample(m, "fracgpu_builtin_policies_created_total"), 4);
    assert_int_equal(sample(m, "fracgpu_reconcile_total{controller=\"gpupolicy\",result=\"error\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_workqueue_depth{controller=\"gpupolicy\"}"), 0);
    assert_int_equal(sample(m, "fracgpu_informer_cached_objects{resource=\"gpupolicies\"}"), 4);
    assert_int_equal(sample(m, "fracgpu_informer_synced{resource=\"gpuworkloads\"}"), 1);
    assert_true(sample(m, "fracgpu_reconcile_total{controller=\"gpupolicy\",result=\"success\"}") >= 8);
    expect_log(1, "GPUPolicy in all namespaces is served now", "");
    expect_log(1, "GPUPolicy in all namespaces: the API server does not serve", "");

    /* A clean stop releases the Lease: no holder, so a standby would take over at once. */
    fg_manager_free(op);
    json_object *lease = NULL;
    char *path = fg_kube_path(&fg_kube_leases, "fracgpu-system", "fracgpu-operator", NULL, NULL);
    assert_int_equal(fg_kube_get(h.client, path, &lease, NULL), FG_OK);
    assert_null(fg_json_get_str(lease, "spec", "holderIdentity", NULL));
    json_object_put(lease);
    free(path);

    fg_buf_cleanup(&body);
    assert_int_equal(fg_remove_tree(kdir), 0);
    fg_harness_stop(&h);
    fg_log_set_sink(NULL, NULL);
    fg_buf_cleanup(&log_lines);
}

int main(void)
{
    fg_log_set_level(FG_LOG_INFO);   /* into the test's sink, which checks what is said */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoints_before_and_after_crds),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
