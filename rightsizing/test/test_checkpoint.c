/* A recommender state survives its trip through GPUCheckpoint JSON, and a damaged checkpoint is
 * refused with the member named, leaving the state as it was. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "rightsizing/checkpoint.h"

#define MIN_MS (60 * 1000ll)
#define HOUR_MS (60 * MIN_MS)

static struct fg_rec_opts opts(void)
{
    struct fg_rec_opts o = { .gpu_memory_mib = 81920 };
    fg_gpupolicy_spec_defaults(&o.policy);
    o.policy.history_window_ms = 24 * HOUR_MS;
    o.policy.min_history_ms = HOUR_MS;
    return o;
}

static void filled(struct fg_rec_state *s, const struct fg_rec_opts *o)
{
    assert_true(fg_rec_init(s, o));
    for (int64_t t = 0; t < 3 * HOUR_MS; t += MIN_MS) {
        struct fg_rec_sample x = { t, true, true, (double)(t / MIN_MS % 300), 1000 + (double)(t / MIN_MS % 97) };
        assert_int_equal(fg_rec_add(s, o, &x), FG_REC_OK);
    }
    struct fg_rec_sample bad = { 3 * HOUR_MS, true, true, NAN, 1 };
    assert_int_equal(fg_rec_add(s, o, &bad), FG_REC_NOT_FINITE);
    struct fg_rec_decision d;
    fg_rec_decide(s, o, 3 * HOUR_MS, &d);
    fg_rec_oom(s, o, 3 * HOUR_MS, 900);
}

static void round_trip_keeps_what_the_recommender_says(void **state)
{
    (void)state;
    struct fg_rec_opts o = opts();
    struct fg_rec_state a, b;
    filled(&a, &o);
    json_object *j = fg_checkpoint_encode(&a);
    /* through text, as the API server stores it */
    json_object *back = json_tokener_parse(fg_json_text(j, NULL));
    assert_non_null(back);
    assert_true(fg_rec_init(&b, &o));
    char err[256] = "";
    assert_int_equal(fg_checkpoint_decode(back, &b, err), FG_OK);
    assert_int_equal(b.samples, a.samples);
    assert_int_equal(b.first_ms, a.first_ms);
    assert_int_equal(b.last_ms, a.last_ms);
    assert_int_equal(b.refused[FG_REC_NOT_FINITE], 1);
    assert_int_equal(b.ooms, 1);
    assert_true(b.bump_from_oom);
    assert_true(b.applied.set);
    assert_int_equal(b.applied.compute_milli, a.applied.compute_milli);
    assert_int_equal(b.applied.memory_mib, a.applied.memory_mib);
    for (int i = 0; i < a.compute.n; i++)
        assert_true(fabs(a.compute.weight[i] - b.compute.weight[i]) <= 1e-9 * (a.compute.weight[i] + 1));
    struct fg_rec_result ra, rb;
    fg_rec_recommend(&a, &o, 4 * HOUR_MS, &ra);
    fg_rec_recommend(&b, &o, 4 * HOUR_MS, &rb);
    assert_int_equal(ra.compute_milli, rb.compute_milli);
    assert_int_equal(ra.memory_mib, rb.memory_mib);
    assert_int_equal(ra.compute_upper, rb.compute_upper);
    json_object_put(back);
    json_object_put(j);
}

/* Each damage, applied to a good checkpoint, and the member its message must name. */
static void damaged_checkpoints_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *path[3];   /* the member to replace */
        const char *with;      /* JSON text */
        const char *names;
    } cases[] = {
        { { "version" }, "2", "version 2" },
        { { "compute", "buckets" }, "{\"99\": 1}", "compute.buckets.99" },
        { { "compute", "buckets" }, "{\"x\": 1}", "compute.buckets.x" },
        { { "memory", "buckets" }, "{\"3\": -1}", "memory.buckets.3" },
        { { "memory", "buckets" }, "{\"3\": \"heavy\"}", "memory.buckets.3" },
        { { "samples" }, "\"many\"", "samples" },
        { { "peaks" }, "{}", "peaks" },
        { { "applied", "computeMilli" }, "5000", "applied" },
        { { "compute", "referenceTime" }, "1.5", "compute.referenceTime" },
    };
    struct fg_rec_opts o = opts();
    struct fg_rec_state good;
    filled(&good, &o);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        json_object *j = fg_checkpoint_encode(&good);
        json_object *parent = j;
        const char *const *p = cases[c].path;
        size_t depth = p[1] ? (p[2] ? 3 : 2) : 1;
        for (size_t i = 0; i + 1 < depth; i++)
            parent = fg_json_get(parent, p[i], NULL);
        json_object_object_add(parent, p[depth - 1], json_tokener_parse(cases[c].with));
        struct fg_rec_state s;
        assert_true(fg_rec_init(&s, &o));
        struct fg_rec_state before = s;
        char err[256] = "";
        assert_int_equal(fg_checkpoint_decode(j, &s, err), FG_E_PARSE);
        if (!strstr(err, cases[c].names))
            fail_msg("case %zu: \"%s\" does not name %s", c, err, cases[c].names);
        assert_memory_equal(&s, &before, sizeof s);
        json_object_put(j);
    }
    struct fg_rec_state s;
    assert_true(fg_rec_init(&s, &o));
    char err[256] = "";
    json_object *str = json_object_new_string("x");
    assert_int_equal(fg_checkpoint_decode(str, &s, err), FG_E_PARSE);
    json_object_put(str);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_keeps_what_the_recommender_says),
        cmocka_unit_test(damaged_checkpoints_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
