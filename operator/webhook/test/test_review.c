/* AdmissionReview decoding: the reviews kube-apiserver sends for a pod's CREATE, what else it may send
 * (UPDATE, DELETE, subresources, other kinds: allowed without a patch), and malformed reviews refused
 * with a message (not JSON, wrong kind or version, no request or uid, a body over the limit). The
 * response envelope carries the uid and a base64 JSON Patch. */
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
#include "operator/webhook/review.h"

#define POD "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"llm-\"},\"spec\":{}}"

/* A review of `op` on `resource` (group "", subresource sub) with object obj (NULL: none). */
static char *review(const char *op, const char *resource, const char *sub, const char *obj)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    fprintf(f,
            "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"705ab4f5-6393\","
            "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\","
            "\"resource\":\"%s\"},%s%s%s\"namespace\":\"ml\",\"operation\":\"%s\",\"userInfo\":{\"username\":\"system:"
            "serviceaccount:kube-system:replicaset-controller\"}%s%s,\"dryRun\":false}}",
            resource, sub ? "\"subResource\":\"" : "", sub ? sub : "", sub ? "\"," : "", op, obj ? ",\"object\":" : "",
            obj ? obj : "");
    fclose(f);
    return s;
}

static void parse_ok(const char *text, struct fg_review *r)
{
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_review_parse(text, strlen(text), r, msg) != FG_OK)
        fail_msg("refused: %s", msg);
}

static void pod_create(void **state)
{
    (void)state;
    char *text = review("CREATE", "pods", NULL, POD);
    struct fg_review r;
    parse_ok(text, &r);
    assert_string_equal(r.uid, "705ab4f5-6393");
    assert_string_equal(r.operation, "CREATE");
    assert_string_equal(r.ns, "ml");
    assert_true(r.is_pod_create);
    assert_false(r.dry_run);
    assert_string_equal(fg_json_get_str(r.object, "metadata", "generateName", NULL), "llm-");
    fg_review_cleanup(&r);
    free(text);
}

static void not_a_pod_create(void **state)
{
    (void)state;
    struct {
        const char *op, *resource, *sub, *obj;
    } cases[] = {
        { "UPDATE", "pods", NULL, POD },
        { "DELETE", "pods", NULL, NULL },
        { "CONNECT", "pods", "exec", "{\"kind\":\"PodExecOptions\"}" },
        { "CREATE", "pods", "binding", "{\"kind\":\"Binding\"}" },
        { "CREATE", "pods", "eviction", "{\"kind\":\"Eviction\"}" },
        { "CREATE", "configmaps", NULL, "{\"kind\":\"ConfigMap\"}" },
        { "CREATE", "pods", NULL, "{\"kind\":\"Deployment\"}" },
        { "CREATE", "pods", NULL, "[1,2]" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *text = review(cases[i].op, cases[i].resource, cases[i].sub, cases[i].obj);
        struct fg_review r;
        parse_ok(text, &r);
        assert_false(r.is_pod_create);
        fg_review_cleanup(&r);
        free(text);
    }
}

static void refuse(const char *text, size_t len, enum fg_err want, const char *detail)
{
    struct fg_review r;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_review_parse(text, len, &r, msg), want);
    if (!strstr(msg, detail))
        fail_msg("message \"%s\" lacks \"%s\"", msg, detail);
    assert_null(r.doc);
}

static void malformed_reviews(void **state)
{
    (void)state;
    const char *env = "\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"";
    char text[512];
    refuse("", 0, FG_E_PARSE, "not JSON");
    refuse("{\"apiVersion\":", 14, FG_E_PARSE, "not JSON");
    refuse("<html>", 6, FG_E_PARSE, "not JSON");
    refuse("[]", 2, FG_E_PARSE, "apiVersion missing");
    refuse("\"AdmissionReview\"", 17, FG_E_PARSE, "apiVersion");
    const char *v1beta1 = "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{"
                          "\"uid\":\"u\",\"operation\":\"CREATE\"}}";
    refuse(v1beta1, strlen(v1beta1), FG_E_PARSE, "\"admission.k8s.io/v1beta1\"");
    snprintf(text, sizeof(text), "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":{\"uid\":\"u\"}}");
    refuse(text, strlen(text), FG_E_PARSE, "kind Pod");
    snprintf(text, sizeof(text), "{%s}", env);
    refuse(text, strlen(text), FG_E_PARSE, "no request");
    snprintf(text, sizeof(text), "{%s,\"request\":\"CREATE\"}", env);
    refuse(text, strlen(text), FG_E_PARSE, "no request");
    snprintf(text, sizeof(text), "{%s,\"request\":{\"operation\":\"CREATE\"}}", env);
    refuse(text, strlen(text), FG_E_PARSE, "no uid");
    snprintf(text, sizeof(text), "{%s,\"request\":{\"uid\":\"\",\"operation\":\"CREATE\"}}", env);
    refuse(text, strlen(text), FG_E_PARSE, "no uid");
    snprintf(text, sizeof(text), "{%s,\"request\":{\"uid\":7,\"operation\":\"CREATE\"}}", env);
    refuse(text, strlen(text), FG_E_PARSE, "no uid");
    snprintf(text, sizeof(text), "{%s,\"request\":{\"uid\":\"u\"}}", env);
    refuse(text, strlen(text), FG_E_PARSE, "no operation");
    snprintf(text, sizeof(text), "{%s,\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\"}} trailing", env);
    refuse(text, strlen(text), FG_E_PARSE, "not JSON");

    /* a huge body is refused before it is parsed */
    size_t big = FG_REVIEW_MAX + 1;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    refuse(huge, big, FG_E_TOO_BIG, "more than");
    free(huge);
}

/* The response: the uid, allowed, and a patch that decodes back to the JSON Patch. */
static void responses(void **state)
{
    (void)state;
    char *text = fg_review_allow("705ab4f5-6393", NULL, NULL);
    assert_string_equal(text, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{"
                              "\"uid\":\"705ab4f5-6393\",\"allowed\":true}}");
    free(text);

    json_object *patch = json_tokener_parse("[{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"fracgpu-scheduler\"}]");
    text = fg_review_allow("u1", patch, "left whole: podAntiAffinity");
    json_object *doc = json_tokener_parse(text);
    assert_string_equal(fg_json_get_str(doc, "response", "patchType", NULL), "JSONPatch");
    const char *b64 = fg_json_get_str(doc, "response", "patch", NULL);
    unsigned char *decoded = fg_base64_decode(b64, NULL);
    assert_non_null(decoded);
    assert_string_equal((char *)decoded, fg_json_text(patch, NULL));
    free(decoded);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(doc, "response", "warnings", NULL), 0)),
                        "left whole: podAntiAffinity");
    json_object_put(doc);
    json_object_put(patch);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_create),
        cmocka_unit_test(not_a_pod_create),
        cmocka_unit_test(malformed_reviews),
        cmocka_unit_test(responses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
