/*
 * The collector's pure parts: a node agent's body read into per-pod use (containers summed per GPU,
 * other families and pod-less rows ignored, non-finite values counted, bounds), the uid clock (time
 * only forward per uid, a recreated pod starts afresh, forgetting), and which agent pods are targets.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/mem.h"
#include "base/json.h"
#include "base/prom.h"
#include "collector/targets.h"
#include "collector/uidclock.h"
#include "collector/scraped.h"

static void row(struct fg_buf *b, const char *family, const char *pod, const char *container, const char *uuid, double v)
{
    const char *l[] = { "node", "n1", "uuid", uuid, "namespace", pod ? "ml" : NULL, "pod", pod, "container", container, NULL };
    fg_prom_sample(b, family, l, v);
}

static void test_scraped_sums(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    fg_prom_family(&b, "fracgpu_gpu_utilization_ratio", FG_PROM_GAUGE, "device");
    fg_prom_sample(&b, "fracgpu_gpu_utilization_ratio", (const char *[]){ "uuid", "GPU-1", NULL }, 0.9);
    fg_prom_family(&b, "fracgpu_pod_gpu_utilization_ratio", FG_PROM_GAUGE, "pod");
    row(&b, "fracgpu_pod_gpu_utilization_ratio", "a", "c1", "GPU-1", 0.25);
    row(&b, "fracgpu_pod_gpu_utilization_ratio", "a", "c2", "GPU-1", 0.125);
    row(&b, "fracgpu_pod_gpu_utilization_ratio", "a", "c1", "GPU-2", 0.5);
    row(&b, "fracgpu_pod_gpu_utilization_ratio", NULL, NULL, "GPU-1", 0.3);   /* a process in no pod */
    row(&b, "fracgpu_pod_gpu_utilization_ratio", "b", "c", "GPU-1", NAN);
    fg_prom_family(&b, "fracgpu_pod_gpu_memory_used_bytes", FG_PROM_GAUGE, "pod");
    row(&b, "fracgpu_pod_gpu_memory_used_bytes", "a", "c1", "GPU-1", 1 << 30);
    row(&b, "fracgpu_pod_gpu_memory_used_bytes", "a", "c2", "GPU-1", 1 << 29);
    row(&b, "fracgpu_pod_gpu_memory_used_bytes", "c", "c", "GPU-3", 1 << 20);   /* memory, no compute */
    row(&b, "fracgpu_pod_gpu_memory_used_bytes", "c", "c", "", 1);              /* no uuid */
    fg_buf_put_str(&b, "fracgpu_pod_gpu_memory_used_bytes{pod=\"x\" 1\n");      /* malformed */
    struct fg_scraped u;
    char errmsg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_scraped_read(b.data, b.len, 1 << 20, &u, errmsg), FG_OK);
    assert_int_equal(u.parse.errors, 1);
    assert_int_equal(u.npods, 3);
    assert_int_equal(u.series, 8);
    assert_int_equal(u.nonfinite, 1);
    assert_int_equal(u.no_uuid, 1);
    const struct fg_scraped_pod *a = &u.pods[0];
    assert_string_equal(a->ns, "ml");
    assert_string_equal(a->name, "a");
    assert_int_equal(a->ngpus, 2);
    assert_string_equal(a->gpus[0].uuid, "GPU-1");
    assert_true(a->gpus[0].has_compute && a->gpus[0].has_memory);
    assert_true(a->gpus[0].compute_ratio == 0.375);
    assert_true(a->gpus[0].memory_bytes == (double)(3u << 29));
    assert_true(a->gpus[1].has_compute && !a->gpus[1].has_memory);
    assert_string_equal(u.pods[2].name, "c");
    assert_false(u.pods[2].gpus[0].has_compute);
    assert_true(u.pods[2].gpus[0].has_memory);
    fg_scraped_cleanup(&u);
    /* over the body cap */
    assert_int_equal(fg_scraped_read(b.data, b.len, 16, &u, errmsg), FG_E_TOO_BIG);
    fg_scraped_cleanup(&u);
    fg_buf_cleanup(&b);
}

static void test_scraped_bounds(void **state)
{
    (void)state;
    struct fg_buf b = FG_BUF_INIT;
    char pod[32], uuid[32];
    for (unsigned i = 0; i < FG_SCRAPED_MAX_PODS + 5; i++) {
        snprintf(pod, sizeof(pod), "p%u", i);
        row(&b, "fracgpu_pod_gpu_utilization_ratio", pod, "c", "GPU-1", 0.1);
    }
    for (unsigned i = 0; i < FG_SCRAPED_MAX_GPUS + 3; i++) {
        snprintf(uuid, sizeof(uuid), "GPU-%u", i + 10);
        row(&b, "fracgpu_pod_gpu_utilization_ratio", "p0", "c", uuid, 0.1);
    }
    struct fg_scraped u;
    assert_int_equal(fg_scraped_read(b.data, b.len, 16 << 20, &u, NULL), FG_OK);
    assert_int_equal(u.npods, FG_SCRAPED_MAX_PODS);
    assert_int_equal(u.pods[0].ngpus, FG_SCRAPED_MAX_GPUS);
    assert_int_equal(u.dropped, 5 + 4);
    fg_scraped_cleanup(&u);
    fg_buf_cleanup(&b);
}

static void test_uid_clock(void **state)
{
    (void)state;
    struct fg_uid_clock *c = fg_uid_clock_new();
    assert_true(fg_uid_clock_accept(c, "u1", 1000, 1));
    assert_false(fg_uid_clock_accept(c, "u1", 1000, 1));   /* not after */
    assert_false(fg_uid_clock_accept(c, "u1", 999, 2));    /* backwards */
    assert_true(fg_uid_clock_accept(c, "u2", 500, 2));     /* the pod recreated: a history of its own */
    assert_true(fg_uid_clock_accept(c, "u1", 1001, 2));
    assert_int_equal(fg_uid_clock_len(c), 2);
    assert_true(fg_uid_clock_accept(c, "u2", 600, 5));
    fg_uid_clock_forget(c, 3);                              /* u1 last seen in round 2 */
    assert_int_equal(fg_uid_clock_len(c), 1);
    assert_true(fg_uid_clock_accept(c, "u1", 1, 6));       /* forgotten: starts afresh */
    fg_uid_clock_free(c);
}

static void test_target_of_pod(void **state)
{
    (void)state;
    struct fg_target t;
    json_object *p = json_tokener_parse(
        "{\"metadata\":{\"namespace\":\"fracgpu-system\",\"name\":\"agent-x\"},\"spec\":{\"nodeName\":\"n1\","
        "\"containers\":[{\"name\":\"a\",\"ports\":[{\"name\":\"grpc\",\"containerPort\":1},"
        "{\"name\":\"metrics\",\"containerPort\":9500}]}]},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.7\"}}");
    assert_true(fg_target_of_pod(p, 9402, &t));
    assert_string_equal(t.url, "http://10.0.0.7:9500/metrics");
    assert_string_equal(t.node, "n1");
    assert_string_equal(t.key, "fracgpu-system/agent-x");
    json_object_object_del(fg_json_get(p, "spec", NULL), "containers");
    json_object_object_add(fg_json_get(p, "status", NULL), "podIP", json_object_new_string("fd00::7"));
    assert_true(fg_target_of_pod(p, 9402, &t));
    assert_string_equal(t.url, "http://[fd00::7]:9402/metrics");
    json_object_object_add(fg_json_get(p, "status", NULL), "podIP", json_object_new_string("1.2.3.4/x?"));
    assert_false(fg_target_of_pod(p, 9402, &t));
    json_object_object_add(fg_json_get(p, "status", NULL), "podIP", json_object_new_string("10.0.0.7"));
    json_object_object_add(fg_json_get(p, "status", NULL), "phase", json_object_new_string("Pending"));
    assert_false(fg_target_of_pod(p, 9402, &t));
    json_object_object_add(fg_json_get(p, "status", NULL), "phase", json_object_new_string("Running"));
    json_object_object_add(fg_json_get(p, "metadata", NULL), "deletionTimestamp", json_object_new_string("2024-01-01T00:00:00Z"));
    assert_false(fg_target_of_pod(p, 9402, &t));
    json_object_put(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scraped_sums),
        cmocka_unit_test(test_scraped_bounds),
        cmocka_unit_test(test_uid_clock),
        cmocka_unit_test(test_target_of_pod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
