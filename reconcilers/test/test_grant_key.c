/* The grant key's plan: a missing or empty Secret gets a fresh 32-byte key (a different one each time);
 * a valid one is left alone until its rotation, when the key moves to previous and a fresh one takes
 * its place — a grant signed before still verifies, and stops verifying once the grace drops previous;
 * a rotation long overdue rotates (never only retires); a missing, short or non-base64 key is replaced,
 * a broken previous dropped with the key kept; a key without a believable rotation time is adopted
 * unchanged; no problem text carries key material; the policy must have 0 < grace < rotation. */
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
#include "base/timefmt.h"
#include "reconcilers/grant.h"
#include "reconcilers/grant_key.h"

#define NS "fracgpu-system"
#define HOUR 3600000ll
#define T0 1764151740000ll /* 2025-11-26T10:09:00Z */

static const struct fg_grant_key_policy policy = FG_GRANT_KEY_POLICY_DEFAULT;

/* base64 of 32 bytes 'A' and 'B', and of 16 bytes */
#define KEY_A "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
#define KEY_B "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="
#define SHORT "QUFBQUFBQUFBQUFBQUFBQQ=="

/* A Secret as the API returns it: data members as JSON text, rotated at `when` (NULL: no annotation). */
static json_object *secret(const char *data_members, const char *when)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"" FG_SECRET_GRANT_KEY
             "\",\"namespace\":\"" NS "\",\"resourceVersion\":\"42\",\"annotations\":{%s%s%s}},\"type\":\"Opaque\""
             "%s%s%s}",
             when ? "\"" FG_ANN_GRANT_KEY_ROTATED_AT "\":\"" : "", when ? when : "", when ? "\"" : "",
             data_members ? ",\"data\":{" : "", data_members ? data_members : "", data_members ? "}" : "");
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    return o;
}

static struct fg_grant_key_plan plan_at(json_object *cur, int64_t now)
{
    struct fg_grant_key_plan p;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_grant_key_plan(cur, NS, FG_SECRET_GRANT_KEY, &policy, now, &p, msg) != FG_OK)
        fail_msg("plan: %s", msg);
    return p;
}

static const char *data_of(const struct fg_grant_key_plan *p, const char *member)
{
    return fg_json_get_str(p->next, "data", member, NULL);
}

static int64_t rotated_of(const struct fg_grant_key_plan *p)
{
    int64_t t = 0;
    const char *s = fg_json_get_str(p->next, "metadata", "annotations", FG_ANN_GRANT_KEY_ROTATED_AT, NULL);
    assert_true(fg_time_parse(s, &t));
    return t;
}

static size_t decoded_len(const char *b64)
{
    size_t n = 0;
    unsigned char *bytes = fg_base64_decode(b64, &n);
    assert_non_null(bytes);
    free(bytes);
    return n;
}

static void issued_when_missing_or_empty(void **state)
{
    (void)state;
    struct fg_grant_key_plan p = plan_at(NULL, T0 + 123);
    assert_int_equal(p.step, FG_GRANT_KEY_ISSUE);
    assert_string_equal(fg_json_get_str(p.next, "metadata", "name", NULL), FG_SECRET_GRANT_KEY);
    assert_string_equal(fg_json_get_str(p.next, "metadata", "namespace", NULL), NS);
    assert_null(fg_json_get(p.next, "metadata", "resourceVersion", NULL)); /* a create */
    assert_int_equal(decoded_len(data_of(&p, "key")), FG_GRANT_KEY_FRESH_LEN);
    assert_null(data_of(&p, "previous"));
    assert_true(rotated_of(&p) == T0); /* recorded to the second */
    assert_true(p.recheck_ms == T0 + policy.rotation_ms);
    char msg[FG_ERRMSG_MAX];
    struct fg_grant_keys k;
    assert_int_equal(fg_grant_keys_from_secret(p.next, &k, msg), FG_OK);

    struct fg_grant_key_plan q = plan_at(NULL, T0);
    assert_string_not_equal(data_of(&p, "key"), data_of(&q, "key"));
    fg_grant_key_plan_cleanup(&q);
    fg_grant_key_plan_cleanup(&p);

    /* the Secret the manifests ship, without data: filled in place (an update from its resourceVersion) */
    json_object *empty = secret(NULL, NULL);
    p = plan_at(empty, T0);
    assert_int_equal(p.step, FG_GRANT_KEY_ISSUE);
    assert_string_equal(fg_json_get_str(p.next, "metadata", "resourceVersion", NULL), "42");
    assert_int_equal(decoded_len(data_of(&p, "key")), FG_GRANT_KEY_FRESH_LEN);
    assert_false(fg_grant_key_step_is_repair(p.step));
    fg_grant_key_plan_cleanup(&p);
    json_object_put(empty);
}

static void valid_left_alone_until_due(void **state)
{
    (void)state;
    json_object *s = secret("\"key\":\"" KEY_A "\"", "2025-11-26T10:09:00Z");
    struct fg_grant_key_plan p = plan_at(s, T0 + policy.rotation_ms - 1);
    assert_int_equal(p.step, FG_GRANT_KEY_KEEP);
    assert_null(p.next);
    assert_true(p.recheck_ms == T0 + policy.rotation_ms);
    json_object_put(s);

    s = secret("\"key\":\"" KEY_A "\",\"previous\":\"" KEY_B "\"", "2025-11-26T10:09:00Z");
    p = plan_at(s, T0 + policy.grace_ms - 1);
    assert_int_equal(p.step, FG_GRANT_KEY_KEEP);
    assert_true(p.recheck_ms == T0 + policy.grace_ms);
    json_object_put(s);
}

static void rotation_keeps_old_grants_through_the_grace(void **state)
{
    (void)state;
    struct fg_grant g = { "7c1f5e0a-5b3e-4c57-9d5d-2f7f2b0c9a11", "gpu-node-3", "GPU-5f2c1d9e", 300, 20480 };
    const unsigned char a[32] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    char before[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, a, sizeof(a), before), FG_OK);

    json_object *s = secret("\"key\":\"" KEY_A "\"", "2025-11-26T10:09:00Z");
    int64_t at = T0 + policy.rotation_ms;
    struct fg_grant_key_plan p = plan_at(s, at);
    assert_int_equal(p.step, FG_GRANT_KEY_ROTATE);
    assert_string_equal(data_of(&p, "previous"), KEY_A);
    assert_string_not_equal(data_of(&p, "key"), KEY_A);
    assert_int_equal(decoded_len(data_of(&p, "key")), FG_GRANT_KEY_FRESH_LEN);
    assert_true(rotated_of(&p) == at);
    assert_true(p.recheck_ms == at + policy.grace_ms);
    assert_string_equal(fg_json_get_str(p.next, "metadata", "resourceVersion", NULL), "42");

    /* a grant signed before the rotation verifies with the keys after it; a new one with the new key */
    struct fg_grant_keys k;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_grant_keys_from_secret(p.next, &k, msg), FG_OK);
    assert_int_equal(fg_grant_verify(&g, before, &k), FG_GRANT_VALID_PREVIOUS);
    char after[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, k.current, k.current_len, after), FG_OK);
    assert_int_equal(fg_grant_verify(&g, after, &k), FG_GRANT_VALID);

    /* within the grace nothing changes; at its end previous goes and the old grant stops verifying */
    json_object *rotated = json_object_get(p.next);
    fg_grant_key_plan_cleanup(&p);
    p = plan_at(rotated, at + policy.grace_ms - 1);
    assert_int_equal(p.step, FG_GRANT_KEY_KEEP);
    p = plan_at(rotated, at + policy.grace_ms);
    assert_int_equal(p.step, FG_GRANT_KEY_RETIRE);
    assert_null(data_of(&p, "previous"));
    assert_string_equal(data_of(&p, "key"), fg_json_get_str(rotated, "data", "key", NULL));
    assert_true(rotated_of(&p) == at); /* the key did not change: neither does its time */
    assert_true(p.recheck_ms == at + policy.rotation_ms);
    assert_int_equal(fg_grant_keys_from_secret(p.next, &k, msg), FG_OK);
    assert_int_equal(fg_grant_verify(&g, before, &k), FG_GRANT_MISMATCH);
    assert_int_equal(fg_grant_verify(&g, after, &k), FG_GRANT_VALID);
    fg_grant_key_plan_cleanup(&p);
    json_object_put(rotated);
    json_object_put(s);
}

static void overdue_rotation_rotates(void **state)
{
    (void)state;
    /* the operator was down past the grace and the rotation: the key moves to previous at once */
    json_object *s = secret("\"key\":\"" KEY_A "\",\"previous\":\"" KEY_B "\"", "2025-11-26T10:09:00Z");
    struct fg_grant_key_plan p = plan_at(s, T0 + 2 * policy.rotation_ms);
    assert_int_equal(p.step, FG_GRANT_KEY_ROTATE);
    assert_string_equal(data_of(&p, "previous"), KEY_A);
    fg_grant_key_plan_cleanup(&p);
    json_object_put(s);
}

/* A malformed Secret: step, and the problem names `says` and never the key. */
static void expect_repair(const char *members, enum fg_grant_key_step step, const char *says)
{
    json_object *s = secret(members, "2025-11-26T10:09:00Z");
    struct fg_grant_key_plan p = plan_at(s, T0 + HOUR / 2);
    assert_int_equal(p.step, step);
    assert_true(fg_grant_key_step_is_repair(p.step));
    if (!strstr(p.problem, says))
        fail_msg("problem \"%s\" does not say \"%s\"", p.problem, says);
    assert_null(strstr(p.problem, "QUFB"));
    assert_null(strstr(p.problem, "QkJC"));
    struct fg_grant_keys k;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_grant_keys_from_secret(p.next, &k, msg), FG_OK); /* never left broken */
    assert_null(data_of(&p, "stray"));
    if (step == FG_GRANT_KEY_REPAIR_KEY) {
        assert_string_not_equal(data_of(&p, "key"), KEY_A);
        assert_int_equal(decoded_len(data_of(&p, "key")), FG_GRANT_KEY_FRESH_LEN);
        assert_null(data_of(&p, "previous"));
        assert_true(rotated_of(&p) == T0 + HOUR / 2);
    } else {
        assert_string_equal(data_of(&p, "key"), KEY_A);
        assert_null(data_of(&p, "previous"));
        assert_true(rotated_of(&p) == T0);
    }
    fg_grant_key_plan_cleanup(&p);
    json_object_put(s);
}

static void malformed_repaired(void **state)
{
    (void)state;
    expect_repair("\"previous\":\"" KEY_A "\"", FG_GRANT_KEY_REPAIR_KEY, "has no data.key");
    expect_repair("\"stray\":\"" KEY_A "\"", FG_GRANT_KEY_REPAIR_KEY, "has no data.key");
    expect_repair("\"key\":\"" SHORT "\"", FG_GRANT_KEY_REPAIR_KEY, "data.key is 16 bytes");
    expect_repair("\"key\":\"not base64!\"", FG_GRANT_KEY_REPAIR_KEY, "data.key is not base64");
    expect_repair("\"key\":17", FG_GRANT_KEY_REPAIR_KEY, "data.key");
    expect_repair("\"key\":\"" KEY_A "\",\"previous\":\"" SHORT "\"", FG_GRANT_KEY_REPAIR_PREVIOUS,
                  "data.previous is 16 bytes");
    expect_repair("\"key\":\"" KEY_A "\",\"previous\":\"@@@@\",\"stray\":\"x\"", FG_GRANT_KEY_REPAIR_PREVIOUS,
                  "data.previous is not base64");
}

static void undated_key_adopted(void **state)
{
    (void)state;
    const char *whens[] = { NULL, "yesterday", "2125-01-01T00:00:00Z" };
    for (size_t i = 0; i < 3; i++) {
        json_object *s = secret("\"key\":\"" KEY_A "\",\"previous\":\"" KEY_B "\"", whens[i]);
        struct fg_grant_key_plan p = plan_at(s, T0);
        assert_int_equal(p.step, FG_GRANT_KEY_ADOPT);
        assert_string_equal(data_of(&p, "key"), KEY_A);
        assert_string_equal(data_of(&p, "previous"), KEY_B);
        assert_true(rotated_of(&p) == T0);
        assert_true(p.recheck_ms == T0 + policy.grace_ms);
        fg_grant_key_plan_cleanup(&p);
        json_object_put(s);
    }
    /* a clock a little ahead of this one is believed */
    json_object *s = secret("\"key\":\"" KEY_A "\"", "2025-11-26T10:10:00Z");
    struct fg_grant_key_plan p = plan_at(s, T0);
    assert_int_equal(p.step, FG_GRANT_KEY_KEEP);
    json_object_put(s);
}

static void policy_rules(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_grant_key_policy ok = FG_GRANT_KEY_POLICY_DEFAULT;
    assert_int_equal(fg_grant_key_policy_check(&ok, msg), FG_OK);
    struct fg_grant_key_policy equal = { HOUR, HOUR }, none = { HOUR, 0 };
    assert_int_equal(fg_grant_key_policy_check(&equal, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "longer than its grace"));
    assert_int_equal(fg_grant_key_policy_check(&none, msg), FG_E_INVAL);
    struct fg_grant_key_plan p;
    assert_int_equal(fg_grant_key_plan(NULL, NS, FG_SECRET_GRANT_KEY, &equal, T0, &p, msg), FG_E_INVAL);
    assert_null(p.next);
    assert_string_equal(fg_grant_key_step_reason(FG_GRANT_KEY_ROTATE), "KeyRotated");
    assert_string_equal(fg_grant_key_step_name(FG_GRANT_KEY_REPAIR_PREVIOUS), "repair-previous");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(issued_when_missing_or_empty),
        cmocka_unit_test(valid_left_alone_until_due),
        cmocka_unit_test(rotation_keeps_old_grants_through_the_grace),
        cmocka_unit_test(overdue_rotation_rotates),
        cmocka_unit_test(malformed_repaired),
        cmocka_unit_test(undated_key_adopted),
        cmocka_unit_test(policy_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
