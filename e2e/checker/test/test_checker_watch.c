/*
 * The checker against the in-process test API server (e2e/tests/harness.h): pods written through the
 * API reach its judgment through its own watch, and the watch's troubles do not fool it. A tenant
 * deleted while the watch is down and the history compacted (a relist must turn it into a delete, or
 * the next tenant would look like an overcommit); a relist refused with 429 first; then the capacity
 * pod deleted by hand, its tenants still Running, which the grace timer must catch with no further
 * event. Stopping keeps the figures for the test to print.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "e2e/checker/checker.h"
#include "e2e/tests/harness.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define CAP_NS "fracgpu-system"
#define NODE "node-1"
#define GPU "GPU-33333333-cccc"
#define WAIT_MS 15000

static struct fg_harness h;

static int setup(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK) {
        fprintf(stderr, "harness: %s\n", msg);
        return -1;
    }
    return fg_harness_namespace(&h, CAP_NS) == FG_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    return 0;
}

static void fault(const char *control)
{
    assert_int_equal(fg_harness_fault(&h, control), FG_OK);
}

/* Creates pod ns/name on NODE with the labels and annotations of `meta` (JSON members) and sets its
 * phase to Running. */
static void run_pod(const char *ns, const char *name, const char *meta)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",%s},"
             "\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"main\",\"image\":\"example/app:1\"}]}}",
             name, ns, meta);
    json_object *pod = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &pod, NULL), FG_OK);
    char *path = fg_kube_path(&fg_kube_pods, ns, NULL, NULL, NULL);
    assert_int_equal(fg_kube_create(h.client, path, pod, NULL, NULL), FG_OK);
    free(path);
    json_object_put(pod);
    path = fg_kube_path(&fg_kube_pods, ns, name, "status", NULL);
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE, "{\"status\":{\"phase\":\"Running\"}}", NULL, NULL),
                     FG_OK);
    free(path);
}

static void tenant(const char *name, const char *milli)
{
    char meta[512];
    snprintf(meta, sizeof meta,
             "\"annotations\":{\"" FG_ANN_CAPACITY_POD "\":\"cap-0\",\"" FG_ANN_GPU_UUID "\":\"" GPU "\",\""
             FG_ANN_COMPUTE_MILLI "\":\"%s\",\"" FG_ANN_MEMORY_MIB "\":\"1000\"}", milli);
    run_pod("default", name, meta);
}

static void delete_pod(const char *ns, const char *name)
{
    char *path = fg_kube_path(&fg_kube_pods, ns, name, NULL, NULL);
    json_object *opts = json_object_new_object();
    json_object_object_add(opts, "gracePeriodSeconds", json_object_new_int(0));
    assert_int_equal(fg_kube_delete(h.client, path, opts, NULL, NULL), FG_OK);
    json_object_put(opts);
    free(path);
}

struct until {
    struct fg_checker *c;
    int64_t max_compute;
    uint64_t violations;
};

static bool reached(void *ud)
{
    struct until *u = ud;
    struct fg_checker_stats s;
    fg_checker_stats(u->c, &s);
    return s.max_compute_milli >= u->max_compute && s.violations >= u->violations;
}

static void wait_for(struct fg_checker *c, int64_t max_compute, uint64_t violations)
{
    struct until u = { c, max_compute, violations };
    if (!fg_harness_wait(reached, &u, WAIT_MS)) {
        char *sum = fg_checker_summary(c);
        fail_msg("waited for max %lld milli and %llu violations: %s", (long long)max_compute,
                 (unsigned long long)violations, sum);
    }
}

static void checker_survives_relists_and_catches_orphans(void **state)
{
    (void)state;
    struct fg_checker_opts o = FG_CHECKER_OPTS_DEFAULT;
    o.grace_ms = 300;
    o.tick_ms = 20;
    struct fg_checker *c = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_checker_start(h.kubeconfig, &o, &c, msg) != FG_OK)
        fail_msg("checker: %s", msg);
    assert_true(fg_checker_wait_synced(c, WAIT_MS));

    run_pod(CAP_NS, "cap-0", "\"labels\":{\"" FG_LABEL_ROLE "\":\"" FG_ROLE_CAPACITY "\"},\"annotations\":{\""
            FG_ANN_GPU_UUID "\":\"" GPU "\",\"" FG_ANN_GPU_MEMORY_MIB "\":\"40000\"}");
    tenant("t1", "300");
    tenant("t2", "300");
    tenant("t3", "300");
    wait_for(c, 900, 0);

    /* t3 goes while the watch is down and its history with it: only the relist can tell. */
    fault("fail?count=1&code=500&method=GET&path=/api/v1/pods");
    fault("drop-watches");
    delete_pod("default", "t3");
    fault("compact");
    tenant("t4", "400");
    wait_for(c, 1000, 0);

    /* A watch expired, its relist throttled once; then the capacity pod deleted by hand. */
    fault("fail?count=1&code=429&retryAfter=1&method=GET&path=/api/v1/pods");
    fault("expire-watches");
    delete_pod(CAP_NS, "cap-0");
    wait_for(c, 1000, 3);   /* t1, t2 and t4 */

    fg_checker_stop(c);
    struct fg_checker_stats s;
    fg_checker_stats(c, &s);
    char *sum = fg_checker_summary(c);
    fprintf(stderr, "%s\n", sum);
    free(sum);
    assert_int_equal(s.max_compute_milli, 1000);
    assert_int_equal(s.gpus, 1);
    assert_int_equal(s.violations, 3);
    char *first = fg_checker_message(c, 0);
    assert_non_null(first);
    assert_non_null(strstr(first, CAP_NS "/cap-0"));
    assert_non_null(strstr(first, "does not exist"));
    free(first);
    fg_checker_free(c);
}

int main(void)
{
    fg_log_set_level(FG_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checker_survives_relists_and_catches_orphans),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
