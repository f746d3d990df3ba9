/*
 * Tests of the NVML state a simulated node shows: per GPU its processes, its utilization the sum of
 * their compute capped at 100 and its memory the sum of theirs; a process on two GPUs on both; the
 * same snapshot giving the same text. The text is read back the way the node agent reads it: the
 * fake libnvidia-ml loads it and the exporter's sampler (exporter/sample.h) takes a sample.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/fs.h"
#include "base/json.h"
#include "e2e/cluster/nvmlstate.h"
#include "exporter/sample.h"

#define GIB (1024.0 * 1024 * 1024)

static struct fg_sim_gpu_process procs[] = {
    { .pid = 1200, .gpus = 1u << 0, .sm = 70.4, .mem = 10 * GIB, .qos = "Burstable" },
    { .pid = 3400, .gpus = 1u << 0, .sm = 50, .mem = 2 * GIB, .qos = "BestEffort" },
    { .pid = 5600, .gpus = 1u << 1 | 1u << 2, .sm = 25.6, .mem = 1 * GIB, .qos = "Guaranteed" },
};

static void snapshot(struct fg_sim_gpu_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->ngpus = 4;
    snprintf(s->model, sizeof s->model, "NVIDIA H100 80GB HBM3");
    s->memory_bytes = 80ll << 30;
    for (unsigned g = 0; g < 4; g++)
        snprintf(s->uuids[g], sizeof s->uuids[g], "GPU-0000000%u-0000-0000-0000-000000000000", g);
    s->procs = procs;
    s->nprocs = sizeof procs / sizeof procs[0];
}

static void test_totals(void **state)
{
    (void)state;
    struct fg_sim_gpu_snapshot s;
    snapshot(&s);
    unsigned util;
    int64_t used;
    fg_sim_gpu_totals(&s, 0, &util, &used);
    assert_int_equal(util, 100);               /* 70 + 50, capped */
    assert_int_equal(used, 12ll << 30);
    fg_sim_gpu_totals(&s, 2, &util, &used);
    assert_int_equal(util, 26);
    assert_int_equal(used, 1ll << 30);
    fg_sim_gpu_totals(&s, 3, &util, &used);
    assert_int_equal(util, 0);
    assert_int_equal(used, 0);
    char *a = fg_sim_nvml_state(&s), *b = fg_sim_nvml_state(&s);
    assert_string_equal(a, b);
    json_object *doc = NULL;
    assert_int_equal(fg_json_parse(a, strlen(a), 0, &doc, NULL), FG_OK);
    json_object *g1 = json_object_array_get_idx(fg_json_get(doc, "gpus", NULL), 1);
    assert_string_equal(fg_json_get_str(g1, "name", NULL), "NVIDIA H100 80GB HBM3");
    assert_int_equal(fg_json_array_len(fg_json_get(g1, "procs", NULL)), 1);
    json_object_put(doc);
    free(a);
    free(b);
}

static const struct fg_proc_sample *proc(const struct fg_device_sample *d, unsigned pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    fail_msg("pid %u not on GPU %s", pid, d->uuid);
    return NULL;
}

static void test_read_by_the_exporter(void **state)
{
    (void)state;
    char dir[] = "/tmp/fg-sim-nvml-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/state.json", dir);
    struct fg_sim_gpu_snapshot s;
    snapshot(&s);
    char *text = fg_sim_nvml_state(&s);
    assert_int_equal(fg_write_file_atomic(path, text, strlen(text)), 0);
    free(text);
    setenv("FG_FAKE_NVML_STATE", path, 1);
    struct fg_nvml nv;
    struct fg_sampler sampler;
    struct fg_sample smp;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_nvml_open(FG_FAKE_NVML_PATH, &nv, msg) != FG_OK)
        fail_msg("open: %s", msg);
    fg_sampler_init(&sampler, &nv);
    assert_int_equal(fg_sample_take(&sampler, &smp, msg), FG_OK);
    assert_int_equal(smp.ndevs, 4);
    assert_int_equal(smp.nerrors, 0);
    const struct fg_device_sample *d0 = &smp.devs[0], *d1 = &smp.devs[1], *d2 = &smp.devs[2];
    assert_string_equal(d0->uuid, s.uuids[0]);
    assert_string_equal(d0->model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(d0->mem_total, 80ull << 30);
    assert_int_equal(d0->mem_used, 12ull << 30);
    assert_int_equal(d0->util, 100);
    assert_int_equal(d0->nprocs, 2);
    assert_int_equal(proc(d0, 1200)->mem_used, 10ull << 30);
    assert_int_equal(proc(d0, 1200)->sm_util, 70);
    assert_int_equal(proc(d0, 3400)->sm_util, 50);
    assert_int_equal(proc(d1, 5600)->sm_util, 26);   /* one process on two GPUs: on both */
    assert_int_equal(proc(d2, 5600)->mem_used, 1ull << 30);
    assert_int_equal(smp.devs[3].nprocs, 0);
    assert_int_equal(smp.devs[3].util, 0);
    fg_sample_cleanup(&smp);
    fg_sampler_cleanup(&sampler);
    fg_nvml_close(&nv);
    assert_int_equal(fg_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_read_by_the_exporter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
