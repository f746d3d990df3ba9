/* Tests of what the simulated controllers share: ownership, templates and their hash, pod state,
 * int-or-percent fields and the assumed set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "e2e/cluster/objects.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg_json_parse(s, strlen(s), 0, &o, msg) != FG_OK)
        fail_msg("%s", msg);
    return o;
}

static void test_template_hash(void **state)
{
    (void)state;
    json_object *a = parse("{\"metadata\":{\"labels\":{\"app\":\"web\",\"tier\":\"fe\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}");
    json_object *b = parse("{\"spec\":{\"containers\":[{\"image\":\"nginx\",\"name\":\"c\"}]},\"metadata\":{\"labels\":{\"tier\":\"fe\",\"app\":\"web\"}}}");
    json_object *c = parse("{\"metadata\":{\"labels\":{\"app\":\"web\",\"tier\":\"fe\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:2\"}]}}");
    char ha[16], hb[16], hc[16], hcoll[16];
    fg_sim_template_hash(a, 0, ha);
    fg_sim_template_hash(b, 0, hb);
    fg_sim_template_hash(c, 0, hc);
    fg_sim_template_hash(a, 1, hcoll);
    assert_string_equal(ha, hb);           /* the order of keys does not matter */
    assert_string_not_equal(ha, hc);       /* the content does */
    assert_string_not_equal(ha, hcoll);    /* and so does a collision count */
    assert_true(strlen(ha) >= 1 && strlen(ha) <= 10);
    assert_int_equal(strspn(ha, "bcdfghjklmnpqrstvwxz2456789"), strlen(ha));
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

static void test_pod_from_template(void **state)
{
    (void)state;
    json_object *owner = parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web-1\",\"uid\":\"u1\"}}");
    json_object *tmpl = parse("{\"metadata\":{\"labels\":{\"app\":\"web\"},\"annotations\":{\"a\":\"b\"}},\"spec\":{\"containers\":[]}}");
    json_object *extra = parse("{\"pod-template-hash\":\"x\"}");
    json_object *pod = fg_sim_pod_from_template(tmpl, "ml", NULL, "web-1-", owner, extra);
    assert_string_equal(fg_json_get_str(pod, "metadata", "generateName", NULL), "web-1-");
    assert_null(fg_json_get(pod, "metadata", "name", NULL));
    assert_string_equal(fg_json_get_str(pod, "metadata", "namespace", NULL), "ml");
    assert_string_equal(fg_json_get_str(pod, "metadata", "labels", "app", NULL), "web");
    assert_string_equal(fg_json_get_str(pod, "metadata", "labels", "pod-template-hash", NULL), "x");
    assert_string_equal(fg_json_get_str(pod, "metadata", "annotations", "a", NULL), "b");
    json_object *ref = fg_sim_controller_ref(pod);
    assert_non_null(ref);
    assert_string_equal(fg_json_get_str(ref, "kind", NULL), "ReplicaSet");
    assert_string_equal(fg_json_get_str(ref, "uid", NULL), "u1");
    assert_true(json_object_get_boolean(fg_json_get(ref, "blockOwnerDeletion", NULL)));
    assert_null(fg_json_get(tmpl, "metadata", "labels", "pod-template-hash", NULL));   /* the template is untouched */
    const char *values[4];
    assert_int_equal(fg_sim_index_controller(NULL, pod, values, 4), 1);
    assert_string_equal(values[0], "u1");
    assert_int_equal(fg_sim_index_owners(NULL, pod, values, 4), 1);
    json_object_put(pod);
    json_object_put(extra);
    json_object_put(tmpl);
    json_object_put(owner);
}

static void test_pod_state(void **state)
{
    (void)state;
    json_object *ready = parse("{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                               "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
    assert_true(fg_sim_pod_ready(ready));
    assert_true(fg_sim_pod_active(ready));
    assert_true(fg_sim_pod_available(ready, 0, 1767225600000ll));
    assert_false(fg_sim_pod_available(ready, 10, 1767225605000ll));   /* ready 5 s of the 10 asked */
    assert_true(fg_sim_pod_available(ready, 10, 1767225610000ll));
    json_object *done = parse("{\"status\":{\"phase\":\"Succeeded\"}}");
    assert_true(fg_sim_pod_finished(done));
    assert_false(fg_sim_pod_active(done));
    json_object *going = parse("{\"metadata\":{\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}");
    assert_true(fg_sim_pod_terminating(going));
    assert_false(fg_sim_pod_active(going));
    json_object_put(ready);
    json_object_put(done);
    json_object_put(going);
}

static void test_condition_transition_time(void **state)
{
    (void)state;
    json_object *pod = parse("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                             "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
    const char *now = "2026-02-02T00:00:00Z";
    json_object *same = fg_sim_condition_new(pod, "Ready", "True", NULL, NULL, now);
    assert_string_equal(fg_json_get_str(same, "lastTransitionTime", NULL), "2026-01-01T00:00:00Z");
    assert_null(fg_json_get(same, "reason", NULL));   /* NULL reason and message are left out */
    assert_null(fg_json_get(same, "message", NULL));
    json_object *flipped = fg_sim_condition_new(pod, "Ready", "False", "ContainersNotReady", "not ready", now);
    assert_string_equal(fg_json_get_str(flipped, "lastTransitionTime", NULL), now);
    assert_string_equal(fg_json_get_str(flipped, "reason", NULL), "ContainersNotReady");
    assert_string_equal(fg_json_get_str(flipped, "message", NULL), "not ready");
    json_object *other = fg_sim_condition_new(pod, "Initialized", "True", NULL, NULL, now);
    assert_string_equal(fg_json_get_str(other, "lastTransitionTime", NULL), now);
    json_object *fresh = fg_sim_condition_new(NULL, "Ready", "True", NULL, NULL, now);
    assert_string_equal(fg_json_get_str(fresh, "lastTransitionTime", NULL), now);
    assert_string_equal(fg_json_get_str(fresh, "type", NULL), "Ready");
    json_object_put(same);
    json_object_put(flipped);
    json_object_put(other);
    json_object_put(fresh);
    json_object_put(pod);
}

static void test_status_holds(void **state)
{
    (void)state;
    json_object *obj = parse("{\"status\":{\"replicas\":3,\"revision\":\"a\",\"conditions\":[{\"type\":\"Ready\","
                             "\"status\":\"True\",\"reason\":\"R\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
    json_object *same = parse("{\"replicas\":3,\"revision\":\"a\",\"gone\":null,\"conditions\":[{\"type\":\"Ready\","
                              "\"status\":\"True\",\"reason\":\"R\",\"lastTransitionTime\":\"2026-02-02T00:00:00Z\"}]}");
    assert_true(fg_sim_status_holds(obj, same));   /* times aside */
    static const char *const changed[] = {
        "{\"replicas\":4}", "{\"revision\":\"b\"}", "{\"revision\":null}", "{\"new\":1}",
        "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"R\"}]}",
        "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"S\"}]}",
        "{\"conditions\":[{\"type\":\"Other\",\"status\":\"True\"}]}", "{\"selector\":{\"a\":\"b\"}}",
    };
    for (size_t i = 0; i < sizeof changed / sizeof changed[0]; i++) {
        json_object *st = parse(changed[i]);
        if (fg_sim_status_holds(obj, st))
            fail_msg("%s was taken for no change", changed[i]);
        json_object_put(st);
    }
    json_object *none = parse("{}");
    assert_false(fg_sim_status_holds(none, same));   /* no status yet */
    json_object_put(none);
    json_object_put(same);
    json_object_put(obj);
}

static void test_int_or_percent(void **state)
{
    (void)state;
    int64_t v = -1;
    json_object *pct = json_object_new_string("25%"), *n = json_object_new_int(2), *bad = json_object_new_string("25");
    assert_int_equal(fg_sim_int_or_percent(pct, 3, true, 0, &v), FG_OK);
    assert_int_equal(v, 1);   /* 0.75 up */
    assert_int_equal(fg_sim_int_or_percent(pct, 3, false, 0, &v), FG_OK);
    assert_int_equal(v, 0);   /* 0.75 down */
    assert_int_equal(fg_sim_int_or_percent(pct, 10, true, 0, &v), FG_OK);
    assert_int_equal(v, 3);
    assert_int_equal(fg_sim_int_or_percent(n, 10, true, 0, &v), FG_OK);
    assert_int_equal(v, 2);
    assert_int_equal(fg_sim_int_or_percent(NULL, 10, true, 7, &v), FG_OK);
    assert_int_equal(v, 7);
    assert_int_equal(fg_sim_int_or_percent(bad, 10, true, 0, &v), FG_E_PARSE);
    json_object_put(pct);
    json_object_put(n);
    json_object_put(bad);
}

static void test_assumed(void **state)
{
    (void)state;
    struct fg_sim_assumed *a = fg_sim_assumed_new(60 * FG_NS_PER_S);
    fg_sim_assumed_add(a, "ns/rs", "p1", false);
    fg_sim_assumed_add(a, "ns/rs", "p2", false);
    fg_sim_assumed_add(a, "ns/rs", "old", true);
    fg_sim_assumed_add(a, "ns/other", "p9", false);
    json_object *seen = parse("[{\"metadata\":{\"uid\":\"p1\"}},{\"metadata\":{\"uid\":\"old\"}}]");
    fg_sim_assumed_settle(a, "ns/rs", seen);
    assert_int_equal(fg_sim_assumed_pending_creates(a, "ns/rs"), 1);   /* p2 is not seen yet */
    assert_true(fg_sim_assumed_deleted(a, "ns/rs", "old"));           /* still cached, not terminating */
    json_object_put(seen);
    seen = parse("[{\"metadata\":{\"uid\":\"p1\"}},{\"metadata\":{\"uid\":\"p2\"}},"
                 "{\"metadata\":{\"uid\":\"old\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}]");
    fg_sim_assumed_settle(a, "ns/rs", seen);
    assert_int_equal(fg_sim_assumed_pending_creates(a, "ns/rs"), 0);
    assert_false(fg_sim_assumed_deleted(a, "ns/rs", "old"));
    assert_int_equal(fg_sim_assumed_pending_creates(a, "ns/other"), 1);   /* another owner's are its own */
    json_object_put(seen);
    fg_sim_assumed_free(a);

    a = fg_sim_assumed_new(1);   /* a TTL that has passed by the next settle */
    fg_sim_assumed_add(a, "ns/rs", "p1", false);
    json_object *none = parse("[]");
    nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    fg_sim_assumed_settle(a, "ns/rs", none);
    assert_int_equal(fg_sim_assumed_pending_creates(a, "ns/rs"), 0);
    json_object_put(none);
    fg_sim_assumed_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_hash), cmocka_unit_test(test_pod_from_template),
        cmocka_unit_test(test_pod_state),     cmocka_unit_test(test_int_or_percent),
        cmocka_unit_test(test_assumed),       cmocka_unit_test(test_condition_transition_time),
        cmocka_unit_test(test_status_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
