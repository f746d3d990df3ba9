/* Tests of the ExecCredential protocol: what a plugin is told (KUBERNETES_EXEC_INFO) and how its
 * output is read — both API versions, every timestamp form, and every malformed answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/exec_internal.h"

#define V1 "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"

static void parse_ok(const char *api, const char *text, struct fg__kube_cred *cred)
{
    char err[FG_ERRMSG_MAX] = "";
    enum fg_err rc = fg__kube_exec_parse(api, text, strlen(text), cred, err);
    if (rc != FG_OK)
        fail_msg("%s: %s", text, err);
}

static void v1_and_v1beta1_tokens(void **state)
{
    (void)state;
    struct fg__kube_cred c;
    parse_ok(V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-1\","
                 "\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}", &c);
    assert_string_equal(c.token, "tok-1");
    assert_null(c.cert_pem);
    assert_int_equal(c.expiry_ms, 1893553445000LL);
    fg__kube_cred_cleanup(&c);
    assert_null(c.token);

    /* v1beta1 as `aws eks get-token` prints it; spec and unknown fields are ignored */
    parse_ok(V1BETA1, "{\"kind\": \"ExecCredential\", \"apiVersion\": \"" V1BETA1 "\", \"spec\": {}, "
                      "\"status\": {\"expirationTimestamp\": \"2028-02-29T23:59:59Z\", \"token\": \"k8s-aws-v1.abc\"}}\n",
             &c);
    assert_string_equal(c.token, "k8s-aws-v1.abc");
    assert_int_equal(c.expiry_ms, 1835481599000LL);
    fg__kube_cred_cleanup(&c);

    /* no expiry (or a null one): kept until the server refuses it */
    parse_ok(V1BETA1, "{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}", &c);
    assert_int_equal(c.expiry_ms, 0);
    fg__kube_cred_cleanup(&c);
    parse_ok(V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
                 "\"expirationTimestamp\":null}}", &c);
    assert_int_equal(c.expiry_ms, 0);
    fg__kube_cred_cleanup(&c);
}

static void timestamps_with_offsets_and_fractions(void **state)
{
    (void)state;
    static const struct {
        const char *ts;
        long long ms;
    } cases[] = {
        { "2030-01-02T05:04:05.25+02:00", 1893553445250LL },
        { "2030-01-01T22:04:05-05:00", 1893553445000LL },
        { "2030-01-02t03:04:05.999999999z", 1893553445999LL },
        { "2030-01-02T03:34:05+00:30", 1893553445000LL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = fg_asprintf("{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
                                 "\"expirationTimestamp\":\"%s\"}}", cases[i].ts);
        struct fg__kube_cred c;
        parse_ok(V1, text, &c);
        if (c.expiry_ms != cases[i].ms)
            fail_msg("%s: %lld, want %lld", cases[i].ts, (long long)c.expiry_ms, cases[i].ms);
        fg__kube_cred_cleanup(&c);
        free(text);
    }
}

static void client_certificates(void **state)
{
    (void)state;
    struct fg__kube_cred c;
    parse_ok(V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{"
                 "\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n\","
                 "\"clientKeyData\":\"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\"}}", &c);
    assert_null(c.token);
    assert_string_equal(c.cert_pem, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    assert_non_null(strstr(c.key_pem, "PRIVATE KEY"));
    struct fg__kube_cred copy;
    fg__kube_cred_copy(&copy, &c);
    fg__kube_cred_cleanup(&c);
    assert_string_equal(copy.cert_pem, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    fg__kube_cred_cleanup(&copy);
    parse_ok(V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
                 "\"clientCertificateData\":\"C\",\"clientKeyData\":\"K\"}}", &c);
    assert_string_equal(c.token, "t");
    assert_string_equal(c.key_pem, "K");
    fg__kube_cred_cleanup(&c);
}

/* Every answer a plugin might get wrong: FG_E_PARSE, a message saying what, never the token. */
static void malformed_output(void **state)
{
    (void)state;
#define OUT(status) "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":" status "}"
#define EXPIRING(ts) OUT("{\"token\":\"s3cr3t\",\"expirationTimestamp\":" ts "}")
    static const struct {
        const char *text, *fragment;
    } cases[] = {
        { "not json {", "output is not an ExecCredential: invalid JSON" },
        { "", "output is not an ExecCredential" },
        { "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"s3cr3t\"}", "truncated" },
        { "[1,2]", "not an ExecCredential (kind \"\")" },
        { "null", "not an ExecCredential" },
        { "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"status\":{\"token\":\"s3cr3t\"}}", "kind \"Secret\"" },
        { "{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"s3cr3t\"}}", "apiVersion \"\", but the kubeconfig asks for " V1 },
        { "{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"s3cr3t\"}}",
          "apiVersion \"" V1BETA1 "\", but the kubeconfig asks for " V1 },
        { "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}", "no status" },
        { OUT("\"s3cr3t\""), "no status" },
        { OUT("{}"), "neither a token nor clientCertificateData" },
        { OUT("{\"token\":\"\"}"), "neither a token" },
        { OUT("{\"token\":42}"), "status.token is not a string" },
        { OUT("{\"clientCertificateData\":\"C\"}"), "clientCertificateData but no clientKeyData" },
        { OUT("{\"token\":\"s3cr3t\",\"clientKeyData\":\"K\"}"), "clientKeyData but no clientCertificateData" },
        { EXPIRING("\"tomorrow\""), "\"tomorrow\" is not an RFC 3339 time" },
        { EXPIRING("\"2030-13-01T00:00:00Z\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-02-30T00:00:00Z\""), "not an RFC 3339 time" },
        { EXPIRING("\"2029-02-29T00:00:00Z\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-01-02 03:04:05Z\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-01-02T03:04:05\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-01-02T03:04:05.Z\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-01-02T24:00:00Z\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-01-02T03:04:05+0200\""), "not an RFC 3339 time" },
        { EXPIRING("\"2030-01-02T03:04:05Z trailing\""), "not an RFC 3339 time" },
        { EXPIRING("1893553445"), "\"(not a string)\" is not an RFC 3339 time" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fg__kube_cred c = { .token = (char *)"stale" };
        char err[FG_ERRMSG_MAX] = "";
        enum fg_err rc = fg__kube_exec_parse(V1, cases[i].text, strlen(cases[i].text), &c, err);
        if (rc != FG_E_PARSE || !strstr(err, cases[i].fragment) || strstr(err, "s3cr3t"))
            fail_msg("case %zu: %s -> %s \"%s\", want \"%s\"", i, cases[i].text, fg_err_name(rc), err,
                     cases[i].fragment);
        assert_null(c.token);   /* nothing half-parsed is handed out */
        assert_null(c.cert_pem);
    }
#undef OUT
#undef EXPIRING
}

static void exec_info_tells_the_plugin_it_has_no_terminal(void **state)
{
    (void)state;
    struct fg_kube_exec x = { .command = "p", .api_version = V1 };
    struct fg_kube_config cfg = { .server = "https://10.0.0.1:6443", .ca_pem = "CA-PEM\n", .exec = &x,
                                  .tls_server_name = "api.internal" };
    char *info = fg__kube_exec_info(&cfg);
    assert_string_equal(info, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}");
    free(info);

    x.api_version = V1BETA1;
    x.provide_cluster_info = true;
    cfg.insecure_skip_tls_verify = true;
    info = fg__kube_exec_info(&cfg);
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(info, strlen(info), 0, &o, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(o, "apiVersion", NULL), V1BETA1);
    assert_false(json_object_get_boolean(fg_json_get(o, "spec", "interactive", NULL)));
    assert_string_equal(fg_json_get_str(o, "spec", "cluster", "server", NULL), "https://10.0.0.1:6443");
    assert_string_equal(fg_json_get_str(o, "spec", "cluster", "tls-server-name", NULL), "api.internal");
    assert_true(json_object_get_boolean(fg_json_get(o, "spec", "cluster", "insecure-skip-tls-verify", NULL)));
    assert_string_equal(fg_json_get_str(o, "spec", "cluster", "certificate-authority-data", NULL), "Q0EtUEVNCg==");
    json_object_put(o);
    free(info);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1_and_v1beta1_tokens),
        cmocka_unit_test(timestamps_with_offsets_and_fractions),
        cmocka_unit_test(client_certificates),
        cmocka_unit_test(malformed_output),
        cmocka_unit_test(exec_info_tells_the_plugin_it_has_no_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
