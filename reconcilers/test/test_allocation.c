/* What a workload's pods get: the workload's own fraction, else the recommendation when the update
 * mode applies it, else the whole GPU; malformed fraction annotations ignored with a message; the pod
 * annotations read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

/* A workload object annotated with compute and memory (NULL: absent). */
static json_object *workload(const char *compute, const char *memory)
{
    json_object *w = json_object_new_object();
    json_object *ann = fg_json_ensure_obj(fg_json_ensure_obj(w, "metadata"), "annotations");
    if (compute)
        fg_json_set_str(ann, FG_ANN_GPU_COMPUTE, compute);
    if (memory)
        fg_json_set_str(ann, FG_ANN_GPU_MEMORY, memory);
    return w;
}

static struct fg_allocation resolve(const char *compute, const char *memory, const struct fg_recommendation *rec,
                                    enum fg_update_mode mode, enum fg_err want, const char *detail)
{
    json_object *w = workload(compute, memory);
    struct fg_allocation a;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_allocation_resolve(w, rec, mode, &a, msg), want);
    if (detail && !strstr(msg, detail))
        fail_msg("message \"%s\" lacks \"%s\"", msg, detail);
    json_object_put(w);
    return a;
}

static void before_history_the_whole_gpu(void **state)
{
    (void)state;
    struct fg_allocation a = resolve(NULL, NULL, NULL, FG_UPDATE_AUTO, FG_OK, NULL);
    assert_int_equal(a.compute_milli, 1000);
    assert_int_equal(a.memory_mib, 0);
    json_object *none = NULL;
    assert_int_equal(fg_allocation_resolve(none, NULL, FG_UPDATE_AUTO, &a, NULL), FG_OK);
    assert_int_equal(a.compute_milli, 1000);
}

static void manual_fractions_from_the_first_pod(void **state)
{
    (void)state;
    struct fg_allocation a = resolve("300", "20Gi", NULL, FG_UPDATE_OFF, FG_OK, NULL);
    assert_int_equal(a.compute_milli, 300);
    assert_int_equal(a.memory_mib, 20480);
    a = resolve("1000", "1.5G", NULL, FG_UPDATE_AUTO, FG_OK, NULL); /* 1.5e9 bytes: 1430.5 MiB, rounded up */
    assert_int_equal(a.compute_milli, 1000);
    assert_int_equal(a.memory_mib, 1431);
    a = resolve("1", "1Ti", NULL, FG_UPDATE_AUTO, FG_OK, NULL);
    assert_int_equal(a.compute_milli, 1);
    assert_int_equal(a.memory_mib, 1048576);
}

static void the_recommendation_fills_what_is_left(void **state)
{
    (void)state;
    struct fg_recommendation rec = { .has_compute = true, .has_memory = true, .compute_milli = 420, .memory_mib = 6000 };
    struct fg_allocation a = resolve(NULL, NULL, &rec, FG_UPDATE_INITIAL, FG_OK, NULL);
    assert_int_equal(a.compute_milli, 420);
    assert_int_equal(a.memory_mib, 6000);
    a = resolve(NULL, "8Gi", &rec, FG_UPDATE_AUTO, FG_OK, NULL);
    assert_int_equal(a.compute_milli, 420);
    assert_int_equal(a.memory_mib, 8192);
    a = resolve(NULL, NULL, &rec, FG_UPDATE_OFF, FG_OK, NULL); /* Off only recommends */
    assert_int_equal(a.compute_milli, 1000);
    assert_int_equal(a.memory_mib, 0);
    rec.has_memory = false;
    a = resolve(NULL, NULL, &rec, FG_UPDATE_AUTO, FG_OK, NULL);
    assert_int_equal(a.compute_milli, 420);
    assert_int_equal(a.memory_mib, 0);
}

static void malformed_fractions_are_ignored_with_a_message(void **state)
{
    (void)state;
    const char *computes[] = { "0", "1001", "30%", "0.3", "300m", "-5", " 300", "3e2", "", "99999999999999999999" };
    for (size_t i = 0; i < sizeof(computes) / sizeof(*computes); i++) {
        struct fg_allocation a = resolve(computes[i], "4Gi", NULL, FG_UPDATE_AUTO, FG_E_INVAL, FG_ANN_GPU_COMPUTE);
        assert_int_equal(a.compute_milli, 1000); /* the whole GPU, never a guess */
        assert_int_equal(a.memory_mib, 4096);    /* the other dimension still applies */
    }
    const char *memories[] = { "0", "-1Gi", "2Ti", "lots", "20 Gi", "" };
    for (size_t i = 0; i < sizeof(memories) / sizeof(*memories); i++) {
        struct fg_allocation a = resolve("250", memories[i], NULL, FG_UPDATE_AUTO, FG_E_INVAL, FG_ANN_GPU_MEMORY);
        assert_int_equal(a.compute_milli, 250);
        assert_int_equal(a.memory_mib, 0);
    }
    /* a value that is not a string (a hand-written object) */
    json_object *w = workload(NULL, NULL);
    json_object_object_add(fg_json_get(w, "metadata", "annotations", NULL), FG_ANN_GPU_COMPUTE, json_object_new_int(300));
    struct fg_allocation a;
    assert_int_equal(fg_allocation_resolve(w, NULL, FG_UPDATE_AUTO, &a, NULL), FG_E_INVAL);
    assert_int_equal(a.compute_milli, 1000);
    json_object_put(w);
}

static json_object *pod_with(const char *compute, const char *memory)
{
    json_object *p = json_object_new_object();
    json_object *ann = fg_json_ensure_obj(fg_json_ensure_obj(p, "metadata"), "annotations");
    if (compute)
        fg_json_set_str(ann, FG_ANN_COMPUTE_MILLI, compute);
    if (memory)
        fg_json_set_str(ann, FG_ANN_MEMORY_MIB, memory);
    return p;
}

static void pod_annotations_round_trip(void **state)
{
    (void)state;
    struct fg_allocation in[] = { { 1000, 0 }, { 1, 1 }, { 375, 12288 } }, out;
    for (size_t i = 0; i < 3; i++) {
        char c[24], m[24];
        fg_allocation_format(&in[i], c, m);
        json_object *p = pod_with(c, m);
        assert_int_equal(fg_allocation_from_pod(p, &out, NULL), FG_OK);
        assert_int_equal(out.compute_milli, in[i].compute_milli);
        assert_int_equal(out.memory_mib, in[i].memory_mib);
        json_object_put(p);
    }
    const char *bad[][2] = { { NULL, "whole" }, { "300", NULL }, { "0", "whole" }, { "300", "0" }, { "300", "all" },
                             { "300", "20Gi" } };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        json_object *p = pod_with(bad[i][0], bad[i][1]);
        out = (struct fg_allocation){ 7, 7 };
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_allocation_from_pod(p, &out, msg), FG_E_PARSE);
        assert_non_null(strstr(msg, i == 0 || i == 2 ? FG_ANN_COMPUTE_MILLI : FG_ANN_MEMORY_MIB));
        assert_int_equal(out.compute_milli, 7);
        json_object_put(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(before_history_the_whole_gpu),
        cmocka_unit_test(manual_fractions_from_the_first_pod),
        cmocka_unit_test(the_recommendation_fills_what_is_left),
        cmocka_unit_test(malformed_fractions_are_ignored_with_a_message),
        cmocka_unit_test(pod_annotations_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
