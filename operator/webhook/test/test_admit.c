/* The webhook's answers from in-memory caches: a Deployment's pod mutated under the policy its
 * annotation, its GPUWorkload or its class gives; fractions from the workload and the recommendation,
 * per update mode; pods of workloads not automated, without GPUs, or left whole (anti-affinity, a
 * policy that does not exist) allowed unchanged; a CronJob's pod automated by its namespace's label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/json.h"
#include "operator/webhook/admit.h"

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    if (fg_json_parse(text, strlen(text), 0, &o, NULL) != FG_OK)
        fail_msg("test JSON: %s", text);
    return o;
}

/* The cluster as the caches hold it; tests replace members. */
static struct {
    json_object *deployment, *replicaset, *cronjob, *job, *ns, *gpuworkload, *policy;
} c;

static json_object *lookup(void *ctx, const char *ns, const char *group, const char *kind, const char *name)
{
    (void)ctx;
    json_object *all[] = { c.deployment, c.replicaset, c.cronjob, c.job };
    for (size_t i = 0; i < 4; i++) {
        json_object *o = all[i];
        const char *api = fg_json_get_str(o, "apiVersion", NULL);
        if (o && !strcmp(ns, "ml") && !strncmp(api, group, strlen(group)) && !strcmp(fg_json_get_str(o, "kind", NULL), kind) &&
            !strcmp(fg_json_get_str(o, "metadata", "name", NULL), name))
            return o;
    }
    return NULL;
}

static json_object *name_space(void *ctx, const char *ns)
{
    (void)ctx;
    return strcmp(ns, "ml") ? NULL : c.ns;
}

static json_object *gpuworkload(void *ctx, const char *ns, const char *name)
{
    (void)ctx;
    const char *have = fg_json_get_str(c.gpuworkload, "metadata", "name", NULL);
    return !strcmp(ns, "ml") && have && !strcmp(have, name) ? c.gpuworkload : NULL;
}

static json_object *policy(void *ctx, const char *name)
{
    (void)ctx;
    const char *have = fg_json_get_str(c.policy, "metadata", "name", NULL);
    return have && !strcmp(have, name) ? c.policy : NULL;
}

static const struct fg_admit_sources sources = { &fg_workload_builtin_kinds, lookup, name_space, gpuworkload, policy,
                                                 NULL, NULL, NULL };

static void set(json_object **slot, const char *text)
{
    json_object_put(*slot);
    *slot = text ? parse(text) : NULL;
}

static int setup(void **state)
{
    (void)state;
    memset(&c, 0, sizeof(c));
    set(&c.deployment, "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"llm\",\"uid\":\"d1\","
                       "\"annotations\":{\"fracgpu.io/automate\":\"true\"}},\"spec\":{}}");
    set(&c.replicaset, "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"llm-5f\",\"uid\":\"r1\","
                       "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\","
                       "\"uid\":\"d1\",\"controller\":true}]}}");
    set(&c.cronjob, "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"nightly\",\"uid\":\"c1\"},"
                    "\"spec\":{}}");
    set(&c.job, "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"nightly-1\",\"uid\":\"j1\","
                "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"name\":\"nightly\",\"uid\":\"c1\","
                "\"controller\":true}]}}");
    set(&c.ns, "{\"metadata\":{\"name\":\"ml\"}}");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_object *all[] = { c.deployment, c.replicaset, c.cronjob, c.job, c.ns, c.gpuworkload, c.policy };
    for (size_t i = 0; i < 7; i++)
        json_object_put(all[i]);
    return 0;
}

#define GPU1 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}"
#define FROM_RS "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"llm-5f\",\"uid\":\"r1\",\"controller\":true}]"
#define FROM_JOB "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"nightly-1\",\"uid\":\"j1\",\"controller\":true}]"

/* Admits a CREATE of a pod with `meta` members and `spec` members (operation op); the applied
 * annotations land in *patched (the decoded patch text), NULL when none. */
static enum fg_admit_outcome admit(const char *op, const char *meta, const char *spec, char **patched, const char **reason)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\",\"resource\":"
             "{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":\"ml\",\"operation\":\"%s\","
             "\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"llm-5f-\"%s%s},"
             "\"spec\":{%s}}}}",
             op, meta[0] ? "," : "", meta, spec);
    struct fg_review r;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_review_parse(text, strlen(text), &r, msg) != FG_OK)
        fail_msg("review: %s", msg);
    struct fg_admit_result res;
    fg_admit(&r, &sources, &res);
    json_object *resp = parse(res.response);
    assert_string_equal(fg_json_get_str(resp, "response", "uid", NULL), "u-1");
    assert_true(json_object_get_boolean(fg_json_get(resp, "response", "allowed", NULL)));
    const char *b64 = fg_json_get_str(resp, "response", "patch", NULL);
    *patched = NULL;
    if (b64) {
        *patched = (char *)fg_base64_decode(b64, NULL);
        assert_non_null(*patched);
    }
    if (reason)
        *reason = res.reason;
    enum fg_admit_outcome o = res.outcome;
    json_object_put(resp);
    fg_admit_result_cleanup(&res);
    fg_review_cleanup(&r);
    return o;
}

static void expect_in(const char *patch, const char *needle)
{
    if (!patch || !strstr(patch, needle))
        fail_msg("patch %s lacks %s", patch ? patch : "(none)", needle);
}

static void a_deployment_pod_mutated(void **state)
{
    (void)state;
    char *p;
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_MUTATED);
    expect_in(p, "\"path\":\"/spec/schedulerName\",\"value\":\"fracgpu-scheduler\"");
    expect_in(p, "\"fracgpu.io/workload\":\"deployment-llm\"");
    expect_in(p, "\"fracgpu.io/policy\":\"real-time\""); /* the class's built-in, not cached yet */
    expect_in(p, "\"fracgpu.io/compute-milli\":\"1000\"");
    free(p);
}

static void policies_and_fractions(void **state)
{
    (void)state;
    char *p;
    /* a policy named on the workload, read from the cache */
    set(&c.policy, "{\"metadata\":{\"name\":\"team-mps\"},\"spec\":{\"sharing\":\"mps\",\"isolation\":\"dedicated\","
                   "\"updateMode\":\"Auto\"}}");
    json_object *ann = fg_json_get(c.deployment, "metadata", "annotations", NULL);
    fg_json_set_str(ann, "fracgpu.io/policy", "team-mps");
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_MUTATED);
    expect_in(p, "\"fracgpu.io/sharing\":\"mps\"");
    expect_in(p, "\"fracgpu.io/isolation\":\"dedicated\"");
    free(p);

    /* the GPUWorkload's recommendation applies under Auto; its own updateMode Off keeps the whole GPU */
    set(&c.gpuworkload, "{\"metadata\":{\"name\":\"deployment-llm\"},\"spec\":{\"targetRef\":{}},\"status\":{"
                        "\"recommendation\":{\"computeMilli\":300,\"memoryMiB\":4096}}}");
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_MUTATED);
    expect_in(p, "\"fracgpu.io/compute-milli\":\"300\"");
    expect_in(p, "\"fracgpu.io/memory-mib\":\"4096\"");
    free(p);
    json_object_object_add(fg_json_get(c.gpuworkload, "spec", NULL), "updateMode", json_object_new_string("Off"));
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_MUTATED);
    expect_in(p, "\"fracgpu.io/compute-milli\":\"1000\"");
    free(p);

    /* the workload's own fraction, from the first pod */
    fg_json_set_str(ann, "fracgpu.io/gpu-compute", "250");
    fg_json_set_str(ann, "fracgpu.io/gpu-memory", "10Gi");
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_MUTATED);
    expect_in(p, "\"fracgpu.io/compute-milli\":\"250\"");
    expect_in(p, "\"fracgpu.io/memory-mib\":\"10240\"");
    free(p);

    /* a policy that exists nowhere: the pod stays whole */
    const char *reason;
    fg_json_set_str(ann, "fracgpu.io/policy", "no-such-policy");
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, &reason), FG_ADMIT_WHOLE);
    assert_string_equal(reason, "policyNotFound");
    assert_null(p);
}

static void pods_left_alone(void **state)
{
    (void)state;
    char *p;
    const char *reason;
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"web\"}]", &p, NULL), FG_ADMIT_NO_GPU);
    assert_null(p);
    assert_int_equal(admit("UPDATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL),
                     FG_ADMIT_NOT_POD_CREATE);
    assert_null(p);
    assert_int_equal(admit("CREATE", "", "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_NOT_AUTOMATED);
    assert_null(p);
    assert_int_equal(admit("CREATE", FROM_RS,
                           "\"containers\":[{\"name\":\"app\"," GPU1 "}],\"affinity\":{\"podAntiAffinity\":{"
                           "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"zone\"}]}}",
                           &p, &reason),
                     FG_ADMIT_WHOLE);
    assert_string_equal(reason, "podAntiAffinity");
    assert_null(p);
    /* the workload opted out: its pods keep the label until they roll, and stay whole */
    fg_json_set_str(fg_json_get(c.deployment, "metadata", "annotations", NULL), "fracgpu.io/automate", "false");
    assert_int_equal(admit("CREATE", FROM_RS, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL),
                     FG_ADMIT_NOT_AUTOMATED);
    assert_null(p);
}

static void a_cronjob_pod_automated_by_its_namespace(void **state)
{
    (void)state;
    char *p;
    assert_int_equal(admit("CREATE", FROM_JOB, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL),
                     FG_ADMIT_NOT_AUTOMATED);
    set(&c.ns, "{\"metadata\":{\"name\":\"ml\",\"labels\":{\"fracgpu.io/automate\":\"true\"}}}");
    assert_int_equal(admit("CREATE", FROM_JOB, "\"containers\":[{\"name\":\"app\"," GPU1 "}]", &p, NULL), FG_ADMIT_MUTATED);
    expect_in(p, "\"fracgpu.io/workload\":\"cronjob-nightly\"");
    expect_in(p, "\"fracgpu.io/policy\":\"batch\"");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_deployment_pod_mutated, setup, teardown),
        cmocka_unit_test_setup_teardown(policies_and_fractions, setup, teardown),
        cmocka_unit_test_setup_teardown(pods_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_cronjob_pod_automated_by_its_namespace, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
