/* The webhook's HTTPS endpoint through libcurl: nothing is served before a certificate is set (not
 * even in the clear); reviews are answered on a kept-alive connection; bad requests get 400 (counted),
 * oversized ones 413, other methods 405 and other paths 404; a new certificate from a new CA is served
 * to the next connection while the open one goes on. */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/pki.h"
#include "operator/webhook/server.h"

static json_object *nothing(void *ctx, const char *ns, const char *group, const char *kind, const char *name)
{
    (void)ctx, (void)ns, (void)group, (void)kind, (void)name;
    return NULL;
}

static json_object *no_ns(void *ctx, const char *ns)
{
    (void)ctx, (void)ns;
    return NULL;
}

static json_object *no_gw(void *ctx, const char *ns, const char *name)
{
    (void)ctx, (void)ns, (void)name;
    return NULL;
}

static json_object *no_policy(void *ctx, const char *name)
{
    (void)ctx, (void)name;
    return NULL;
}

static const struct fg_admit_sources sources = { &fg_workload_builtin_kinds, nothing, no_ns, no_gw, no_policy, NULL, NULL, NULL };

#define REVIEW                                                                                                         \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-7\",\"resource\":{"     \
    "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":\"ml\",\"operation\":\"CREATE\",\"object\":{"   \
    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{" \
    "\"nvidia.com/gpu\":\"1\"}}}]}}}}"

struct pki {
    struct fg_pki_pair ca, leaf;
};

static struct pki make_pki(void)
{
    static const char *const dns[] = { "localhost", NULL };
    static const char *const ips[] = { "127.0.0.1", NULL };
    int64_t now = fg_clock_wall_ms();
    struct fg_pki_request ca = { "test-ca", NULL, NULL, true, now - 60000, now + 3600000 };
    struct fg_pki_request leaf = { "fracgpu-webhook", dns, ips, false, now - 60000, now + 3600000 };
    struct pki p;
    assert_int_equal(fg_pki_issue(&ca, NULL, &p.ca, NULL), FG_OK);
    assert_int_equal(fg_pki_issue(&leaf, &p.ca, &p.leaf, NULL), FG_OK);
    return p;
}

static void free_pki(struct pki *p)
{
    fg_pki_pair_cleanup(&p->ca);
    fg_pki_pair_cleanup(&p->leaf);
}

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
    return fg_buf_append(ud, data, size * n) == FG_OK ? size * n : 0;
}

/* One request on handle h (reused: keep-alive), trusting ca. Returns the curl code; *status the HTTP one. */
static CURLcode request(CURL *h, unsigned port, const char *ca, const char *method, const char *path, const char *body,
                        size_t body_len, long *status, struct fg_buf *out)
{
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", port, path);
    struct curl_blob blob = { (void *)ca, strlen(ca), CURL_BLOB_COPY };
    fg_buf_reset(out);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(headers);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return rc;
}

static void serves_reviews_over_tls(void **state)
{
    (void)state;
    struct fg_metrics *metrics = fg_metrics_new();
    struct fg_webhook_server *s;
    struct fg_webhook_server_opts opts = { "127.0.0.1:0", &sources, metrics };
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_webhook_server_new(&opts, &s, msg) != FG_OK)
        fail_msg("%s", msg);
    assert_int_equal(fg_webhook_server_start(s, msg), FG_OK);
    unsigned port = fg_webhook_server_port(s);
    struct pki a = make_pki(), b = make_pki();
    struct fg_buf out = FG_BUF_INIT;
    long status;

    /* no certificate yet: the handshake fails, and nothing answers in the clear */
    assert_false(fg_webhook_server_ready(s));
    CURL *h = curl_easy_init();
    assert_int_not_equal(request(h, port, a.ca.cert_pem, "POST", FG_WEBHOOK_PATH, REVIEW, strlen(REVIEW), &status, &out),
                         CURLE_OK);
    curl_easy_cleanup(h);
    CURL *plain = curl_easy_init();
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u" FG_WEBHOOK_PATH, port);
    curl_easy_setopt(plain, CURLOPT_URL, url);
    curl_easy_setopt(plain, CURLOPT_TIMEOUT, 5L);
    curl_easy_setopt(plain, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(plain, CURLOPT_WRITEDATA, &out);
    CURLcode prc = curl_easy_perform(plain);
    long pstatus = 0;
    curl_easy_getinfo(plain, CURLINFO_RESPONSE_CODE, &pstatus);
    assert_true(prc != CURLE_OK || pstatus != 200);
    curl_easy_cleanup(plain);

    /* a bad certificate is refused and changes nothing */
    struct fg_pki_pair wrong = { a.leaf.cert_pem, b.leaf.key_pem };
    assert_int_equal(fg_webhook_server_set_cert(s, &wrong, msg), FG_E_INVAL);
    assert_false(fg_webhook_server_ready(s));

    assert_int_equal(fg_webhook_server_set_cert(s, &a.leaf, msg), FG_OK);
    assert_true(fg_webhook_server_ready(s));
    h = curl_easy_init();
    for (int i = 0; i < 3; i++) { /* one connection, kept alive */
        assert_int_equal(request(h, port, a.ca.cert_pem, "POST", FG_WEBHOOK_PATH, REVIEW, strlen(REVIEW), &status, &out),
                         CURLE_OK);
        assert_int_equal(status, 200);
        json_object *resp = json_tokener_parse(fg_buf_str(&out));
        assert_string_equal(fg_json_get_str(resp, "response", "uid", NULL), "u-7");
        assert_true(json_object_get_boolean(fg_json_get(resp, "response", "allowed", NULL)));
        json_object_put(resp);
    }
    long connects = -1;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    assert_int_equal(connects, 0); /* the last request reused the connection */

    /* bad requests */
    assert_int_equal(request(h, port, a.ca.cert_pem, "POST", FG_WEBHOOK_PATH, "{\"kind\":", 8, &status, &out), CURLE_OK);
    assert_int_equal(status, 400);
    assert_non_null(strstr(fg_buf_str(&out), "not JSON"));
    const char *v1beta1 = "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}";
    assert_int_equal(request(h, port, a.ca.cert_pem, "POST", FG_WEBHOOK_PATH, v1beta1, strlen(v1beta1), &status, &out),
                     CURLE_OK);
    assert_int_equal(status, 400);
    assert_int_equal(request(h, port, a.ca.cert_pem, "GET", FG_WEBHOOK_PATH, NULL, 0, &status, &out), CURLE_OK);
    assert_int_equal(status, 405);
    assert_int_equal(request(h, port, a.ca.cert_pem, "POST", "/validate", REVIEW, strlen(REVIEW), &status, &out), CURLE_OK);
    assert_int_equal(status, 404);
    size_t big = FG_REVIEW_MAX + 1024;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    CURLcode rc = request(h, port, a.ca.cert_pem, "POST", FG_WEBHOOK_PATH, huge, big, &status, &out);
    free(huge);
    assert_true(rc != CURLE_OK || status == 413); /* evhttp may close before the whole body is sent */
    curl_easy_cleanup(h);

    /* a new certificate from another CA: new connections get it, the old CA no longer verifies them */
    assert_int_equal(fg_webhook_server_set_cert(s, &b.leaf, msg), FG_OK);
    h = curl_easy_init();
    assert_int_not_equal(request(h, port, a.ca.cert_pem, "POST", FG_WEBHOOK_PATH, REVIEW, strlen(REVIEW), &status, &out),
                         CURLE_OK);
    curl_easy_cleanup(h);
    h = curl_easy_init();
    assert_int_equal(request(h, port, b.ca.cert_pem, "POST", FG_WEBHOOK_PATH, REVIEW, strlen(REVIEW), &status, &out),
                     CURLE_OK);
    assert_int_equal(status, 200);
    curl_easy_cleanup(h);

    struct fg_buf text = FG_BUF_INIT;
    fg_metrics_write(metrics, &text);
    assert_non_null(strstr(fg_buf_str(&text), "fracgpu_webhook_admissions_total{outcome=\"not-automated\"} 4"));
    assert_non_null(strstr(fg_buf_str(&text), "fracgpu_webhook_bad_requests_total 2"));
    fg_buf_cleanup(&text);
    fg_buf_cleanup(&out);
    free_pki(&a);
    free_pki(&b);
    fg_webhook_server_free(s);
    fg_metrics_free(metrics);
}

static void bad_listen_addresses(void **state)
{
    (void)state;
    struct fg_metrics *metrics = fg_metrics_new();
    const char *bad[] = { "nowhere", "127.0.0.1:99999", "203.0.113.9:9443" };
    for (size_t i = 0; i < 3; i++) {
        struct fg_webhook_server *s = NULL;
        struct fg_webhook_server_opts opts = { bad[i], &sources, metrics };
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_not_equal(fg_webhook_server_new(&opts, &s, msg), FG_OK);
        assert_non_null(strstr(msg, bad[i]));
        assert_null(s);
    }
    fg_metrics_free(metrics);
}

int main(void)
{
    fg_log_set_level(FG_LOG_ERROR);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(serves_reviews_over_tls),
        cmocka_unit_test(bad_listen_addresses),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
