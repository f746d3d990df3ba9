/* Protobuf request bodies (application/vnd.kubernetes.protobuf) over HTTP: objects built with the
 * generated protobuf-c code and POSTed (or PUT) to an in-process server come back as the JSON that was
 * sent; bad bodies (no prefix, truncated, wrong kind or apiVersion, raw bytes that are no message, a kind
 * not decoded, random garbage) get 400 or 415, store nothing and never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "client.h"
#include "pb_body.h"
#include "e2e/apiserver/protobuf.h"

#define BASE tc_srv.base
#define PB FG__PROTOBUF_MEDIA_TYPE
#define ACCEPT "Accept: application/vnd.kubernetes.protobuf,application/json"

/* POSTs (or PUTs) a protobuf body; returns the reply code, *json the reply when wanted. */
static long send_pb(const char *method, const char *path, const uint8_t *body, size_t len, json_object **json)
{
    struct tc_reply r;
    assert_int_equal(tc_request_bytes(BASE, method, path, PB, ACCEPT, body, len, &r), CURLE_OK);
    long code = r.code;
    if (json) {
        *json = r.json;
        r.json = NULL;
    }
    tc_reply_cleanup(&r);
    return code;
}

/* Asserts a Failure Status with this code, reason and message part for a protobuf body. */
static void expect_pb_status(const char *path, const uint8_t *body, size_t len, long code, const char *reason,
                             const char *msg_part)
{
    json_object *st = NULL;
    long got = send_pb("POST", path, body, len, &st);
    if (got != code || strcmp(fg_json_get_str(st, "reason", NULL), reason))
        fail_msg("%s: want %ld %s, got %ld %s", path, code, reason, got, json_object_to_json_string(st));
    assert_string_equal(fg_json_get_str(st, "kind", NULL), "Status");
    const char *msg = fg_json_get_str(st, "message", NULL);
    if (!strstr(msg, msg_part))
        fail_msg("message \"%s\" lacks \"%s\"", msg, msg_part);
    json_object_put(st);
}

static void namespace_and_configmap(void **state)
{
    (void)state;
    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "team-b";
    meta.namespace_ = ""; /* Go writes every string, empty ones too */
    FgKube__NamespaceSpec spec = FG_KUBE__NAMESPACE_SPEC__INIT;
    FgKube__Namespace ns = FG_KUBE__NAMESPACE__INIT;
    ns.metadata = &meta;
    ns.spec = &spec;
    size_t len;
    uint8_t *body = pb_body("v1", "Namespace", &ns.base, &len);
    json_object *created = NULL;
    assert_int_equal(send_pb("POST", "/api/v1/namespaces", body, len, &created), 201);
    assert_string_equal(fg_json_get_str(created, "metadata", "name", NULL), "team-b");
    json_object_put(created);
    free(body);
    json_object *got = tc_get_json(BASE, "/api/v1/namespaces/team-b");
    assert_string_equal(fg_json_get_str(got, "kind", NULL), "Namespace");
    assert_null(fg_json_get(got, "metadata", "namespace", NULL));
    json_object_put(got);

    FgKube__ObjectMeta__LabelsEntry label = FG_KUBE__OBJECT_META__LABELS_ENTRY__INIT, *labels[] = { &label };
    label.key = "app";
    label.value = "web";
    FgKube__ObjectMeta cm_meta = FG_KUBE__OBJECT_META__INIT;
    cm_meta.name = "c";
    cm_meta.n_labels = 1;
    cm_meta.labels = labels;
    FgKube__ConfigMap__DataEntry a = FG_KUBE__CONFIG_MAP__DATA_ENTRY__INIT, e = FG_KUBE__CONFIG_MAP__DATA_ENTRY__INIT;
    FgKube__ConfigMap__DataEntry *data[] = { &a, &e };
    a.key = "a";
    a.value = "b";
    e.key = "empty";
    e.value = "";
    FgKube__ConfigMap cm = FG_KUBE__CONFIG_MAP__INIT;
    cm.metadata = &cm_meta;
    cm.n_data = 2;
    cm.data = data;
    body = pb_body("v1", "ConfigMap", &cm.base, &len);
    assert_int_equal(send_pb("POST", "/api/v1/namespaces/team-b/configmaps", body, len, NULL), 201);
    free(body);
    got = tc_get_json(BASE, "/api/v1/namespaces/team-b/configmaps/c");
    assert_string_equal(fg_json_get_str(got, "data", "a", NULL), "b");
    assert_string_equal(fg_json_get_str(got, "data", "empty", NULL), "");
    assert_string_equal(fg_json_get_str(got, "metadata", "labels", "app", NULL), "web");
    assert_string_equal(fg_json_get_str(got, "metadata", "namespace", NULL), "team-b");

    /* PUT replaces it the same way. */
    a.value = "changed";
    cm_meta.namespace_ = "team-b";
    body = pb_body("v1", "ConfigMap", &cm.base, &len);
    assert_int_equal(send_pb("PUT", "/api/v1/namespaces/team-b/configmaps/c", body, len, NULL), 200);
    free(body);
    json_object_put(got);
    got = tc_get_json(BASE, "/api/v1/namespaces/team-b/configmaps/c");
    assert_string_equal(fg_json_get_str(got, "data", "a", NULL), "changed");
    json_object_put(got);
}

static void secret_bytes_are_base64(void **state)
{
    (void)state;
    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "s";
    FgKube__Secret__DataEntry k = FG_KUBE__SECRET__DATA_ENTRY__INIT, *data[] = { &k };
    k.key = "k";
    k.has_value = 1;
    k.value.data = (uint8_t *)"v\0w";
    k.value.len = 3;
    FgKube__Secret secret = FG_KUBE__SECRET__INIT;
    secret.metadata = &meta;
    secret.n_data = 1;
    secret.data = data;
    secret.type = "Opaque";
    size_t len;
    uint8_t *body = pb_body("v1", "Secret", &secret.base, &len);
    assert_int_equal(send_pb("POST", "/api/v1/namespaces/default/secrets", body, len, NULL), 201);
    free(body);
    json_object *got = tc_get_json(BASE, "/api/v1/namespaces/default/secrets/s");
    assert_string_equal(fg_json_get_str(got, "data", "k", NULL), "dgB3");
    assert_string_equal(fg_json_get_str(got, "type", NULL), "Opaque");
    json_object_put(got);
}

static void deployment_with_pod_template(void **state)
{
    (void)state;
    FgKube__ObjectMeta__LabelsEntry app = FG_KUBE__OBJECT_META__LABELS_ENTRY__INIT, *labels[] = { &app };
    app.key = "app";
    app.value = "web";
    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT, tmeta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "web";
    meta.n_labels = tmeta.n_labels = 1;
    meta.labels = tmeta.labels = labels;
    FgKube__LabelSelector__MatchLabelsEntry match = FG_KUBE__LABEL_SELECTOR__MATCH_LABELS_ENTRY__INIT;
    FgKube__LabelSelector__MatchLabelsEntry *matches[] = { &match };
    match.key = "app";
    match.value = "web";
    FgKube__LabelSelector selector = FG_KUBE__LABEL_SELECTOR__INIT;
    selector.n_matchlabels = 1;
    selector.matchlabels = matches;

    FgKube__ContainerPort port = FG_KUBE__CONTAINER_PORT__INIT, *ports[] = { &port };
    port.has_containerport = 1;
    port.containerport = 8080;
    port.protocol = "TCP";
    FgKube__EnvVar env = FG_KUBE__ENV_VAR__INIT, *envs[] = { &env };
    env.name = "MODE";
    env.value = "fast";
    FgKube__Quantity cpu = FG_KUBE__QUANTITY__INIT, mem = FG_KUBE__QUANTITY__INIT;
    cpu.string = "500m";
    mem.string = "64Mi";
    FgKube__ResourceRequirements__LimitsEntry lim = FG_KUBE__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT;
    FgKube__ResourceRequirements__LimitsEntry *lims[] = { &lim };
    lim.key = "cpu";
    lim.value = &cpu;
    FgKube__ResourceRequirements__RequestsEntry req = FG_KUBE__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    FgKube__ResourceRequirements__RequestsEntry *reqs[] = { &req };
    req.key = "memory";
    req.value = &mem;
    FgKube__ResourceRequirements res = FG_KUBE__RESOURCE_REQUIREMENTS__INIT;
    res.n_limits = res.n_requests = 1;
    res.limits = lims;
    res.requests = reqs;
    char *command[] = { "nginx", "-g" }, *args[] = { "daemon off;" };
    FgKube__Container c = FG_KUBE__CONTAINER__INIT, *containers[] = { &c };
    c.name = "nginx";
    c.image = "nginx:1.27";
    c.n_command = 2;
    c.command = command;
    c.n_args = 1;
    c.args = args;
    c.n_ports = 1;
    c.ports = ports;
    c.n_env = 1;
    c.env = envs;
    c.resources = &res;
    FgKube__PodSpec pod = FG_KUBE__POD_SPEC__INIT;
    pod.n_containers = 1;
    pod.containers = containers;
    FgKube__PodTemplateSpec tmpl = FG_KUBE__POD_TEMPLATE_SPEC__INIT;
    tmpl.metadata = &tmeta;
    tmpl.spec = &pod;
    FgKube__DeploymentStrategy strategy = FG_KUBE__DEPLOYMENT_STRATEGY__INIT;
    FgKube__DeploymentSpec spec = FG_KUBE__DEPLOYMENT_SPEC__INIT;
    spec.has_replicas = 1;
    spec.replicas = 3;
    spec.selector = &selector;
    spec.template_ = &tmpl;
    spec.strategy = &strategy;
    FgKube__Deployment d = FG_KUBE__DEPLOYMENT__INIT;
    d.metadata = &meta;
    d.spec = &spec;
    size_t len;
    uint8_t *body = pb_body("apps/v1", "Deployment", &d.base, &len);
    assert_int_equal(send_pb("POST", "/apis/apps/v1/namespaces/default/deployments", body, len, NULL), 201);
    free(body);

    json_object *got = tc_get_json(BASE, "/apis/apps/v1/namespaces/default/deployments/web");
    assert_string_equal(fg_json_get_str(got, "apiVersion", NULL), "apps/v1");
    int64_t n = 0;
    assert_true(fg_json_get_int64(got, &n, "spec", "replicas", NULL));
    assert_int_equal(n, 3);
    assert_string_equal(fg_json_get_str(got, "spec", "selector", "matchLabels", "app", NULL), "web");
    assert_string_equal(fg_json_get_str(got, "spec", "template", "metadata", "labels", "app", NULL), "web");
    assert_non_null(fg_json_get(got, "spec", "strategy", NULL)); /* present and empty, as Go writes it */
    json_object *ct = json_object_array_get_idx(fg_json_get(got, "spec", "template", "spec", "containers", NULL), 0);
    assert_string_equal(fg_json_get_str(ct, "image", NULL), "nginx:1.27");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(ct, "command", NULL), 1)), "-g");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(ct, "args", NULL), 0)),
                        "daemon off;");
    json_object *p0 = json_object_array_get_idx(fg_json_get(ct, "ports", NULL), 0);
    assert_true(fg_json_get_int64(p0, &n, "containerPort", NULL));
    assert_int_equal(n, 8080);
    assert_string_equal(fg_json_get_str(p0, "protocol", NULL), "TCP");
    assert_null(fg_json_get(p0, "hostPort", NULL));
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(fg_json_get(ct, "env", NULL), 0), "value", NULL),
                        "fast");
    assert_string_equal(fg_json_get_str(ct, "resources", "limits", "cpu", NULL), "500m");
    assert_string_equal(fg_json_get_str(ct, "resources", "requests", "memory", NULL), "64Mi");
    json_object_put(got);

    /* replicas 0 is present, not dropped. */
    meta.name = "idle";
    spec.replicas = 0;
    body = pb_body("apps/v1", "Deployment", &d.base, &len);
    assert_int_equal(send_pb("POST", "/apis/apps/v1/namespaces/default/deployments", body, len, NULL), 201);
    free(body);
    got = tc_get_json(BASE, "/apis/apps/v1/namespaces/default/deployments/idle");
    assert_true(fg_json_get_int64(got, &n, "spec", "replicas", NULL));
    assert_int_equal(n, 0);
    json_object_put(got);
}

static void job_with_command(void **state)
{
    (void)state;
    size_t len;
    uint8_t *body = pb_job_body(&len);
    assert_int_equal(send_pb("POST", "/apis/batch/v1/namespaces/default/jobs", body, len, NULL), 201);
    free(body);
    json_object *got = tc_get_json(BASE, "/apis/batch/v1/namespaces/default/jobs/j");
    assert_string_equal(fg_json_get_str(got, "spec", "template", "spec", "restartPolicy", NULL), "Never");
    json_object *ct = json_object_array_get_idx(fg_json_get(got, "spec", "template", "spec", "containers", NULL), 0);
    assert_string_equal(fg_json_get_str(ct, "image", NULL), "busybox");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(ct, "command", NULL), 1)), "hi");
    json_object_put(got);
}

/* Fields kube.proto does not declare (newer fields, status) are skipped. */
static void unknown_fields_are_skipped(void **state)
{
    (void)state;
    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "extra";
    FgKube__ConfigMap cm = FG_KUBE__CONFIG_MAP__INIT;
    cm.metadata = &meta;
    size_t raw_len = fg_kube__config_map__get_packed_size(&cm);
    static const uint8_t extra[] = { 0x98, 0x06, 0x01,                  /* field 99, varint 1 */
                                     0x92, 0x03, 0x02, 'h', 'i' };      /* field 50, 2 bytes */
    uint8_t *raw = fg_malloc(raw_len + sizeof(extra));
    fg_kube__config_map__pack(&cm, raw);
    memcpy(raw + raw_len, extra, sizeof(extra));
    size_t len;
    uint8_t *body = pb_envelope("v1", "ConfigMap", raw, raw_len + sizeof(extra), &len);
    assert_int_equal(send_pb("POST", "/api/v1/namespaces/default/configmaps", body, len, NULL), 201);
    free(body);
    free(raw);
    json_object *got = tc_get_json(BASE, "/api/v1/namespaces/default/configmaps/extra");
    assert_string_equal(fg_json_get_str(got, "metadata", "name", NULL), "extra");
    json_object_put(got);
}

static void bad_bodies(void **state)
{
    (void)state;
    const char *cms = "/api/v1/namespaces/default/configmaps";
    expect_pb_status(cms, (const uint8_t *)"{\"kind\":\"ConfigMap\"}", 20, 400, "BadRequest", "prefix");
    expect_pb_status(cms, (const uint8_t *)"k8s", 3, 400, "BadRequest", "prefix");
    expect_pb_status(cms, (const uint8_t *)"k8s\0", 4, 400, "BadRequest", "names no kind");

    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "bad";
    FgKube__ConfigMap cm = FG_KUBE__CONFIG_MAP__INIT;
    cm.metadata = &meta;
    size_t len;
    uint8_t *body = pb_body("v1", "ConfigMap", &cm.base, &len);
    expect_pb_status(cms, body, len - 3, 400, "BadRequest", "runtime.Unknown"); /* truncated */
    expect_pb_status("/api/v1/namespaces", body, len, 400, "BadRequest", "request is for v1 Namespace");
    free(body);
    body = pb_body("apps/v1", "ConfigMap", &cm.base, &len);
    expect_pb_status(cms, body, len, 400, "BadRequest", "apps/v1 ConfigMap");
    free(body);

    static const uint8_t not_a_message[] = { 0x0a, 0x05, 'a' }; /* metadata of 5 bytes, 1 given */
    body = pb_envelope("v1", "ConfigMap", not_a_message, sizeof(not_a_message), &len);
    expect_pb_status(cms, body, len, 400, "BadRequest", "not a valid ConfigMap message");
    free(body);

    FgKube__Namespace pod = FG_KUBE__NAMESPACE__INIT; /* any message: the kind is what is refused */
    pod.metadata = &meta;
    body = pb_body("v1", "Pod", &pod.base, &len);
    expect_pb_status("/api/v1/namespaces/default/pods", body, len, 415, "UnsupportedMediaType", "kind Pod");
    free(body);

    /* Nothing was stored by any of them. */
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/namespaces/default/configmaps/bad", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 404);
    tc_reply_cleanup(&r);
}

/* Random bytes, with and without the prefix, over HTTP: every reply is 400 or 415 and the server lives. */
static void random_garbage_over_http(void **state)
{
    (void)state;
    srand(7);
    uint8_t body[96];
    for (int i = 0; i < 300; i++) {
        size_t len = (size_t)(rand() % (int)sizeof(body));
        for (size_t j = 0; j < len; j++)
            body[j] = (uint8_t)rand();
        if (i % 2 && len >= 4)
            memcpy(body, "k8s\0", 4);
        long code = send_pb("POST", "/api/v1/namespaces/default/secrets", body, len, NULL);
        if (code != 400 && code != 415)
            fail_msg("random body %d (%zu bytes): %ld", i, len, code);
    }
    json_object *v = tc_get_json(BASE, "/version");
    json_object_put(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(namespace_and_configmap),
        cmocka_unit_test(secret_bytes_are_base64),
        cmocka_unit_test(deployment_with_pod_template),
        cmocka_unit_test(job_with_command),
        cmocka_unit_test(unknown_fields_are_skipped),
        cmocka_unit_test(bad_bodies),
        cmocka_unit_test(random_garbage_over_http),
    };
    return cmocka_run_group_tests(tests, tc_setup, tc_teardown);
}
