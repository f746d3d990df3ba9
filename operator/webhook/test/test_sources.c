/* The webhook's caches against the test API server: a manager watches what an admission reads, and a
 * review of a Deployment's pod is answered from them — automated through its ReplicaSet, its
 * namespace's label and its GPUWorkload's policy; a claim in a WaitForFirstConsumer class (named, or
 * the default class) and a claim not yet cached leave the pod whole; an Immediate one does not. */
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
#include "e2e/tests/harness.h"
#include "operator/manager/informers.h"
#include "operator/webhook/sources.h"

static struct fg_harness h;

static void create(const char *path, const char *body)
{
    json_object *obj = json_tokener_parse(body), *out = NULL;
    struct fg_kube_status st;
    assert_non_null(obj);
    if (fg_kube_create(h.client, path, obj, &out, &st) != FG_OK)
        fail_msg("create %s: %s", path, st.message);
    fg_kube_status_cleanup(&st);
    json_object_put(obj);
    json_object_put(out);
}

/* The uid the server gave name at path. */
static char *uid_of(const char *path)
{
    json_object *o = NULL;
    struct fg_kube_status st;
    assert_int_equal(fg_kube_get(h.client, path, &o, &st), FG_OK);
    fg_kube_status_cleanup(&st);
    char *uid = strdup(fg_json_get_str(o, "metadata", "uid", NULL));
    json_object_put(o);
    return uid;
}

static bool synced(void *ud)
{
    return fg_informer_factory_synced(fg_manager_informers(ud));
}

#define POD(extra)                                                                                                    \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"resource\":{"  \
    "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":\"ml\",\"operation\":\"CREATE\","         \
    "\"object\":{\"kind\":\"Pod\",\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"          \
    "\"ReplicaSet\",\"name\":\"llm-5f\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"containers\":[{\"name\":"    \
    "\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]" extra "}}}}"

static enum fg_admit_outcome admit(const struct fg_admit_sources *src, const char *rs_uid, const char *volumes,
                                   const char **reason)
{
    char text[4096];
    if (volumes)
        snprintf(text, sizeof(text), POD(",\"volumes\":[%s]"), rs_uid, volumes);
    else
        snprintf(text, sizeof(text), POD(""), rs_uid);
    struct fg_review r;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_review_parse(text, strlen(text), &r, msg) != FG_OK)
        fail_msg("review: %s", msg);
    struct fg_admit_result res;
    fg_admit(&r, src, &res);
    enum fg_admit_outcome o = res.outcome;
    *reason = res.reason;
    fg_admit_result_cleanup(&res);
    fg_review_cleanup(&r);
    return o;
}

struct default_waits {
    const struct fg_admit_sources *src;
    const char *rs_uid;
};

static bool plain_claim_waits(void *ud)
{
    struct default_waits *d = ud;
    const char *reason;
    return admit(d->src, d->rs_uid, "{\"name\":\"p\",\"persistentVolumeClaim\":{\"claimName\":\"plain\"}}",
                 &reason) == FG_ADMIT_WHOLE;
}

static bool not_automated(void *ud)
{
    struct default_waits *d = ud;
    const char *reason;
    return admit(d->src, d->rs_uid, NULL, &reason) == FG_ADMIT_NOT_AUTOMATED;
}

static void answers_from_the_caches(void **state)
{
    (void)state;
    assert_int_equal(fg_harness_namespace(&h, "ml"), FG_OK);
    create("/api/v1/namespaces", "{\"metadata\":{\"name\":\"team\",\"labels\":{\"fracgpu.io/automate\":\"true\"}}}");
    create("/apis/apps/v1/namespaces/ml/deployments",
           "{\"metadata\":{\"name\":\"llm\",\"annotations\":{\"fracgpu.io/automate\":\"true\",\"fracgpu.io/policy\":"
           "\"batch\"}},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":"
           "{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"vllm\"}]}}}}");
    char *d_uid = uid_of("/apis/apps/v1/namespaces/ml/deployments/llm");
    char rs[1024];
    snprintf(rs, sizeof(rs),
             "{\"metadata\":{\"name\":\"llm-5f\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
             "\"Deployment\",\"name\":\"llm\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"selector\":{"
             "\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{"
             "\"containers\":[{\"name\":\"a\",\"image\":\"vllm\"}]}}}}",
             d_uid);
    create("/apis/apps/v1/namespaces/ml/replicasets", rs);
    char *rs_uid = uid_of("/apis/apps/v1/namespaces/ml/replicasets/llm-5f");
    create("/apis/storage.k8s.io/v1/storageclasses",
           "{\"metadata\":{\"name\":\"local\"},\"provisioner\":\"x\",\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    create("/apis/storage.k8s.io/v1/storageclasses", "{\"metadata\":{\"name\":\"net\"},\"provisioner\":\"y\"}");
    create("/api/v1/namespaces/ml/persistentvolumeclaims",
           "{\"metadata\":{\"name\":\"scratch\"},\"spec\":{\"storageClassName\":\"local\"}}");
    create("/api/v1/namespaces/ml/persistentvolumeclaims",
           "{\"metadata\":{\"name\":\"models\"},\"spec\":{\"storageClassName\":\"net\"}}");
    create("/api/v1/namespaces/ml/persistentvolumeclaims", "{\"metadata\":{\"name\":\"plain\"},\"spec\":{}}");

    struct fg_manager_opts o = FG_MANAGER_OPTS_DEFAULT;
    o.component = "test";
    o.kubeconfig = h.kubeconfig;
    o.listen = "127.0.0.1:0";
    o.leader.enabled = false;
    struct fg_manager *m = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_manager_new(&o, &m, msg), FG_OK);
    struct fg_webhook_caches *caches;
    if (fg_webhook_caches_setup(m, &fg_workload_builtin_kinds, &caches, msg) != FG_OK)
        fail_msg("%s", msg);
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    assert_true(fg_harness_wait(synced, m, 10000));
    struct fg_admit_sources src;
    fg_webhook_caches_sources(caches, &src);

    const char *reason;
    assert_int_equal(admit(&src, rs_uid, NULL, &reason), FG_ADMIT_MUTATED);
    assert_int_equal(admit(&src, "not-the-rs", NULL, &reason), FG_ADMIT_NOT_AUTOMATED);
    assert_int_equal(admit(&src, rs_uid, "{\"name\":\"m\",\"persistentVolumeClaim\":{\"claimName\":\"models\"}}", &reason),
                     FG_ADMIT_MUTATED);
    assert_int_equal(admit(&src, rs_uid, "{\"name\":\"s\",\"persistentVolumeClaim\":{\"claimName\":\"scratch\"}}",
                           &reason),
                     FG_ADMIT_WHOLE);
    assert_string_equal(reason, "WaitForFirstConsumer");
    assert_int_equal(admit(&src, rs_uid, "{\"name\":\"s\",\"persistentVolumeClaim\":{\"claimName\":\"unknown\"}}",
                           &reason),
                     FG_ADMIT_WHOLE);
    /* no default class yet: a claim naming no class waits for nothing */
    assert_int_equal(admit(&src, rs_uid, "{\"name\":\"p\",\"persistentVolumeClaim\":{\"claimName\":\"plain\"}}", &reason),
                     FG_ADMIT_MUTATED);
    assert_int_equal(admit(&src, rs_uid, "{\"name\":\"e\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{}}}}", &reason),
                     FG_ADMIT_MUTATED);

    /* once a WaitForFirstConsumer class is the default, such claims wait for their pod */
    create("/apis/storage.k8s.io/v1/storageclasses",
           "{\"metadata\":{\"name\":\"std\",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":"
           "\"true\"}},\"provisioner\":\"z\",\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    struct default_waits dw = { &src, rs_uid };
    assert_true(fg_harness_wait(plain_claim_waits, &dw, 10000));
    assert_int_equal(admit(&src, rs_uid, "{\"name\":\"e\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{}}}}",
                           &reason),
                     FG_ADMIT_WHOLE);

    /* a changed object is read again, not the tree parsed before: the workload opts out */
    json_object *out = NULL;
    struct fg_kube_status st;
    assert_int_equal(fg_kube_patch(h.client, "/apis/apps/v1/namespaces/ml/deployments/llm", FG_KUBE_PATCH_MERGE,
                                   "{\"metadata\":{\"annotations\":{\"fracgpu.io/automate\":\"false\"}}}", &out, &st),
                     FG_OK);
    fg_kube_status_cleanup(&st);
    json_object_put(out);
    struct default_waits opted_out = { &src, rs_uid };
    assert_true(fg_harness_wait(not_automated, &opted_out, 10000));
    fg_manager_free(m);
    free(d_uid);
    free(rs_uid);
}

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK || fg_harness_crds(&h, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answers_from_the_caches),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
