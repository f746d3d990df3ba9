/* Tests of usage profiles: constant compute and memory, a trace replayed with its time compression
 * (a constant overriding its dimension), and bad annotations named while the good ones stand —
 * including a trace that cannot be read or a pod it does not hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fs.h"
#include "base/json.h"
#include "e2e/cluster/gpuusage.h"

#define POD_A "aaaaaaaa000000000000000000000001"

static char dir[64];

static int write_trace(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/fg-sim-usage-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    static const char util[] = "value,timestamp_anon,container_ip\n10,0," POD_A "\n40,60," POD_A "\n";
    static const char mem[] = "timestamp_anon,value,container_ip\n0,1073741824," POD_A "\n";
    char path[128];
    snprintf(path, sizeof path, "%s/" FG_GENTD26_UTIL_FILE, dir);
    if (fg_write_file_atomic(path, util, sizeof util - 1))
        return -1;
    snprintf(path, sizeof path, "%s/" FG_GENTD26_MEMORY_FILE, dir);
    return fg_write_file_atomic(path, mem, sizeof mem - 1);
}

static int remove_trace(void **state)
{
    (void)state;
    return fg_remove_tree(dir);
}

/* A pod with the annotations given as "name", "value", ... NULL. */
static json_object *pod(const char *first, ...)
{
    json_object *p = json_object_new_object(), *ann = fg_json_ensure_obj(fg_json_ensure_obj(p, "metadata"), "annotations");
    va_list ap;
    va_start(ap, first);
    for (const char *name = first; name; name = va_arg(ap, const char *))
        fg_json_set_str(ann, name, va_arg(ap, const char *));
    va_end(ap);
    return p;
}

static void test_constant(void **state)
{
    (void)state;
    struct fg_sim_trace_source src;
    fg_sim_trace_source_init(&src, "/nonexistent");
    struct fg_sim_usage u;
    char problem[512];
    json_object *p = pod(FG_SIM_ANN_GPU_SM, "35", FG_SIM_ANN_GPU_MEMORY, "20Gi", NULL);
    assert_true(fg_sim_usage_parse(p, &src, &u, problem, sizeof problem));
    assert_true(u.given);
    double sm, mem;
    fg_sim_usage_at(&u, 1000, 60, &sm, &mem);
    assert_true(sm == 35 && mem == 20.0 * 1024 * 1024 * 1024);
    json_object_put(p);
    p = pod("other", "x", NULL);   /* no profile: nothing used */
    assert_true(fg_sim_usage_parse(p, &src, &u, problem, sizeof problem));
    assert_false(u.given);
    fg_sim_usage_at(&u, 5, 60, &sm, &mem);
    assert_true(sm == 0 && mem == 0);
    json_object_put(p);
    assert_false(src.tried);   /* nobody asked for the trace: it was not read */
    fg_sim_trace_source_cleanup(&src);
}

static void test_trace(void **state)
{
    (void)state;
    struct fg_sim_trace_source src;
    fg_sim_trace_source_init(&src, dir);
    struct fg_sim_usage u;
    char problem[512];
    json_object *p = pod(FG_SIM_ANN_USAGE_TRACE, "gentd26/aaaaaaaa", NULL);
    if (!fg_sim_usage_parse(p, &src, &u, problem, sizeof problem))
        fail_msg("%s", problem);
    double sm, mem;
    fg_sim_usage_at(&u, 0.5, 60, &sm, &mem);      /* 30 trace seconds in */
    assert_true(sm == 10 && mem == 1073741824.0);
    fg_sim_usage_at(&u, 1.0, 60, &sm, &mem);      /* one trace minute: the second sample */
    assert_true(sm == 40);
    fg_sim_usage_at(&u, 1.0, 1, &sm, &mem);       /* uncompressed: still the first */
    assert_true(sm == 10);
    fg_sim_usage_at(&u, 2.0, 60, &sm, &mem);      /* the trace ran out (120 s): it starts again */
    assert_true(sm == 10);
    json_object_put(p);
    p = pod(FG_SIM_ANN_USAGE_TRACE, "gentd26/0", FG_SIM_ANN_GPU_SM, "5", NULL);   /* the constant wins its dimension */
    assert_true(fg_sim_usage_parse(p, &src, &u, problem, sizeof problem));
    fg_sim_usage_at(&u, 1.0, 60, &sm, &mem);
    assert_true(sm == 5 && mem == 1073741824.0);
    json_object_put(p);
    fg_sim_trace_source_cleanup(&src);
}

static void test_bad(void **state)
{
    (void)state;
    struct fg_sim_trace_source src, missing;
    fg_sim_trace_source_init(&src, dir);
    fg_sim_trace_source_init(&missing, "/nonexistent");
    static const struct { const char *name, *value, *says; bool use_missing; } bad[] = {
        { FG_SIM_ANN_GPU_SM, "150", "annotation sim.fracgpu.io/gpu-sm: \"150\" is not a percentage from 0 to 100", false },
        { FG_SIM_ANN_GPU_SM, "lots", "sim.fracgpu.io/gpu-sm", false },
        { FG_SIM_ANN_GPU_MEMORY, "20GB!", "annotation sim.fracgpu.io/gpu-memory: \"20GB!\" is not a quantity", false },
        { FG_SIM_ANN_GPU_MEMORY, "-1Gi", "sim.fracgpu.io/gpu-memory", false },
        { FG_SIM_ANN_USAGE_TRACE, "alibaba/7", "\"alibaba/7\" names no trace (gentd26/<pod> is expected)", false },
        { FG_SIM_ANN_USAGE_TRACE, "gentd26/ffffffff", "no pod of the trace has that hash", false },
        { FG_SIM_ANN_USAGE_TRACE, "gentd26/9", "the trace has 1 series", false },
        { FG_SIM_ANN_USAGE_TRACE, "gentd26/0", "the GenTD26 trace cannot be read: ", true },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* each bad one beside a good one, which stands */
        const char *good = strcmp(bad[i].name, FG_SIM_ANN_GPU_SM) ? FG_SIM_ANN_GPU_SM : FG_SIM_ANN_GPU_MEMORY;
        json_object *p = pod(bad[i].name, bad[i].value, good, "10", NULL);
        struct fg_sim_usage u;
        char problem[512];
        assert_false(fg_sim_usage_parse(p, bad[i].use_missing ? &missing : &src, &u, problem, sizeof problem));
        if (!strstr(problem, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, problem, bad[i].says);
        assert_true(u.given);
        double sm, mem;
        fg_sim_usage_at(&u, 1, 60, &sm, &mem);
        assert_true(good == (const char *)FG_SIM_ANN_GPU_SM ? sm == 10 && mem == 0 : mem == 10 && sm == 0);
        json_object_put(p);
    }
    json_object *p = pod(FG_SIM_ANN_GPU_SM, "x", FG_SIM_ANN_GPU_MEMORY, "y", NULL);   /* both named */
    struct fg_sim_usage u;
    char problem[512];
    assert_false(fg_sim_usage_parse(p, &src, &u, problem, sizeof problem));
    assert_non_null(strstr(problem, "sim.fracgpu.io/gpu-sm"));
    assert_non_null(strstr(problem, "; annotation sim.fracgpu.io/gpu-memory"));
    assert_false(u.given);
    json_object_put(p);
    fg_sim_trace_source_cleanup(&src);
    fg_sim_trace_source_cleanup(&missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, write_trace, remove_trace);
}
