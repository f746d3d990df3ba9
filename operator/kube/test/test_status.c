/* Tests for mapping API server replies to errors and Status details. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>
#include <time.h>

#include "base/mem.h"
#include "operator/kube/status.h"

static enum fg_err map(long code, const char *body, const char *retry, struct fg_kube_status *st)
{
    return fg_kube_status_from_reply(code, body, body ? strlen(body) : 0, retry, st);
}

static void every_code_maps(void **state)
{
    (void)state;
    static const struct { long code; enum fg_err err; } table[] = {
        { 200, FG_OK }, { 201, FG_OK }, { 204, FG_OK },
        { 400, FG_E_KUBE_BAD_REQUEST }, { 401, FG_E_KUBE_UNAUTHORIZED }, { 403, FG_E_KUBE_FORBIDDEN },
        { 404, FG_E_KUBE_NOT_FOUND }, { 405, FG_E_KUBE_METHOD_NOT_ALLOWED }, { 409, FG_E_KUBE_CONFLICT },
        { 410, FG_E_KUBE_GONE }, { 415, FG_E_KUBE_UNSUPPORTED_MEDIA }, { 422, FG_E_KUBE_INVALID },
        { 429, FG_E_KUBE_TOO_MANY_REQUESTS }, { 500, FG_E_KUBE_INTERNAL }, { 502, FG_E_KUBE_INTERNAL },
        { 503, FG_E_KUBE_UNAVAILABLE }, { 504, FG_E_KUBE_TIMEOUT }, { 302, FG_E_KUBE_OTHER },
        { 418, FG_E_KUBE_OTHER },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        struct fg_kube_status st;
        assert_int_equal(map(table[i].code, "", NULL, &st), table[i].err);
        assert_int_equal(st.err, table[i].err);
        assert_int_equal(st.http_code, table[i].code);
        if (table[i].err)
            assert_non_null(st.message);
        fg_kube_status_cleanup(&st);
    }
}

static void conflict_vs_already_exists(void **state)
{
    (void)state;
    struct fg_kube_status st;
    assert_int_equal(map(409, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"AlreadyExists\","
                              "\"message\":\"pods \\\"a\\\" already exists\",\"code\":409}", NULL, &st),
                     FG_E_KUBE_ALREADY_EXISTS);
    assert_string_equal(st.reason, "AlreadyExists");
    assert_string_equal(st.message, "pods \"a\" already exists");
    fg_kube_status_cleanup(&st);
    assert_int_equal(map(409, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"the object has been "
                              "modified\"}", NULL, &st), FG_E_KUBE_CONFLICT);
    assert_string_equal(st.reason, "Conflict");
    fg_kube_status_cleanup(&st);
}

static void gone_and_invalid_with_causes(void **state)
{
    (void)state;
    struct fg_kube_status st;
    assert_int_equal(map(410, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"message\":\"too old resource version\"}",
                         NULL, &st), FG_E_KUBE_GONE);
    assert_string_equal(st.reason, "Expired");
    fg_kube_status_cleanup(&st);
    const char *body = "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"message\":\"GpuWorkload.fracgpu.io \\\"w\\\" "
                       "is invalid\",\"details\":{\"causes\":[{\"reason\":\"FieldValueInvalid\",\"message\":\"must be "
                       "positive\",\"field\":\"spec.compute.minMilli\"},{\"reason\":\"FieldValueRequired\","
                       "\"field\":\"spec.policy\"},7]}}";
    assert_int_equal(map(422, body, NULL, &st), FG_E_KUBE_INVALID);
    assert_int_equal(st.ncauses, 2);
    assert_string_equal(st.causes[0].reason, "FieldValueInvalid");
    assert_string_equal(st.causes[0].message, "must be positive");
    assert_string_equal(st.causes[0].field, "spec.compute.minMilli");
    assert_string_equal(st.causes[1].field, "spec.policy");
    assert_null(st.causes[1].message);
    fg_kube_status_cleanup(&st);
}

static void retry_after_from_header_or_details(void **state)
{
    (void)state;
    struct fg_kube_status st;
    const char *body = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":3}}";
    assert_int_equal(map(429, body, NULL, &st), FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 3);
    fg_kube_status_cleanup(&st);
    assert_int_equal(map(429, body, "7", &st), FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 7);
    fg_kube_status_cleanup(&st);
    assert_int_equal(map(503, "busy", " 2", &st), FG_E_KUBE_UNAVAILABLE);
    assert_int_equal(st.retry_after_s, 2);
    fg_kube_status_cleanup(&st);
    /* The HTTP-date form. */
    char date[64];
    time_t later = time(NULL) + 120;
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime(&later));
    assert_int_equal(map(429, NULL, date, &st), FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_true(st.retry_after_s >= 110 && st.retry_after_s <= 120);
    fg_kube_status_cleanup(&st);
    assert_int_equal(map(429, NULL, "soon", &st), FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 0);
    fg_kube_status_cleanup(&st);
}

static void non_status_bodies_keep_an_excerpt(void **state)
{
    (void)state;
    struct fg_kube_status st;
    assert_int_equal(map(502, "<html><body>Bad\x01gateway</body></html>", NULL, &st), FG_E_KUBE_INTERNAL);
    assert_null(st.reason);
    assert_non_null(strstr(st.message, "502"));
    assert_non_null(strstr(st.message, "<html><body>Bad?gateway"));
    fg_kube_status_cleanup(&st);
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(map(500, big, NULL, &st), FG_E_KUBE_INTERNAL);
    assert_true(strlen(st.message) < 300);
    assert_non_null(strstr(st.message, "..."));
    fg_kube_status_cleanup(&st);
    /* JSON that is not a Status is treated like any other body. */
    assert_int_equal(map(404, "{\"kind\":\"Pod\"}", NULL, &st), FG_E_KUBE_NOT_FOUND);
    assert_null(st.reason);
    assert_non_null(strstr(st.message, "{\"kind\":\"Pod\"}"));
    fg_kube_status_cleanup(&st);
    assert_int_equal(map(500, "{\"kind\":\"Status\",", NULL, &st), FG_E_KUBE_INTERNAL);
    fg_kube_status_cleanup(&st);
    /* Cleanup is idempotent. */
    fg_kube_status_cleanup(&st);
}

static void status_object_from_watch_error(void **state)
{
    (void)state;
    struct fg_kube_status st;
    json_object *o = json_tokener_parse("{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
                                        "\"message\":\"too old resource version: 1 (5)\"}");
    assert_int_equal(fg_kube_status_from_object(o, &st), FG_E_KUBE_GONE);
    assert_int_equal(st.http_code, 410);
    assert_string_equal(st.message, "too old resource version: 1 (5)");
    fg_kube_status_cleanup(&st);
    json_object_put(o);
    o = json_tokener_parse("{\"kind\":\"Status\",\"reason\":\"Gone\"}");
    assert_int_equal(fg_kube_status_from_object(o, &st), FG_E_KUBE_GONE);
    assert_int_equal(st.http_code, 410);
    fg_kube_status_cleanup(&st);
    json_object_put(o);
    o = json_tokener_parse("[1]");
    assert_int_equal(fg_kube_status_from_object(o, &st), FG_E_KUBE_OTHER);
    assert_non_null(st.message);
    fg_kube_status_cleanup(&st);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_maps),
        cmocka_unit_test(conflict_vs_already_exists),
        cmocka_unit_test(gone_and_invalid_with_causes),
        cmocka_unit_test(retry_after_from_header_or_details),
        cmocka_unit_test(non_status_bodies_keep_an_excerpt),
        cmocka_unit_test(status_object_from_watch_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
