/* Grants: a signed placement verifies under its key and the previous one during a rotation; any
 * change to what it binds (pod, node, GPU, amounts), another key, a truncated or re-encoded value,
 * and a grant copied onto another pod do not; Secrets with missing, short or non-base64 keys are
 * refused naming the field; a bound pod's annotations read back into the grant's fields. */
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
#include "reconcilers/grant.h"
#include "reconcilers/podcontract.h"

static const unsigned char key_a[32] = "0123456789abcdef0123456789abcdef";
static const unsigned char key_b[40] = "another key, forty bytes long, for tests";

static struct fg_grant base_grant(void)
{
    return (struct fg_grant){ "7c1f5e0a-5b3e-4c57-9d5d-2f7f2b0c9a11", "gpu-node-3",
                              "GPU-5f2c1d9e-0000-4000-8000-000000000001", 300, 20480 };
}

static struct fg_grant_keys keys_of(const unsigned char *cur, size_t cur_len, const unsigned char *prev, size_t prev_len)
{
    struct fg_grant_keys k;
    memset(&k, 0, sizeof(k));
    memcpy(k.current, cur, cur_len);
    k.current_len = cur_len;
    if (prev) {
        memcpy(k.previous, prev, prev_len);
        k.previous_len = prev_len;
    }
    return k;
}

static void signs_and_verifies(void **state)
{
    (void)state;
    struct fg_grant g = base_grant();
    char v[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, key_a, sizeof(key_a), v), FG_OK);
    assert_int_equal(strlen(v), 46);
    assert_memory_equal(v, "v1.", 3);
    assert_null(strpbrk(v + 3, "+/="));
    char again[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, key_a, sizeof(key_a), again), FG_OK);
    assert_string_equal(v, again); /* deterministic: the scheduler may re-sign a retried bind */

    struct fg_grant_keys k = keys_of(key_a, sizeof(key_a), NULL, 0);
    assert_int_equal(fg_grant_verify(&g, v, &k), FG_GRANT_VALID);

    /* every bound field matters */
    struct fg_grant c = g;
    c.pod_uid = "7c1f5e0a-5b3e-4c57-9d5d-2f7f2b0c9a12";
    assert_int_equal(fg_grant_verify(&c, v, &k), FG_GRANT_MISMATCH);
    c = g, c.node = "gpu-node-4";
    assert_int_equal(fg_grant_verify(&c, v, &k), FG_GRANT_MISMATCH);
    c = g, c.gpu_uuid = "GPU-5f2c1d9e-0000-4000-8000-000000000002";
    assert_int_equal(fg_grant_verify(&c, v, &k), FG_GRANT_MISMATCH);
    c = g, c.compute_milli = 1000;
    assert_int_equal(fg_grant_verify(&c, v, &k), FG_GRANT_MISMATCH);
    c = g, c.memory_mib = 0;
    assert_int_equal(fg_grant_verify(&c, v, &k), FG_GRANT_MISMATCH);
}

static void other_keys_and_rotation(void **state)
{
    (void)state;
    struct fg_grant g = base_grant();
    char v[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, key_a, sizeof(key_a), v), FG_OK);
    struct fg_grant_keys other = keys_of(key_b, sizeof(key_b), NULL, 0);
    assert_int_equal(fg_grant_verify(&g, v, &other), FG_GRANT_MISMATCH);
    struct fg_grant_keys rotated = keys_of(key_b, sizeof(key_b), key_a, sizeof(key_a));
    assert_int_equal(fg_grant_verify(&g, v, &rotated), FG_GRANT_VALID_PREVIOUS);
    char vb[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, key_b, sizeof(key_b), vb), FG_OK);
    assert_int_equal(fg_grant_verify(&g, vb, &rotated), FG_GRANT_VALID);
    struct fg_grant_keys none;
    memset(&none, 0, sizeof(none));
    assert_int_equal(fg_grant_verify(&g, v, &none), FG_GRANT_NO_KEY);
    assert_int_equal(fg_grant_verify(&g, v, NULL), FG_GRANT_NO_KEY);
    assert_string_equal(fg_grant_verdict_name(FG_GRANT_MISMATCH), "forged or altered");
}

static void malformed_values(void **state)
{
    (void)state;
    struct fg_grant g = base_grant();
    struct fg_grant_keys k = keys_of(key_a, sizeof(key_a), NULL, 0);
    char v[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, key_a, sizeof(key_a), v), FG_OK);
    assert_int_equal(fg_grant_verify(&g, NULL, &k), FG_GRANT_MISSING);
    assert_int_equal(fg_grant_verify(&g, "", &k), FG_GRANT_MISSING);
    assert_int_equal(fg_grant_verify(&g, "v2.abc", &k), FG_GRANT_MALFORMED);
    char cut[FG_GRANT_MAX];
    snprintf(cut, sizeof(cut), "%.*s", 45, v);
    assert_int_equal(fg_grant_verify(&g, cut, &k), FG_GRANT_MALFORMED);
    char longer[FG_GRANT_MAX + 8];
    snprintf(longer, sizeof(longer), "%sA", v);
    assert_int_equal(fg_grant_verify(&g, longer, &k), FG_GRANT_MALFORMED);
    char std[FG_GRANT_MAX];
    snprintf(std, sizeof(std), "%s", v);
    std[10] = '+'; /* standard base64 alphabet: not a v1 grant */
    assert_int_equal(fg_grant_verify(&g, std, &k), FG_GRANT_MALFORMED);
    char flipped[FG_GRANT_MAX];
    snprintf(flipped, sizeof(flipped), "%s", v);
    flipped[20] = flipped[20] == 'A' ? 'B' : 'A';
    assert_int_equal(fg_grant_verify(&g, flipped, &k), FG_GRANT_MISMATCH);

    /* bad inputs to sign */
    struct fg_grant bad = g;
    bad.gpu_uuid = "";
    assert_int_equal(fg_grant_sign(&bad, key_a, sizeof(key_a), v), FG_E_INVAL);
    bad = g, bad.compute_milli = -1;
    assert_int_equal(fg_grant_sign(&bad, key_a, sizeof(key_a), v), FG_E_INVAL);
    assert_int_equal(fg_grant_sign(&g, key_a, 16, v), FG_E_INVAL);
}

static json_object *secret_with(const char *key, const char *previous)
{
    json_object *s = json_tokener_parse("{\"kind\":\"Secret\",\"data\":{}}");
    json_object *data = fg_json_get(s, "data", NULL);
    if (key)
        json_object_object_add(data, "key", json_object_new_string(key));
    if (previous)
        json_object_object_add(data, "previous", json_object_new_string(previous));
    return s;
}

static void keys_from_secrets(void **state)
{
    (void)state;
    char *a = fg_base64_encode(key_a, sizeof(key_a)), *b = fg_base64_encode(key_b, sizeof(key_b));
    char *shorty = fg_base64_encode("sixteen bytes!!!", 16);
    struct fg_grant_keys k;
    char msg[FG_ERRMSG_MAX] = "";

    json_object *s = secret_with(a, NULL);
    assert_int_equal(fg_grant_keys_from_secret(s, &k, msg), FG_OK);
    assert_int_equal(k.current_len, 32);
    assert_memory_equal(k.current, key_a, 32);
    assert_int_equal(k.previous_len, 0);
    json_object_put(s);

    s = secret_with(b, a);
    assert_int_equal(fg_grant_keys_from_secret(s, &k, msg), FG_OK);
    assert_int_equal(k.current_len, 40);
    assert_int_equal(k.previous_len, 32);
    json_object_put(s);

    s = secret_with(NULL, a);
    assert_int_equal(fg_grant_keys_from_secret(s, &k, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "no data.key"));
    assert_int_equal(k.current_len + k.previous_len, 0);
    json_object_put(s);

    s = secret_with(shorty, NULL);
    assert_int_equal(fg_grant_keys_from_secret(s, &k, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "data.key is 16 bytes"));
    json_object_put(s);

    s = secret_with(a, "not base64!");
    assert_int_equal(fg_grant_keys_from_secret(s, &k, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "data.previous is not base64"));
    assert_int_equal(k.current_len, 0); /* nothing half-loaded */
    json_object_put(s);

    assert_int_equal(fg_grant_keys_from_secret(NULL, &k, msg), FG_E_INVAL);
    free(a), free(b), free(shorty);
}

static void reads_bound_pods(void **state)
{
    (void)state;
    json_object *pod = json_tokener_parse(
        "{\"metadata\":{\"uid\":\"u-1\",\"annotations\":{\"" FG_ANN_GPU_UUID "\":\"GPU-1\",\"" FG_ANN_COMPUTE_MILLI
        "\":\"250\",\"" FG_ANN_MEMORY_MIB "\":\"whole\",\"" FG_ANN_GRANT "\":\"v1.x\"}},\"spec\":{\"nodeName\":\"n1\"}}");
    struct fg_grant g;
    char msg[FG_ERRMSG_MAX] = "";
    const char *v = fg_grant_of_pod(pod, &g, msg);
    assert_string_equal(v, "v1.x");
    assert_string_equal(g.pod_uid, "u-1");
    assert_string_equal(g.node, "n1");
    assert_string_equal(g.gpu_uuid, "GPU-1");
    assert_int_equal(g.compute_milli, 250);
    assert_int_equal(g.memory_mib, 0);

    json_object *ann = fg_json_get(pod, "metadata", "annotations", NULL);
    json_object_object_add(ann, FG_ANN_COMPUTE_MILLI, json_object_new_string("lots"));
    assert_null(fg_grant_of_pod(pod, &g, msg));
    assert_non_null(strstr(msg, FG_ANN_COMPUTE_MILLI));
    json_object_object_del(ann, FG_ANN_GPU_UUID);
    assert_null(fg_grant_of_pod(pod, &g, msg));
    assert_non_null(strstr(msg, FG_ANN_GPU_UUID));
    json_object_object_del(ann, FG_ANN_GRANT);
    assert_null(fg_grant_of_pod(pod, &g, msg));
    assert_non_null(strstr(msg, "no " FG_ANN_GRANT));
    json_object_put(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(signs_and_verifies), cmocka_unit_test(other_keys_and_rotation),
        cmocka_unit_test(malformed_values),   cmocka_unit_test(keys_from_secrets),
        cmocka_unit_test(reads_bound_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
