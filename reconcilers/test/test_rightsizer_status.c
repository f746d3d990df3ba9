/* What the rightsizer writes into GPUWorkload status: usage figures, the recommendation the webhook
 * applies (absent, as nulls, before minHistory), its bounds and summary; when a checkpoint expires;
 * and what it reads of pods, whatever their status holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "reconcilers/rightsizer_int.h"

#define MIN_MS (60 * 1000ll)
#define HOUR_MS (60 * MIN_MS)
#define T0 1700000000000ll

static struct fg_rec_opts opts(void)
{
    struct fg_rec_opts o = { .gpu_memory_mib = 81920 };
    fg_gpupolicy_spec_defaults(&o.policy);
    o.policy.history_window_ms = 24 * HOUR_MS;
    o.policy.min_history_ms = HOUR_MS;
    o.policy.compute = (struct fg_gpupolicy_resource){ 90, 10, 50, 1000 };
    o.policy.memory = (struct fg_gpupolicy_resource){ 100, 25, 256, 81920 };
    return o;
}

static void feed(struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t minutes)
{
    for (int64_t i = 0; i < minutes; i++) {
        struct fg_rec_sample x = { T0 + i * MIN_MS, true, true, 200, 16384 };
        assert_int_equal(fg_rec_add(s, o, &x), FG_REC_OK);
    }
}

static void before_min_history_nothing_to_apply(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 31);
    json_object *rec = fg_rs_recommendation_json(&s, &o, T0 + 31 * MIN_MS, NULL);
    assert_string_equal(fg_json_get_str(rec, "summary", NULL), "waiting for history (30m of 1h)");
    assert_string_equal(fg_json_get_str(rec, "reason", NULL), "InsufficientHistory");
    /* present as nulls, so that a merge patch removes what an earlier recommendation left */
    json_object *v = (json_object *)1;
    assert_true(json_object_object_get_ex(rec, "computeMilli", &v));
    assert_null(v);
    json_object_put(rec);
    json_object *u = fg_rs_usage_json(&s, &o, T0 + 31 * MIN_MS);
    int64_t n = 0;
    assert_true(fg_json_get_int64(u, &n, "samples", NULL));
    assert_int_equal(n, 31);
    assert_string_equal(fg_json_get_str(u, "windowCovered", NULL), "30m");
    assert_true(fg_json_get_int64(u, &n, "memoryPeakMiB", NULL));
    assert_int_equal(n, 16384);
    /* 200 milli: its bucket ends at 207.15 */
    assert_true(fg_json_get_int64(u, &n, "computeP90Milli", NULL));
    assert_int_equal(n, 208);
    json_object_put(u);
}

/* p90 200 → 207.15 × 1.1 → 228m; peak 16 GiB × 1.25 = 20 GiB. */
static void applied_recommendation_and_bounds(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    feed(&s, &o, 121);
    struct fg_rec_decision d;
    fg_rec_decide(&s, &o, T0 + 121 * MIN_MS, &d);
    assert_int_equal(d.action, FG_REC_FIRST);
    json_object *rec = fg_rs_recommendation_json(&s, &o, T0 + 121 * MIN_MS, d.reason);
    int64_t n = 0;
    assert_true(fg_json_get_int64(rec, &n, "computeMilli", NULL));
    assert_int_equal(n, 228);
    assert_true(fg_json_get_int64(rec, &n, "memoryMiB", NULL));
    assert_int_equal(n, 20480);
    assert_string_equal(fg_json_get_str(rec, "summary", NULL), "228m/20Gi");
    assert_string_equal(fg_json_get_str(rec, "reason", NULL), "FirstRecommendation");
    /* 2 h of 24: spread 2 − 1/12 */
    assert_true(fg_json_get_int64(rec, &n, "upperBound", "computeMilli", NULL));
    assert_int_equal(n, 437);
    assert_true(fg_json_get_int64(rec, &n, "lowerBound", "memoryMiB", NULL));
    assert_int_equal(n, 10686);   /* 20480 × 12/23 = 10685.2 */
    assert_non_null(fg_json_get_str(rec, "since", NULL));
    json_object_put(rec);
}

static void checkpoints_expire_after_the_ttl(void **state)
{
    (void)state;
    int64_t ttl = 7 * 24 * HOUR_MS;
    /* 2023-11-14T22:13:20Z is T0 */
    assert_false(fg_rs_checkpoint_expired("2023-11-14T22:13:20Z", T0 + ttl - 1, ttl));
    assert_true(fg_rs_checkpoint_expired("2023-11-14T22:13:20Z", T0 + ttl, ttl));
    assert_true(fg_rs_checkpoint_expired(NULL, T0, ttl));
    assert_true(fg_rs_checkpoint_expired("yesterday", T0, ttl));
}

/* What the rightsizer reads of pods, pending ones (no status at all) included. */
static void pods_read_safely(void **state)
{
    (void)state;
    bool oom = true;
    json_object *pending = json_tokener_parse("{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Pending\"}}");
    assert_false(fg_rs_pod_ready(pending));
    assert_int_equal(fg_rs_pod_restarts(pending, &oom), 0);
    assert_false(oom);
    json_object *bare = json_tokener_parse("{\"status\":{\"conditions\":\"odd\",\"containerStatuses\":{}}}");
    assert_false(fg_rs_pod_ready(bare));
    assert_int_equal(fg_rs_pod_restarts(bare, &oom), 0);
    json_object *ran = json_tokener_parse(
        "{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"},{\"type\":\"Ready\","
        "\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":2,\"lastState\":{"
        "\"terminated\":{\"reason\":\"OOMKilled\",\"exitCode\":137}}},{\"name\":\"b\",\"restartCount\":1}]}}");
    assert_true(fg_rs_pod_ready(ran));
    assert_int_equal(fg_rs_pod_restarts(ran, &oom), 3);
    assert_true(oom);
    json_object_put(pending);
    json_object_put(bare);
    json_object_put(ran);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(before_min_history_nothing_to_apply),
        cmocka_unit_test(applied_recommendation_and_bounds),
        cmocka_unit_test(checkpoints_expire_after_the_ttl),
        cmocka_unit_test(pods_read_safely),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
