/* What the scheduler reads of a pod (podinfo.h): tenants, capacity pods, wants, signatures, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/json.h"
#include "scheduler/adapter/podinfo.h"

#define ANN_OK "\"fracgpu.io/compute-milli\":\"300\",\"fracgpu.io/memory-mib\":\"10240\""

static json_object *pod(const char *annotations, const char *spec_extra)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"team\",\"uid\":\"u1\","
             "\"creationTimestamp\":\"2026-11-26T10:00:00Z\",\"annotations\":{%s}},"
             "\"spec\":{\"schedulerName\":\"fracgpu-scheduler\",\"priority\":7%s,"
             "\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"1Gi\"},"
             "\"limits\":{\"fracgpu.io/gpu-share\":\"1\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
             annotations, spec_extra);
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    return o;
}

static void test_tenant(void **state)
{
    (void)state;
    json_object *p = pod(ANN_OK ",\"fracgpu.io/sharing\":\"timeslice\",\"fracgpu.io/pod-group\":\"g\","
                         "\"fracgpu.io/pod-group-size\":\"4\"", "");
    struct fg_sa_podinfo pi;
    fg_sa_podinfo_read(p, "fracgpu-system", &pi);
    assert_int_equal(pi.role, FG_SA_FRACGPU);
    assert_null(pi.node);
    assert_int_equal(pi.cpu_milli, 250);
    assert_int_equal(pi.mem_mib, 1024);
    assert_true(pi.has_gpu);
    assert_int_equal(pi.milli, 300);
    assert_int_equal(pi.gpu_mem_mib, 10240);
    assert_int_equal(pi.priority, 7);
    assert_string_equal(pi.group, "g");
    assert_int_equal(pi.group_min, 4);
    assert_string_equal(pi.problem, "");
    struct fg_sa_want w;
    char why[FG_ERRMSG_MAX];
    assert_int_equal(fg_sa_want_build(p, &pi, 80000, &w, why), FG_OK);
    assert_int_equal(w.pod.gpu_milli, 300);
    assert_int_equal(w.pod.n_gpus, 1);
    assert_int_equal(strlen(w.sig), FG_SA_SIG_LEN);
    fg_sa_want_cleanup(&w);
    json_object_put(p);
}

static void test_whole_memory_and_dedicated(void **state)
{
    (void)state;
    json_object *p = pod("\"fracgpu.io/compute-milli\":\"500\",\"fracgpu.io/memory-mib\":\"whole\","
                         "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/isolation\":\"dedicated\","
                         "\"fracgpu.io/workload\":\"deployment-rt\"", "");
    struct fg_sa_podinfo pi;
    fg_sa_podinfo_read(p, "fracgpu-system", &pi);
    assert_int_equal(pi.gpu_mem_mib, 0);
    struct fg_sa_want w;
    char why[FG_ERRMSG_MAX];
    assert_int_equal(fg_sa_want_build(p, &pi, 80000, &w, why), FG_OK);
    assert_int_equal(w.pod.gpu_mem_mib, 80000);   /* "whole": what the caller says a whole GPU has */
    assert_int_equal(w.pod.sharing, FG_SCHED_SHARE_MPS);
    assert_int_equal(w.pod.isolation, FG_SCHED_ISO_DEDICATED);
    assert_string_equal(w.pod.owner, "deployment-rt");
    fg_sa_want_cleanup(&w);
    json_object_put(p);
}

/* Pods of one kind of new GPU share a signature; another node selector or sharing mode does not. */
static void test_signature(void **state)
{
    (void)state;
    const char *sel = ",\"nodeSelector\":{\"pool\":\"a\"}";
    json_object *a = pod(ANN_OK, sel), *b = pod(ANN_OK, sel), *c = pod(ANN_OK, ",\"nodeSelector\":{\"pool\":\"b\"}");
    json_object *d = pod(ANN_OK ",\"fracgpu.io/sharing\":\"mps\"", sel);
    json_object *all[] = { a, b, c, d };
    struct fg_sa_want w[4];
    char why[FG_ERRMSG_MAX];
    for (int i = 0; i < 4; i++) {
        struct fg_sa_podinfo pi;
        fg_sa_podinfo_read(all[i], "fracgpu-system", &pi);
        assert_int_equal(fg_sa_want_build(all[i], &pi, 1, &w[i], why), FG_OK);
    }
    assert_string_equal(w[0].sig, w[1].sig);
    assert_string_not_equal(w[0].sig, w[2].sig);
    assert_string_not_equal(w[0].sig, w[3].sig);
    assert_int_equal(w[0].pod.n_node_selector, 1);
    for (int i = 0; i < 4; i++) {
        fg_sa_want_cleanup(&w[i]);
        json_object_put(all[i]);
    }
}

/* Bad input: a clear reason, never a placement made up. */
/* Movable (consolidation may move it): updateMode Auto, a controller, no pod group, not exclusive; its
 * signature is the one its want has. */
static void test_movable(void **state)
{
    (void)state;
    static const char *const owned = "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\","
                                     "\"uid\":\"r1\",\"controller\":true}]";
    struct {
        const char *annotations;
        bool owned, movable;
    } cases[] = {
        { ANN_OK ",\"fracgpu.io/update-mode\":\"Auto\"", true, true },
        { ANN_OK ",\"fracgpu.io/update-mode\":\"Auto\"", false, false },   /* a bare pod: nobody makes it again */
        { ANN_OK ",\"fracgpu.io/update-mode\":\"Initial\"", true, false },
        { ANN_OK, true, false },
        { ANN_OK ",\"fracgpu.io/update-mode\":\"Auto\",\"fracgpu.io/pod-group\":\"g\"", true, false },
        { ANN_OK ",\"fracgpu.io/update-mode\":\"Auto\",\"fracgpu.io/sharing\":\"exclusive\"", true, false },
        { "\"fracgpu.io/compute-milli\":\"lots\",\"fracgpu.io/update-mode\":\"Auto\"", true, false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_object *p = pod(cases[i].annotations, ",\"nodeSelector\":{\"pool\":\"a100\"}");
        if (cases[i].owned)
            json_object_object_add(fg_json_get(p, "metadata", NULL), "ownerReferences", json_tokener_parse(owned));
        struct fg_sa_podinfo pi;
        fg_sa_podinfo_read(p, "fracgpu-system", &pi);
        assert_int_equal(pi.movable, cases[i].movable);
        if (pi.movable) {
            struct fg_sa_want w;
            char why[FG_ERRMSG_MAX];
            assert_int_equal(fg_sa_want_build(p, &pi, 80000, &w, why), FG_OK);
            assert_string_equal(pi.signature, w.sig);
            fg_sa_want_cleanup(&w);
        } else {
            assert_string_equal(pi.signature, "");
        }
        json_object_put(p);
    }
}

static void test_bad_input(void **state)
{
    (void)state;
    static const struct {
        const char *ann, *spec, *says;
    } cases[] = {
        { "\"fracgpu.io/compute-milli\":\"abc\",\"fracgpu.io/memory-mib\":\"10\"", "", "compute-milli" },
        { "\"fracgpu.io/compute-milli\":\"1001\",\"fracgpu.io/memory-mib\":\"10\"", "", "compute-milli" },
        { "\"fracgpu.io/memory-mib\":\"10\"", "", "compute-milli" },
        { ANN_OK,
          ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
          "[{\"matchExpressions\":[{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"4\"]}]}]}}}",
          "Gt" },
        { ANN_OK,
          ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
          "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n\"]}]}]}}}",
          "matchFields" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_object *p = pod(cases[i].ann, cases[i].spec);
        struct fg_sa_podinfo pi;
        fg_sa_podinfo_read(p, "fracgpu-system", &pi);
        struct fg_sa_want w;
        char why[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_sa_want_build(p, &pi, 1, &w, why), FG_E_INVAL);
        if (!strstr(why, cases[i].says))
            fail_msg("case %zu: \"%s\" does not name %s", i, why, cases[i].says);
        fg_sa_want_cleanup(&w);
        json_object_put(p);
    }
}

static void test_capacity_pod(void **state)
{
    (void)state;
    const char *text =
        "{\"metadata\":{\"name\":\"fracgpu-capacity-x-0\",\"namespace\":\"fracgpu-system\",\"uid\":\"c1\","
        "\"labels\":{\"fracgpu.io/role\":\"capacity\"},\"annotations\":{\"fracgpu.io/gpu-uuid\":\"GPU-1\","
        "\"fracgpu.io/gpu-memory-mib\":\"80908\",\"fracgpu.io/constraints\":\"abcd\"}},"
        "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"holder\",\"resources\":{\"requests\":"
        "{\"cpu\":\"2010m\",\"memory\":\"544Mi\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
        "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"holder\",\"resources\":{\"requests\":"
        "{\"cpu\":\"2010m\",\"memory\":\"544Mi\"}}}]}}";
    json_object *p = json_tokener_parse(text);
    struct fg_sa_podinfo pi;
    fg_sa_podinfo_read(p, "fracgpu-system", &pi);
    assert_int_equal(pi.role, FG_SA_CAPACITY);
    assert_true(pi.cap_live);
    assert_true(pi.resized);
    assert_int_equal(pi.cap_gpu_mem_mib, 80908);
    assert_int_equal(pi.reserved_cpu, 2000);
    assert_int_equal(pi.reserved_mem_mib, 512);
    assert_string_equal(pi.sig, "abcd");
    /* in another namespace the same pod is nobody's capacity */
    fg_sa_podinfo_read(p, "elsewhere", &pi);
    assert_int_equal(pi.role, FG_SA_OTHER);
    /* a resize the kubelet has not applied yet, and a pod being deleted */
    json_object_object_add(fg_json_get(json_object_array_get_idx(fg_json_get(p, "spec", "containers", NULL), 0),
                                       "resources", "requests", NULL),
                           "cpu", json_object_new_string("10m"));
    json_object_object_add(fg_json_get(p, "metadata", NULL), "deletionTimestamp",
                           json_object_new_string("2026-11-26T10:00:00Z"));
    fg_sa_podinfo_read(p, "fracgpu-system", &pi);
    assert_false(pi.resized);
    assert_false(pi.cap_live);
    json_object_put(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tenant),    cmocka_unit_test(test_whole_memory_and_dedicated),
        cmocka_unit_test(test_signature), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_capacity_pod), cmocka_unit_test(test_movable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
