/* The pod mutation over a catalogue of pod specs: each plan is applied with the test API server's
 * RFC 6902 implementation, the admitted pod is checked member by member, and a second pass over it must
 * change nothing (reinvocation). Pods left whole carry the named reason; a pass over a mutated pod that
 * has since become ineligible gives it back exactly as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "e2e/apiserver/patch.h"
#include "reconcilers/mutation.h"
#include "reconcilers/podcontract.h"

static const struct fg_mutation_target whole_gpu = {
    .workload = "deployment-llm",
    .policy = "real-time",
    .sharing = FG_SHARING_TIMESLICE,
    .isolation = FG_ISOLATION_SHARED,
    .allocation = { .compute_milli = 1000, .memory_mib = 0 },
};

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_json_parse(text, strlen(text), 0, &o, msg) != FG_OK)
        fail_msg("test JSON: %s: %s", msg, text);
    return o;
}

/* A pod in namespace ml with the given spec (a JSON object's members) and metadata extras. */
static json_object *pod(const char *meta_extra, const char *spec)
{
    char text[4096];
    snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"%s%s},\"spec\":{%s}}",
             meta_extra[0] ? "," : "", meta_extra, spec);
    return parse(text);
}

static json_object *apply(json_object *p, json_object *ops)
{
    json_object *out = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg__patch_json(p, ops, &out, msg) != FG_OK)
        fail_msg("patch %s does not apply: %s", json_object_to_json_string(ops), msg);
    return out;
}

/* Plans for p (consumed) and returns the admitted pod, after checking that a second pass over it is a
 * no-op that judges it the same. *judged gets the first judgement. */
static json_object *admit_with(json_object *p, const struct fg_mutation_target *t, const struct fg_storage_view *sv,
                               struct fg_eligibility *judged)
{
    struct fg_mutation m;
    fg_mutation_plan(p, t, sv, &m);
    *judged = m.judged;
    json_object *admitted = m.patch ? apply(p, m.patch) : json_object_get(p);
    fg_mutation_cleanup(&m);
    json_object_put(p);
    fg_mutation_plan(admitted, t, sv, &m);
    if (m.patch)
        fail_msg("second pass patches again: %s", json_object_to_json_string(m.patch));
    assert_int_equal(m.judged.ask, judged->ask);
    assert_int_equal(m.judged.index, judged->index);
    fg_mutation_cleanup(&m);
    return admitted;
}

static json_object *admit(json_object *p, struct fg_eligibility *judged)
{
    return admit_with(p, &whole_gpu, NULL, judged);
}

static const char *ann(json_object *p, const char *key)
{
    return fg_json_get_str(p, "metadata", "annotations", key, NULL);
}

static json_object *container(json_object *p, size_t i)
{
    return json_object_array_get_idx(fg_json_get(p, "spec", "containers", NULL), i);
}

static json_object *res(json_object *p, size_t i, const char *map, const char *name)
{
    return fg_json_get(container(p, i), "resources", map, name, NULL);
}

/* Container i of p was mutated: gpu-share "1" where nvidia.com/gpu was, in `maps` ("rl", "r", "l"). */
static void assert_mutated(json_object *p, size_t i, const char *maps)
{
    const char *names[] = { "requests", "limits" };
    for (size_t k = 0; k < 2; k++) {
        assert_null(res(p, i, names[k], FG_RES_NVIDIA_GPU));
        json_object *share = res(p, i, names[k], FG_RES_GPU_SHARE);
        if (strchr(maps, names[k][0])) {
            assert_non_null(share);
            assert_string_equal(json_object_get_string(share), "1");
        } else {
            assert_null(share);
        }
    }
    assert_string_equal(fg_json_get_str(p, "spec", "schedulerName", NULL), FG_SCHEDULER_NAME);
    assert_string_equal(fg_json_get_str(p, "metadata", "labels", FG_LABEL_MANAGED, NULL), "true");
    assert_string_equal(ann(p, FG_ANN_WORKLOAD), "deployment-llm");
    assert_string_equal(ann(p, FG_ANN_POLICY), "real-time");
    assert_string_equal(ann(p, FG_ANN_SHARING), "timeslice");
    assert_string_equal(ann(p, FG_ANN_ISOLATION), "shared");
    assert_string_equal(ann(p, FG_ANN_UPDATE_MODE), "Off");
}

#define GPU1 "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}"

static void one_container_requests_and_limits(void **state)
{
    (void)state;
    struct fg_eligibility j;
    json_object *p = admit(pod("", "\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":\"app\"," GPU1
                                   ",\"env\":[{\"name\":\"CUDA_VISIBLE_DEVICES\",\"value\":\"0\"}]}]"),
                           &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    assert_mutated(p, 0, "rl");
    assert_string_equal(ann(p, FG_ANN_COMPUTE_MILLI), "1000");
    assert_string_equal(ann(p, FG_ANN_MEMORY_MIB), "whole");
    assert_string_equal(ann(p, FG_ANN_ORIGINAL_REQUEST), "{\"container\":\"app\",\"requests\":\"1\",\"limits\":\"1\","
                                                         "\"schedulerName\":\"default-scheduler\"}");
    /* the container's env is its own business */
    assert_string_equal(json_object_to_json_string_ext(fg_json_get(container(p, 0), "env", NULL), JSON_C_TO_STRING_PLAIN),
                        "[{\"name\":\"CUDA_VISIBLE_DEVICES\",\"value\":\"0\"}]");
    json_object_put(p);
}

static void limits_only_as_a_number(void **state)
{
    (void)state;
    struct fg_eligibility j;
    json_object *p = admit(pod("", "\"containers\":[{\"name\":\"app\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1,"
                                   "\"cpu\":\"2\"}}}]"),
                           &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    assert_mutated(p, 0, "l");
    assert_string_equal(json_object_get_string(res(p, 0, "limits", "cpu")), "2");
    /* the number stays a number in the record; no schedulerName was set, so none is recorded */
    assert_string_equal(ann(p, FG_ANN_ORIGINAL_REQUEST), "{\"container\":\"app\",\"limits\":1}");
    json_object_put(p);
}

static void requests_only_in_milli_units(void **state)
{
    (void)state;
    struct fg_eligibility j;
    json_object *p = admit(pod("", "\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":"
                                   "\"1000m\"}}}]"),
                           &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    assert_mutated(p, 0, "r");
    json_object_put(p);
}

static void the_gpu_in_the_second_of_several_containers(void **state)
{
    (void)state;
    struct fg_eligibility j;
    json_object *p = admit(pod("", "\"containers\":[{\"name\":\"proxy\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}},"
                                   "{\"name\":\"model\"," GPU1 "},{\"name\":\"log\"}]"),
                           &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    assert_int_equal(j.index, 1);
    assert_mutated(p, 1, "rl");
    assert_string_equal(json_object_to_json_string_ext(container(p, 0), JSON_C_TO_STRING_PLAIN),
                        "{\"name\":\"proxy\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}");
    assert_string_equal(json_object_to_json_string_ext(container(p, 2), JSON_C_TO_STRING_PLAIN), "{\"name\":\"log\"}");
    assert_string_equal(ann(p, FG_ANN_ORIGINAL_REQUEST), "{\"container\":\"model\",\"requests\":\"1\",\"limits\":\"1\"}");
    json_object_put(p);
}

static void init_and_sidecar_containers(void **state)
{
    (void)state;
    struct fg_eligibility j;
    /* a sidecar (restartPolicy Always) and an init container without GPUs: eligible */
    json_object *p = admit(pod("", "\"initContainers\":[{\"name\":\"fetch\"},{\"name\":\"mesh\",\"restartPolicy\":"
                                   "\"Always\"}],\"containers\":[{\"name\":\"app\"," GPU1 "}]"),
                           &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    assert_mutated(p, 0, "rl");
    json_object_put(p);
    /* a GPU in a sidecar or an init container: whole, nothing changed */
    const char *specs[] = {
        "\"initContainers\":[{\"name\":\"mesh\",\"restartPolicy\":\"Always\"," GPU1 "}],\"containers\":[{\"name\":\"app\"}]",
        "\"initContainers\":[{\"name\":\"warm\"," GPU1 "}],\"containers\":[{\"name\":\"app\"," GPU1 "}]",
    };
    for (size_t i = 0; i < 2; i++) {
        json_object *orig = pod("", specs[i]);
        p = admit(json_object_get(orig), &j);
        assert_int_equal(j.ask, FG_GPU_WHOLE);
        assert_string_equal(j.reason, "gpuInInitContainer");
        assert_non_null(strstr(j.message, i == 0 ? "init container mesh" : "init container warm"));
        assert_true(json_object_equal(p, orig));
        json_object_put(p);
        json_object_put(orig);
    }
}

/* p is judged WHOLE for `reason`, with `detail` in the message, and admitted unchanged. */
static void expect_whole_sv(json_object *orig, const struct fg_storage_view *sv, const char *reason, const char *detail)
{
    struct fg_eligibility j;
    json_object *p = admit_with(json_object_get(orig), &whole_gpu, sv, &j);
    assert_int_equal(j.ask, FG_GPU_WHOLE);
    assert_string_equal(j.reason, reason);
    if (!strstr(j.message, detail))
        fail_msg("message \"%s\" lacks \"%s\"", j.message, detail);
    assert_true(json_object_equal(p, orig));
    json_object_put(p);
    json_object_put(orig);
}

static void expect_whole(json_object *orig, const char *reason, const char *detail)
{
    expect_whole_sv(orig, NULL, reason, detail);
}

static void gpu_asks_left_whole(void **state)
{
    (void)state;
    expect_whole(pod("", "\"containers\":[{\"name\":\"a\"," GPU1 "},{\"name\":\"b\"," GPU1 "}]"),
                 "gpuInSeveralContainers", "2 containers");
    expect_whole(pod("", "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]"),
                 "multipleGPUs", "container a asks for 2 nvidia.com/gpu");
    expect_whole(pod("", "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"500m\"}}}]"),
                 "badGPUQuantity", "500m");
    expect_whole(pod("", "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"one\"}}}]"),
                 "badGPUQuantity", "container a: nvidia.com/gpu");
    expect_whole(pod("", "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":true}}}]"),
                 "badGPUQuantity", "container a");
    expect_whole(pod("", "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"},"
                         "\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]"),
                 "gpuRequestMismatch", "requests (1) and limits (2) differ");
}

static void scheduling_features_left_whole(void **state)
{
    (void)state;
    const char *c = "\"containers\":[{\"name\":\"app\"," GPU1 "}]";
    char spec[1024];
#define WITH(extra) (snprintf(spec, sizeof(spec), "%s,%s", c, extra), spec)
    expect_whole(pod("", WITH("\"nodeName\":\"gpu-1\"")), "nodeName", "gpu-1");
    expect_whole(pod("", WITH("\"schedulerName\":\"volcano\"")), "schedulerName", "volcano");
    expect_whole(pod("", WITH("\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
                              "\"weight\":1,\"podAffinityTerm\":{\"topologyKey\":\"zone\"}}]}}")),
                 "podAffinity", "affinity");
    expect_whole(pod("", WITH("\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                              "[{\"topologyKey\":\"kubernetes.io/hostname\"}]}}")),
                 "podAntiAffinity", "anti-affinity");
    expect_whole(pod("", WITH("\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\"}]")),
                 "topologySpreadConstraints", "spread");
    expect_whole(pod("", WITH("\"initContainers\":[{\"name\":\"i\",\"ports\":[{\"containerPort\":80,\"hostPort\":8080}]}"
                              "]")),
                 "hostPort", "container i asks for host port 8080");
    expect_whole(pod("", WITH("\"resourceClaims\":[{\"name\":\"nic\"}]")), "resourceClaims", "DRA");
    expect_whole(pod("", "\"containers\":[{\"name\":\"app\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1},\"claims\":"
                         "[{\"name\":\"nic\"}]}}]"),
                 "resourceClaims", "container app");
    expect_whole(pod("", WITH("\"schedulingGates\":[{\"name\":\"quota\"}]")), "schedulingGates", "gates");
#undef WITH

    /* what the scheduler does implement, and empty lists and terms, change nothing */
    struct fg_eligibility j;
    json_object *p = admit(pod("", "\"containers\":[{\"name\":\"app\"," GPU1 ",\"ports\":[{\"containerPort\":80}]}],"
                                   "\"nodeSelector\":{\"gpu\":\"a100\"},\"tolerations\":[{\"key\":\"gpu\"}],"
                                   "\"affinity\":{\"nodeAffinity\":{},\"podAffinity\":{},\"podAntiAffinity\":{"
                                   "\"requiredDuringSchedulingIgnoredDuringExecution\":[]}},\"priority\":1000,"
                                   "\"topologySpreadConstraints\":[],\"schedulingGates\":[]"),
                           &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    json_object_put(p);
}

static bool claim_waits(void *ctx, const char *claim)
{
    (void)ctx;
    return !strcmp(claim, "local-scratch");
}

static bool class_waits(void *ctx, const char *cls)
{
    (void)ctx;
    return cls == NULL || !strcmp(cls, "local-nvme"); /* the default class waits */
}

static void volumes_that_wait_for_the_scheduler(void **state)
{
    (void)state;
    struct fg_storage_view sv = { claim_waits, class_waits, NULL };
    const char *c = "\"containers\":[{\"name\":\"app\"," GPU1 "}]";
    char spec[1024];
    snprintf(spec, sizeof(spec), "%s,\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":"
                                 "\"models\"}},{\"name\":\"tmp\",\"persistentVolumeClaim\":{\"claimName\":\"local-scratch\"}}]",
             c);
    expect_whole_sv(pod("", spec), &sv, "WaitForFirstConsumer", "volume tmp: claim local-scratch");
    snprintf(spec, sizeof(spec), "%s,\"volumes\":[{\"name\":\"eph\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{}}}}]",
             c);
    expect_whole_sv(pod("", spec), &sv, "WaitForFirstConsumer", "StorageClass (the default)");

    struct fg_eligibility j;
    snprintf(spec, sizeof(spec), "%s,\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"models\"}},"
                                 "{\"name\":\"eph\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{\"storageClassName\":"
                                 "\"ssd\"}}}},{\"name\":\"cfg\",\"configMap\":{\"name\":\"c\"}}]",
             c);
    json_object *p = admit_with(pod("", spec), &whole_gpu, &sv, &j);
    assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
    json_object_put(p);
}

static void labels_and_annotations_kept(void **state)
{
    (void)state;
    struct fg_eligibility j;
    json_object *p = admit(pod("\"labels\":{\"app\":\"llm\",\"fracgpu.io/automate\":\"true\"},\"annotations\":{"
                               "\"prometheus.io/scrape\":\"true\",\"fracgpu.io/policy\":\"stale\"}",
                               "\"containers\":[{\"name\":\"app\"," GPU1 "}]"),
                           &j);
    assert_mutated(p, 0, "rl");
    assert_string_equal(fg_json_get_str(p, "metadata", "labels", "app", NULL), "llm");
    assert_string_equal(fg_json_get_str(p, "metadata", "labels", FG_KEY_AUTOMATE, NULL), "true");
    assert_string_equal(ann(p, "prometheus.io/scrape"), "true");
    json_object_put(p);
}

static void no_gpu_no_patch(void **state)
{
    (void)state;
    const char *specs[] = {
        "\"containers\":[{\"name\":\"web\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]",
        "\"containers\":[{\"name\":\"web\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"0\"}}}]",
        "\"containers\":[]",
        "",
        /* a pod that asks for gpu-share itself is not fracgpu's to change, whatever it claims */
        "\"containers\":[{\"name\":\"app\",\"resources\":{\"limits\":{\"fracgpu.io/gpu-share\":\"1\"}}}]",
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(*specs); i++) {
        struct fg_mutation m;
        json_object *p = pod(i == 4 ? "\"annotations\":{\"fracgpu.io/original-request\":\"{\\\"container\\\":\\\"x\\\","
                                      "\\\"limits\\\":\\\"1\\\"}\"}"
                                    : "",
                             specs[i]);
        fg_mutation_plan(p, &whole_gpu, NULL, &m);
        assert_int_equal(m.judged.ask, FG_GPU_NONE);
        assert_null(m.patch);
        fg_mutation_cleanup(&m);
        json_object_put(p);
    }
}

static void a_new_allocation_rewrites_only_annotations(void **state)
{
    (void)state;
    struct fg_eligibility j;
    json_object *p = admit(pod("", "\"containers\":[{\"name\":\"app\"," GPU1 "}]"), &j);
    struct fg_mutation_target t = whole_gpu;
    t.allocation = (struct fg_allocation){ .compute_milli = 300, .memory_mib = 20480 };
    struct fg_mutation m;
    fg_mutation_plan(p, &t, NULL, &m);
    assert_non_null(m.patch);
    assert_string_equal(json_object_to_json_string_ext(m.patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                        "[{\"op\":\"add\",\"path\":\"/metadata/annotations/fracgpu.io~1compute-milli\",\"value\":\"300\"},"
                        "{\"op\":\"add\",\"path\":\"/metadata/annotations/fracgpu.io~1memory-mib\",\"value\":\"20480\"}]");
    fg_mutation_cleanup(&m);
    json_object *q = admit_with(json_object_get(p), &t, NULL, &j);
    assert_string_equal(ann(q, FG_ANN_COMPUTE_MILLI), "300");
    assert_string_equal(ann(q, FG_ANN_MEMORY_MIB), "20480");
    json_object_put(q);
    json_object_put(p);
}

/* Another webhook gives a mutated pod anti-affinity: the reinvocation puts back exactly the pod it was. */
static void reinvocation_after_the_pod_became_ineligible(void **state)
{
    (void)state;
    const char *variants[] = {
        "\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":\"app\"," GPU1 "}]",
        "\"containers\":[{\"name\":\"side\"},{\"name\":\"app\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]",
    };
    for (size_t i = 0; i < 2; i++) {
        json_object *orig = pod("\"labels\":{\"app\":\"x\"}", variants[i]);
        struct fg_eligibility j;
        json_object *p = admit(json_object_get(orig), &j);
        assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
        json_object *anti = parse("{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                                  "\"topologyKey\":\"zone\"}]}}");
        json_object_object_add(fg_json_get(p, "spec", NULL), "affinity", json_object_get(anti));
        json_object_object_add(fg_json_get(orig, "spec", NULL), "affinity", anti);
        json_object *back = admit(p, &j);
        assert_int_equal(j.ask, FG_GPU_WHOLE);
        assert_string_equal(j.reason, "podAntiAffinity");
        if (!json_object_equal(back, orig))
            fail_msg("restored %s\n  expected %s", json_object_to_json_string(back), json_object_to_json_string(orig));
        json_object_put(back);
        json_object_put(orig);
    }
}

/* A record that does not describe the pod is not trusted: the pod is judged and mutated as it stands. */
static void untrusted_original_records(void **state)
{
    (void)state;
    const char *records[] = { "not json", "[1]", "{\"container\":\"gone\",\"limits\":\"1\"}", "{\"container\":\"app\"}" };
    for (size_t i = 0; i < 4; i++) {
        json_object *p = pod("", "\"containers\":[{\"name\":\"app\"," GPU1 "}]");
        fg_json_set_str(fg_json_ensure_obj(fg_json_get(p, "metadata", NULL), "annotations"), FG_ANN_ORIGINAL_REQUEST,
                        records[i]);
        struct fg_eligibility j;
        json_object *q = admit(p, &j);
        assert_int_equal(j.ask, FG_GPU_ELIGIBLE);
        assert_mutated(q, 0, "rl");
        assert_string_equal(ann(q, FG_ANN_ORIGINAL_REQUEST), "{\"container\":\"app\",\"requests\":\"1\",\"limits\":\"1\"}");
        json_object_put(q);
    }
}

static void dedicated_mps_and_a_fraction(void **state)
{
    (void)state;
    struct fg_mutation_target t = { "statefulset-tts", "real-time-mps", FG_SHARING_MPS, FG_ISOLATION_DEDICATED,
                                    { 250, 8192 }, FG_UPDATE_AUTO };
    struct fg_eligibility j;
    json_object *p = admit_with(pod("", "\"containers\":[{\"name\":\"app\"," GPU1 "}]"), &t, NULL, &j);
    assert_string_equal(ann(p, FG_ANN_WORKLOAD), "statefulset-tts");
    assert_string_equal(ann(p, FG_ANN_POLICY), "real-time-mps");
    assert_string_equal(ann(p, FG_ANN_SHARING), "mps");
    assert_string_equal(ann(p, FG_ANN_ISOLATION), "dedicated");
    assert_string_equal(ann(p, FG_ANN_UPDATE_MODE), "Auto");   /* the scheduler may move it */
    struct fg_allocation a;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_allocation_from_pod(p, &a, msg), FG_OK);
    assert_int_equal(a.compute_milli, 250);
    assert_int_equal(a.memory_mib, 8192);
    json_object_put(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_container_requests_and_limits),
        cmocka_unit_test(limits_only_as_a_number),
        cmocka_unit_test(requests_only_in_milli_units),
        cmocka_unit_test(the_gpu_in_the_second_of_several_containers),
        cmocka_unit_test(init_and_sidecar_containers),
        cmocka_unit_test(gpu_asks_left_whole),
        cmocka_unit_test(scheduling_features_left_whole),
        cmocka_unit_test(volumes_that_wait_for_the_scheduler),
        cmocka_unit_test(labels_and_annotations_kept),
        cmocka_unit_test(no_gpu_no_patch),
        cmocka_unit_test(a_new_allocation_rewrites_only_annotations),
        cmocka_unit_test(reinvocation_after_the_pod_became_ineligible),
        cmocka_unit_test(untrusted_original_records),
        cmocka_unit_test(dedicated_mps_and_a_fraction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
