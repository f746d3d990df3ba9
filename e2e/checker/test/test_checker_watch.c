/*
 * The checker against the in-process test API server (e2e/tests/harness.h): pods written through the
 * API reach its judgment through its own watch, and the watch's troubles do not fool it. A tenant
 * deleted while the watch is down and the history compacted (a relist must turn it into a delete, or
 * the next tenant would look like an overcommit); a relist refused with 429 first; then the capacity
 * pod deleted by hand, its tenants still Running, which the grace timer must catch with no further
 * event. Stopping keeps the figures for the test to print.
 *
 * fracgpu-checker, the same checker as a process, first: its report on SIGUSR1 as the tenants come,
 * the overcommit it must name, its exit status, and its answers to bad arguments.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
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

struct report_wait {
    const char *path;
    pid_t pid;
    int64_t compute;            /* the GPU's compute the report must show */
    json_object *report;        /* out: the report that showed it */
};

/* Asks the process for a report and reads it; true once its GPU has the compute looked for. The
 * first report, written once the pods are listed, says that the process takes signals. */
static bool report_shows(void *ud)
{
    struct report_wait *w = ud;
    if (access(w->path, F_OK) != 0)
        return false;
    kill(w->pid, SIGUSR1);
    json_object_put(w->report);
    w->report = json_object_from_file(w->path);    /* NULL until the first report is written */
    json_object *gpus = fg_json_get(w->report, "gpus", NULL);
    if (fg_json_array_len(gpus) == 0)
        return false;
    json_object *gpu = json_object_array_get_idx(gpus, 0);
    int64_t milli = -1;
    fg_json_get_int64(gpu, &milli, "computeMilli", NULL);
    return milli == w->compute && fg_str_eq(fg_json_get_str(gpu, "uuid", NULL), GPU);
}

static void checker_process_reports_and_exits_with_its_judgment(void **state)
{
    (void)state;
    char bin[512], report[512], cmd[1400];
    snprintf(bin, sizeof bin, "%s/fracgpu-checker", getenv("FG_BIN_DIR"));
    snprintf(report, sizeof report, "%s/checker-report.json", h.dir);
    struct fg_buf out;
    fg_buf_init(&out, 0);
    static const struct { const char *args, *says; int status; } bad[] = {
        { "--report /tmp/r", "--kubeconfig is required", 2 },
        { "--kubeconfig /tmp/k", "--report is required", 2 },
        { "--kubeconfig", "--kubeconfig needs a value", 2 },
        { "--verbose", "unknown argument --verbose", 2 },
        { "--kubeconfig /nonexistent/kubeconfig --report /tmp/r", "cannot watch the cluster of /nonexistent/kubeconfig", 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin, bad[i].args);
        assert_int_equal(fg_buf_run_command(&out, cmd), bad[i].status);
        if (!strstr(fg_buf_str(&out), bad[i].says))
            fail_msg("%s: expected \"%s\" in: %s", bad[i].args, bad[i].says, fg_buf_str(&out));
    }
    fg_buf_cleanup(&out);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(bin, bin, "--kubeconfig", h.kubeconfig, "--report", report, (char *)NULL);
        _exit(127);
    }
    run_pod(CAP_NS, "cap-0", "\"labels\":{\"" FG_LABEL_ROLE "\":\"" FG_ROLE_CAPACITY "\"},\"annotations\":{\""
            FG_ANN_GPU_UUID "\":\"" GPU "\",\"" FG_ANN_GPU_MEMORY_MIB "\":\"40000\"}");
    tenant("t1", "600");
    struct report_wait w = { report, pid, 600, NULL };
    assert_true(fg_harness_wait(report_shows, &w, WAIT_MS));
    int64_t n = -1;
    assert_true(fg_json_get_int64(w.report, &n, "violations", NULL) && n == 0);
    tenant("t2", "500");    /* 1100 milli on one GPU */
    w.compute = 1100;
    assert_true(fg_harness_wait(report_shows, &w, WAIT_MS));
    assert_true(fg_json_get_int64(w.report, &n, "violations", NULL) && n >= 1);
    json_object *gpu = json_object_array_get_idx(fg_json_get(w.report, "gpus", NULL), 0);
    assert_true(fg_json_get_int64(gpu, &n, "tenants", NULL) && n == 2);
    assert_string_equal(fg_json_get_str(gpu, "node", NULL), NODE);
    const char *first = fg_json_get_str(json_object_array_get_idx(fg_json_get(w.report, "messages", NULL), 0), NULL);
    if (!first || !strstr(first, "1100"))
        fail_msg("the first violation should name 1100 milli: %s", first ? first : "(none)");
    json_object_put(w.report);

    kill(pid, SIGTERM);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);     /* it found a violation */
    json_object *last = json_object_from_file(report);
    assert_true(fg_json_get_int64(last, &n, "violations", NULL) && n >= 1);
    json_object_put(last);
    delete_pod("default", "t1");
    delete_pod("default", "t2");
    delete_pod(CAP_NS, "cap-0");
}

int main(void)
{
    fg_log_set_level(FG_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checker_process_reports_and_exits_with_its_judgment),
        cmocka_unit_test(checker_survives_relists_and_catches_orphans),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
