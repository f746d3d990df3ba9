/*
 * fuzz_webhook_review — the admission webhook's handling of one AdmissionReview, without the network.
 *
 * The bytes are the body kube-apiserver POSTs: fg_review_parse decodes it as the server does, and a
 * review it accepts is answered by fg_admit from in-memory caches — a namespace `ml` holding an
 * automated Deployment `llm` (through ReplicaSet `llm-5f`), a Deployment `llm-mps` with its own
 * policy and fractions, a CronJob `nightly` (through Job `nightly-1`), a GPUWorkload with a
 * recommendation, the policy `team-mps`, and StorageClasses that wait for claims named `wait-*`. So
 * a pod that names those owners reaches the mutation plan (eligibility, allocation, the JSON Patch),
 * whatever else it holds. The answer must be an AdmissionReview whose patch, when there is one, is
 * base64 of a JSON array: anything else is a bug, and aborts.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/json.h"
#include "fuzz/fuzz.h"
#include "operator/webhook/admit.h"

static const char *const cluster_text[] = {
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"llm\",\"namespace\":\"ml\","
    "\"uid\":\"d1\",\"annotations\":{\"fracgpu.io/automate\":\"true\"}},\"spec\":{}}",
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"llm-5f\",\"namespace\":\"ml\","
    "\"uid\":\"r1\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\","
    "\"uid\":\"d1\",\"controller\":true}]}}",
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"llm-mps\",\"namespace\":\"ml\","
    "\"uid\":\"d2\",\"annotations\":{\"fracgpu.io/automate\":\"true\",\"fracgpu.io/policy\":\"team-mps\","
    "\"fracgpu.io/gpu-compute\":\"250\",\"fracgpu.io/gpu-memory\":\"10Gi\"}},\"spec\":{}}",
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"llm-mps-7c\",\"namespace\":\"ml\","
    "\"uid\":\"r2\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm-mps\","
    "\"uid\":\"d2\",\"controller\":true}]}}",
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"nightly\",\"namespace\":\"ml\","
    "\"uid\":\"c1\"},\"spec\":{}}",
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"nightly-1\",\"namespace\":\"ml\","
    "\"uid\":\"j1\",\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"name\":\"nightly\","
    "\"uid\":\"c1\",\"controller\":true}]}}",
};
#define NOBJECTS (sizeof cluster_text / sizeof cluster_text[0])

static struct {
    json_object *objects[NOBJECTS];
    json_object *ns, *gpuworkload, *policy;
} c;

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    if (fg_json_parse(text, strlen(text), 0, &o, NULL) != FG_OK)
        abort();
    return o;
}

static void load_cluster(void)
{
    for (size_t i = 0; i < NOBJECTS; i++)
        c.objects[i] = parse(cluster_text[i]);
    c.ns = parse("{\"metadata\":{\"name\":\"ml\",\"labels\":{\"fracgpu.io/automate\":\"true\"}}}");
    c.gpuworkload = parse("{\"metadata\":{\"name\":\"deployment-llm\",\"namespace\":\"ml\"},\"spec\":{"
                          "\"targetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\"},"
                          "\"updateMode\":\"Auto\"},\"status\":{\"recommendation\":{\"computeMilli\":300,"
                          "\"memoryMiB\":4096}}}");
    c.policy = parse("{\"metadata\":{\"name\":\"team-mps\"},\"spec\":{\"sharing\":\"mps\",\"isolation\":\"dedicated\","
                     "\"updateMode\":\"Auto\"}}");
}

static bool same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

static json_object *lookup(void *ctx, const char *ns, const char *group, const char *kind, const char *name)
{
    (void)ctx;
    for (size_t i = 0; i < NOBJECTS; i++) {
        json_object *o = c.objects[i];
        const char *api = fg_json_get_str(o, "apiVersion", NULL);
        const char *slash = strchr(api, '/');
        size_t glen = slash ? (size_t)(slash - api) : 0;
        if (same(ns, "ml") && strlen(group) == glen && !strncmp(api, group, glen) &&
            same(fg_json_get_str(o, "kind", NULL), kind) && same(fg_json_get_str(o, "metadata", "name", NULL), name))
            return o;
    }
    return NULL;
}

static json_object *name_space(void *ctx, const char *ns)
{
    (void)ctx;
    return same(ns, "ml") ? c.ns : NULL;
}

static json_object *gpuworkload(void *ctx, const char *ns, const char *name)
{
    (void)ctx;
    return same(ns, "ml") && same(fg_json_get_str(c.gpuworkload, "metadata", "name", NULL), name) ? c.gpuworkload
                                                                                                   : NULL;
}

static json_object *policy(void *ctx, const char *name)
{
    (void)ctx;
    return same(fg_json_get_str(c.policy, "metadata", "name", NULL), name) ? c.policy : NULL;
}

static bool claim_waits(void *ctx, const char *claim)
{
    (void)ctx;
    return claim && !strncmp(claim, "wait-", 5);
}

static bool class_waits(void *ctx, const char *storage_class)
{
    (void)ctx;
    return !storage_class || !strncmp(storage_class, "wait-", 5);
}

static const struct fg_storage_view storage_view = { claim_waits, class_waits, NULL };

static const struct fg_storage_view *storage(void *ctx, const char *ns)
{
    (void)ctx;
    (void)ns;
    return &storage_view;
}

static const struct fg_admit_sources sources = { &fg_workload_builtin_kinds, lookup, name_space, gpuworkload, policy,
                                                 storage, NULL, NULL };

/* The response is an AdmissionReview for uid, allowed, with a patch that decodes to a JSON array. */
static void check_response(const char *response, const char *uid)
{
    json_object *resp = NULL;
    if (!response || fg_json_parse(response, strlen(response), 0, &resp, NULL) != FG_OK)
        abort();
    if (!same(fg_json_get_str(resp, "response", "uid", NULL), uid) ||
        !json_object_get_boolean(fg_json_get(resp, "response", "allowed", NULL)))
        abort();
    const char *b64 = fg_json_get_str(resp, "response", "patch", NULL);
    if (b64) {
        size_t len = 0;
        char *patch = (char *)fg_base64_decode(b64, &len);
        json_object *p = NULL;
        if (!patch || fg_json_parse(patch, len, 0, &p, NULL) != FG_OK || !json_object_is_type(p, json_type_array))
            abort();
        json_object_put(p);
        free(patch);
    }
    json_object_put(resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!c.ns)
        load_cluster();
    struct fg_review r;
    char msg[FG_ERRMSG_MAX];
    if (fg_review_parse((const char *)data, size, &r, msg) != FG_OK)
        return 0;
    struct fg_admit_result res;
    fg_admit(&r, &sources, &res);
    (void)fg_admit_outcome_name(res.outcome);
    check_response(res.response, r.uid);
    fg_admit_result_cleanup(&res);
    fg_review_cleanup(&r);
    return 0;
}
