/* Tests of ResourceLists and of what a pod requests (kube's PodRequests rules). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "operator/kube/resources.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(s, strlen(s), 0, &o, NULL), FG_OK);
    return o;
}

static struct fg_resources requests(const char *pod_json)
{
    json_object *pod = parse(pod_json);
    struct fg_resources r;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_pod_requests(pod, &r, msg) != FG_OK)
        fail_msg("%s", msg);
    json_object_put(pod);
    return r;
}

static void test_containers_sum(void **state)
{
    (void)state;
    struct fg_resources r = requests(
        "{\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"}}},"
        "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"1\"},\"limits\":{\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}},"
        "{\"name\":\"c\"}]}}");
    assert_int_equal(fg_resources_get(&r, "cpu"), 1250);
    assert_int_equal(fg_resources_get(&r, "memory"), (64ll + 1024) * 1024 * 1024 * 1000);
    assert_int_equal(fg_resources_get(&r, "nvidia.com/gpu"), 1000);   /* a limit stands in for the request */
    assert_int_equal(fg_resources_get(&r, "pods"), 0);
}

static void test_nonzero_defaults(void **state)
{
    (void)state;
    json_object *pod = parse(
        "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"300m\"}}}],"
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"50m\"}}},{\"name\":\"b\"},"
        "{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"0\",\"memory\":\"1Mi\"}}}]}}");
    struct fg_resources r, plain;
    assert_int_equal(fg_pod_requests_nonzero(pod, &r, NULL), FG_OK);
    assert_int_equal(fg_pod_requests(pod, &plain, NULL), FG_OK);
    /* a: 50m (its limit); b: 100m default; c: an explicit 0 stays 0; the init container's 300m wins */
    assert_int_equal(fg_resources_get(&r, "cpu"), 300);
    /* a and b default to 200Mi each, c asks 1Mi; the init container defaults to 200Mi */
    assert_int_equal(fg_resources_get(&r, "memory"), 401ll * 1024 * 1024 * 1000);
    assert_int_equal(fg_resources_get(&plain, "cpu"), 300);
    assert_int_equal(fg_resources_get(&plain, "memory"), 1ll * 1024 * 1024 * 1000);
    json_object_put(pod);
}

static void test_init_and_sidecars(void **state)
{
    (void)state;
    /* an ordinary init container bigger than the app wins; sidecars add to everything after them */
    struct fg_resources r = requests(
        "{\"spec\":{\"initContainers\":["
        "{\"name\":\"setup\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}},"
        "{\"name\":\"proxy\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}},"
        "{\"name\":\"late\",\"resources\":{\"requests\":{\"cpu\":\"1950m\"}}}],"
        "\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}],"
        "\"overhead\":{\"cpu\":\"10m\"}}}");
    /* max(app 500 + proxy 100, setup 2000, late 1950 + proxy 100 = 2050) + overhead 10 */
    assert_int_equal(fg_resources_get(&r, "cpu"), 2060);
}

static void test_bad_quantities(void **state)
{
    (void)state;
    json_object *pod = parse("{\"spec\":{\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}");
    struct fg_resources r;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_pod_requests(pod, &r, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, "containers[0] (app): cpu"));
    json_object_put(pod);
    pod = parse("{\"spec\":{\"containers\":[],\"overhead\":[1]}}");
    assert_int_equal(fg_pod_requests(pod, &r, msg), FG_E_PARSE);
    json_object_put(pod);
}

static void test_arithmetic(void **state)
{
    (void)state;
    struct fg_resources a = { 0 }, b = { 0 };
    assert_int_equal(fg_resources_add(&a, "cpu", 1000), FG_OK);
    assert_int_equal(fg_resources_add(&a, "cpu", 500), FG_OK);
    assert_int_equal(fg_resources_add(&a, "cpu", INT64_MAX), FG_E_TOO_BIG);
    assert_int_equal(fg_resources_get(&a, "cpu"), 1500);
    assert_int_equal(fg_resources_set(&b, "cpu", 2000), FG_OK);
    assert_int_equal(fg_resources_set(&b, "pods", 3000), FG_OK);
    assert_string_equal(fg_resources_exceeds(&b, &a), "cpu");
    assert_null(fg_resources_exceeds(&a, &b));
    fg_resources_sub(&b, &a);
    assert_int_equal(fg_resources_get(&b, "cpu"), 500);
    fg_resources_sum(&b, &a);
    assert_int_equal(fg_resources_get(&b, "cpu"), 2000);
    char name[80];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(fg_resources_set(&a, name, 1), FG_E_TOO_BIG);
    struct fg_resources full = { 0 };
    for (int i = 0; i < FG_RESOURCES_MAX; i++) {
        char n[16];
        snprintf(n, sizeof n, "r%d", i);
        assert_int_equal(fg_resources_set(&full, n, i), FG_OK);
    }
    assert_int_equal(fg_resources_add(&full, "one-more", 1), FG_E_TOO_BIG);
    assert_int_equal(full.n, FG_RESOURCES_MAX);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    json_object *list = parse("{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":110,\"nvidia.com/gpu\":\"8\"}");
    struct fg_resources r;
    assert_int_equal(fg_resources_from_json(list, &r, NULL), FG_OK);
    json_object *back = fg_resources_to_json(&r);
    assert_string_equal(fg_json_get_str(back, "memory", NULL), "256Gi");
    assert_string_equal(fg_json_get_str(back, "pods", NULL), "110");
    assert_string_equal(fg_json_get_str(back, "cpu", NULL), "32");
    json_object_put(back);
    json_object_put(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_containers_sum), cmocka_unit_test(test_init_and_sidecars),
        cmocka_unit_test(test_nonzero_defaults),
        cmocka_unit_test(test_bad_quantities), cmocka_unit_test(test_arithmetic),
        cmocka_unit_test(test_json_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
