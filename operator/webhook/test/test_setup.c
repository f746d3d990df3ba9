/* The webhook as `fracgpu operator` runs it, against the test API server: the leader issues the
 * certificates into an empty Secret and the caBundle into the MutatingWebhookConfiguration (reached
 * through its Service and EndpointSlice, failurePolicy Fail so that any TLS failure fails a create),
 * the replica serves them, and pods of an automated Deployment are created mutated — continuously,
 * for as long as it takes the certificates (a 30 s CA, 9 s serving certificates) to be renewed and
 * the CA rotated in stages, without a single create failing. */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "operator/manager/informers.h"
#include "operator/webhook/setup.h"

static struct fg_harness h;

static json_object *request(const char *method, const char *path, const char *body, struct fg_kube_status *st)
{
    json_object *obj = body ? json_tokener_parse(body) : NULL, *out = NULL;
    enum fg_err err = !strcmp(method, "POST") ? fg_kube_create(h.client, path, obj, &out, st)
                                              : fg_kube_get(h.client, path, &out, st);
    json_object_put(obj);
    return err == FG_OK ? out : NULL;
}

static json_object *must(const char *method, const char *path, const char *body)
{
    struct fg_kube_status st = { 0 };
    json_object *o = request(method, path, body, &st);
    if (!o)
        fail_msg("%s %s: %s", method, path, st.message ? st.message : "failed");
    fg_kube_status_cleanup(&st);
    return o;
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static bool bundle_written(void *ud)
{
    (void)ud;
    json_object *c = must("GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/fracgpu", NULL);
    bool ok = fg_json_get_str(json_object_array_get_idx(fg_json_get(c, "webhooks", NULL), 0), "clientConfig",
                              "caBundle", NULL) != NULL;
    json_object_put(c);
    return ok;
}

static bool serving(void *ud)
{
    struct fg_buf body = FG_BUF_INIT;
    long code = fg_harness_http(NULL, fg_manager_http_port(ud), "GET", "/readyz", &body);
    fg_buf_cleanup(&body);
    return code == 200;
}

/* Creates a pod of the Deployment's ReplicaSet; true when it was admitted and mutated. */
static bool create_pod(const char *rs_uid, int i, char *why, size_t why_size)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"llm-%d\",\"labels\":{\"fracgpu.io/automate\":\"true\"},\"ownerReferences\":[{"
             "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"llm-5f\",\"uid\":\"%s\",\"controller\":"
             "true}]},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"vllm\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"1\"}}}]}}",
             i, rs_uid);
    struct fg_kube_status st = { 0 };
    json_object *pod = request("POST", "/api/v1/namespaces/ml/pods", body, &st);
    snprintf(why, why_size, "%s", st.message ? st.message : "");
    fg_kube_status_cleanup(&st);
    const char *sched = fg_json_get_str(pod, "spec", "schedulerName", NULL);
    bool ok = sched && !strcmp(sched, "fracgpu-scheduler") &&
              fg_json_get(pod, "spec", "containers", NULL) &&
              fg_json_get_str(pod, "metadata", "annotations", "fracgpu.io/workload", NULL);
    if (pod && !ok)
        snprintf(why, why_size, "not mutated: %s", json_object_to_json_string(pod));
    json_object_put(pod);
    return ok;
}

/* How many Events with `reason` the Secret has. */
static int events(const char *reason)
{
    json_object *list = must("GET", "/api/v1/namespaces/fracgpu-system/events", NULL);
    json_object *items = fg_json_get(list, "items", NULL);
    int n = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        const char *r = fg_json_get_str(json_object_array_get_idx(items, i), "reason", NULL);
        n += r && !strcmp(r, reason);
    }
    json_object_put(list);
    return n;
}

static void certificates_rotate_under_load(void **state)
{
    (void)state;
    unsigned port = free_port();
    char buf[2048];
    assert_int_equal(fg_harness_namespace(&h, "fracgpu-system"), FG_OK);
    assert_int_equal(fg_harness_namespace(&h, "ml"), FG_OK);
    json_object_put(must("POST", "/api/v1/namespaces/fracgpu-system/secrets",
                         "{\"metadata\":{\"name\":\"fracgpu-webhook-tls\"},\"type\":\"Opaque\"}"));
    json_object_put(must("POST", "/api/v1/namespaces/fracgpu-system/services",
                         "{\"metadata\":{\"name\":\"fracgpu-webhook\"},\"spec\":{\"selector\":{\"app\":\"fracgpu\"},"
                         "\"ports\":[{\"name\":\"https\",\"port\":443,\"targetPort\":9443}]}}"));
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"fracgpu-webhook-1\",\"labels\":{\"kubernetes.io/service-name\":"
             "\"fracgpu-webhook\"}},\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"https\",\"port\":%u}],"
             "\"endpoints\":[{\"addresses\":[\"127.0.0.1\"],\"conditions\":{\"ready\":true}}]}",
             port);
    json_object_put(must("POST", "/apis/discovery.k8s.io/v1/namespaces/fracgpu-system/endpointslices", buf));
    json_object_put(must("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                         "{\"metadata\":{\"name\":\"fracgpu\"},\"webhooks\":[{\"name\":\"pods.fracgpu.io\","
                         "\"clientConfig\":{\"service\":{\"namespace\":\"fracgpu-system\",\"name\":\"fracgpu-webhook\","
                         "\"path\":\"/mutate-pods\"}},\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
                         "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}],\"objectSelector\":{\"matchLabels\":{"
                         "\"fracgpu.io/automate\":\"true\"}},\"failurePolicy\":\"Fail\",\"sideEffects\":\"None\","
                         "\"timeoutSeconds\":5,\"reinvocationPolicy\":\"IfNeeded\",\"admissionReviewVersions\":[\"v1\"]}]}"));
    json_object_put(must("POST", "/apis/apps/v1/namespaces/ml/deployments",
                         "{\"metadata\":{\"name\":\"llm\",\"annotations\":{\"fracgpu.io/automate\":\"true\"}},\"spec\":{"
                         "\"selector\":{\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":"
                         "\"b\"}},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"vllm\"}]}}}}"));
    json_object *d = must("GET", "/apis/apps/v1/namespaces/ml/deployments/llm", NULL);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"llm-5f\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
             "\"name\":\"llm\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":"
             "\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":"
             "\"main\",\"image\":\"vllm\"}]}}}}",
             fg_json_get_str(d, "metadata", "uid", NULL));
    json_object_put(d);
    json_object *rs = must("POST", "/apis/apps/v1/namespaces/ml/replicasets", buf);
    char rs_uid[64];
    snprintf(rs_uid, sizeof(rs_uid), "%s", fg_json_get_str(rs, "metadata", "uid", NULL));
    json_object_put(rs);

    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "operator";
    mo.kubeconfig = h.kubeconfig;
    mo.listen = "127.0.0.1:0";
    mo.leader.enabled = false;
    struct fg_manager *m = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_manager_new(&mo, &m, msg), FG_OK);
    char listen[32];
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
    struct fg_webhook_opts wo = FG_WEBHOOK_OPTS_DEFAULT;
    wo.listen = listen;
    wo.ns = "fracgpu-system";
    wo.ca_lifetime_ms = 30000;
    wo.serving_lifetime_ms = 9000;
    wo.switch_delay_ms = 1000;
    if (fg_webhook_setup(m, &wo, msg) != FG_OK)
        fail_msg("setup: %s", msg);
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    assert_true(fg_harness_wait(bundle_written, NULL, 15000));
    assert_true(fg_harness_wait(serving, m, 15000));

    /* pods, one after another, while the certificates turn over */
    int created = 0;
    uint64_t until = fg_clock_mono_ns() + 26 * FG_NS_PER_S;
    for (int i = 0; fg_clock_mono_ns() < until; i++) {
        char why[4096];
        if (!create_pod(rs_uid, i, why, sizeof(why)))
            fail_msg("pod %d (%.1f s in): %s", i, (double)(until - fg_clock_mono_ns()) / 1e9, why);
        created++;
        usleep(20000);
    }
    assert_true(created > 100);
    assert_int_equal(events("IssuedCA"), 1);
    assert_true(events("RenewedServing") >= 1);
    assert_true(events("RotatingCA") >= 1);
    assert_true(events("SwitchedServing") >= 1);
    assert_true(events("RetiredCA") >= 1);
    print_message("%d pods admitted while the certificates turned over\n", created);

    /* a bad certificate policy is refused at setup */
    struct fg_manager *m2 = NULL;
    assert_int_equal(fg_manager_new(&mo, &m2, msg), FG_OK);
    wo.listen = "127.0.0.1:0";
    wo.serving_lifetime_ms = 20000;
    assert_int_equal(fg_webhook_setup(m2, &wo, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "third"));
    fg_manager_free(m2);
    fg_manager_free(m);
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
        cmocka_unit_test(certificates_rotate_under_load),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
