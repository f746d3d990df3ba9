/*
 * test_nvml — sampling through the fake libnvidia-ml: identities, memory with the reservation apart,
 * the count protocol, the entry-stride quirk, incremental process utilization (last-seen timestamp,
 * "not found", rows for unknown PIDs or above 100 dropped), MPS clients, MIG, and every failure mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "exporter/nvml.h"
#include "exporter/sample.h"
#include "fake_state.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    fg_test_fake_dir(dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_test_fake_rm(dir);
    return 0;
}

/* Opens the fake on `json` and takes one sample. */
static void sample_of(const char *json, struct fg_nvml *nv, struct fg_sampler *s, struct fg_sample *smp)
{
    char msg[FG_ERRMSG_MAX] = "";
    fg_test_fake_state(dir, json);
    if (fg_nvml_open(FG_FAKE_NVML_PATH, nv, msg) != FG_OK)
        fail_msg("open: %s", msg);
    fg_sampler_init(s, nv);
    assert_int_equal(fg_sample_take(s, smp, msg), FG_OK);
}

static void done(struct fg_nvml *nv, struct fg_sampler *s, struct fg_sample *smp)
{
    fg_sample_cleanup(smp);
    fg_sampler_cleanup(s);
    fg_nvml_close(nv);
}

static const struct fg_proc_sample *proc(const struct fg_device_sample *d, unsigned pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    fail_msg("pid %u not in the sample", pid);
    return NULL;
}

static void test_basic(void **state)
{
    (void)state;
    struct fg_nvml nv;
    struct fg_sampler s;
    struct fg_sample smp;
    sample_of("{\"gpus\":[{\"uuid\":\"GPU-a\",\"name\":\"NVIDIA A100-SXM4-40GB\",\"total\":42949672960,"
              "\"used\":1000,\"reserved\":500,\"util\":37,"
              "\"procs\":[{\"pid\":10,\"used\":600},{\"pid\":11,\"used\":400}],"
              "\"mps_procs\":[{\"pid\":12,\"used\":7}],"
              "\"samples\":[{\"pid\":10,\"ts\":100,\"sm\":40},{\"pid\":10,\"ts\":200,\"sm\":60},"
              "{\"pid\":11,\"ts\":150,\"sm\":250},{\"pid\":99,\"ts\":160,\"sm\":30}]},"
              "{\"uuid\":\"GPU-b\",\"name\":\"NVIDIA L4\",\"total\":100,\"used\":0,\"util\":0}]}",
              &nv, &s, &smp);
    assert_int_equal(smp.ndevs, 2);
    assert_int_equal(smp.nerrors, 0);
    const struct fg_device_sample *a = &smp.devs[0];
    assert_string_equal(a->uuid, "GPU-a");
    assert_string_equal(a->model, "NVIDIA A100-SXM4-40GB");
    assert_true(a->mem_known && a->reserved_known);
    assert_int_equal(a->mem_total, 42949672960ull);
    assert_int_equal(a->mem_used, 1000);
    assert_int_equal(a->mem_reserved, 500);
    assert_int_equal(a->util, 37);
    assert_int_equal(a->nprocs, 3);
    assert_int_equal(proc(a, 10)->mem_used, 600);
    assert_int_equal(proc(a, 10)->sm_util, 50);   /* mean of its two rows */
    assert_int_equal(proc(a, 11)->sm_util, 0);    /* its only row said 250: dropped */
    assert_false(proc(a, 11)->mps);
    assert_true(proc(a, 12)->mps);
    assert_int_equal(proc(a, 10)->gpu_instance, FG_NO_GPU_INSTANCE);
    assert_string_equal(smp.devs[1].uuid, "GPU-b");
    assert_int_equal(smp.devs[1].nprocs, 0);
    fg_sample_cleanup(&smp);

    /* nothing new since timestamp 200: NVML says "not found", which means idle, not unknown */
    assert_int_equal(fg_sample_take(&s, &smp, NULL), FG_OK);
    assert_int_equal(proc(&smp.devs[0], 10)->sm_util, 0);
    assert_int_equal(smp.nerrors, 0);
    fg_sample_cleanup(&smp);

    /* a newer row arrives: only it counts */
    fg_test_fake_state(dir, "{\"gpus\":[{\"uuid\":\"GPU-a\",\"total\":1,\"procs\":[{\"pid\":10,\"used\":1}],"
                            "\"samples\":[{\"pid\":10,\"ts\":200,\"sm\":90},{\"pid\":10,\"ts\":300,\"sm\":20}]}]}");
    assert_int_equal(fg_sample_take(&s, &smp, NULL), FG_OK);
    assert_int_equal(proc(&smp.devs[0], 10)->sm_util, 20);
    done(&nv, &s, &smp);
}

static void test_stride_quirk(void **state)
{
    (void)state;
    static const int strides[] = { 16, 24, 32 };
    for (size_t i = 0; i < 3; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"gpus\":[{\"uuid\":\"GPU-q\",\"total\":1,\"stride\":%d,\"procs\":[{\"pid\":4001,\"used\":1048576},"
                 "{\"pid\":4002,\"used\":2097152},{\"pid\":4003,\"used\":3145728}]}]}", strides[i]);
        struct fg_nvml nv;
        struct fg_sampler s;
        struct fg_sample smp;
        sample_of(json, &nv, &s, &smp);
        const struct fg_device_sample *d = &smp.devs[0];
        assert_int_equal(d->nprocs, 3);
        assert_int_equal(smp.nerrors, 0);
        for (unsigned k = 0; k < 3; k++) {
            assert_int_equal(d->procs[k].pid, 4001 + k);
            assert_int_equal(d->procs[k].mem_used, (k + 1) * 1048576ull);
        }
        done(&nv, &s, &smp);
    }
}

static void test_count_protocol(void **state)
{
    (void)state;
    /* 40 processes, but the count call says 1: they started in between; the list is fetched again */
    struct fg_buf st;
    fg_buf_init(&st, 0);
    assert_int_equal(fg_buf_puts(&st, "{\"gpus\":[{\"uuid\":\"GPU-c\",\"total\":1,\"count_hint\":1,\"procs\":["), FG_OK);
    for (int i = 0; i < 40; i++)
        assert_int_equal(fg_buf_printf(&st, "%s{\"pid\":%d,\"used\":%d}", i ? "," : "", 2000 + i, i), FG_OK);
    assert_int_equal(fg_buf_puts(&st, "]}]}"), FG_OK);
    struct fg_nvml nv;
    struct fg_sampler s;
    struct fg_sample smp;
    sample_of(fg_buf_str(&st), &nv, &s, &smp);
    assert_int_equal(smp.nerrors, 0);
    assert_int_equal(smp.devs[0].nprocs, 40);
    assert_int_equal(smp.devs[0].procs[39].pid, 2039);
    assert_int_equal(smp.devs[0].procs[39].mem_used, 39);
    fg_buf_cleanup(&st);
    done(&nv, &s, &smp);
}

static void test_not_supported(void **state)
{
    (void)state;
    struct fg_nvml nv;
    struct fg_sampler s;
    struct fg_sample smp;
    sample_of("{\"gpus\":[{\"uuid\":\"GPU-n\",\"total\":100,\"used\":30,\"reserved\":5,\"memory_v2\":false,"
              "\"samples_error\":\"not_supported\",\"procs\":[{\"pid\":5,\"used\":18446744073709551615}]}]}",
              &nv, &s, &smp);
    const struct fg_device_sample *d = &smp.devs[0];
    assert_int_equal(smp.nerrors, 0);
    assert_int_equal(d->util, -1);              /* unknown, not 0 */
    assert_true(d->mem_known);
    assert_false(d->reserved_known);
    assert_int_equal(d->mem_used, 35);          /* v1 counts the reservation as used */
    assert_int_equal(d->procs[0].sm_util, -1);
    assert_false(d->procs[0].mem_known);        /* NVML_VALUE_NOT_AVAILABLE */
    done(&nv, &s, &smp);
}

static void test_errors(void **state)
{
    (void)state;
    struct fg_nvml nv;
    struct fg_sampler s;
    struct fg_sample smp;
    char msg[FG_ERRMSG_MAX] = "";
    /* a lost GPU and a failing process list do not hide the healthy GPU */
    sample_of("{\"gpus\":[{\"uuid\":\"GPU-lost\",\"error\":\"gpu_is_lost\"},"
              "{\"uuid\":\"GPU-p\",\"total\":1,\"procs_error\":\"no_permission\",\"util\":5},"
              "{\"uuid\":\"GPU-ok\",\"total\":1,\"util\":9,\"procs\":[{\"pid\":1,\"used\":1}]}]}", &nv, &s, &smp);
    assert_int_equal(smp.ndevs, 3);
    assert_non_null(strstr(smp.devs[0].error, "GPU is lost"));
    assert_false(smp.devs[0].mem_known);
    assert_non_null(strstr(smp.devs[1].error, "Insufficient Permissions"));
    assert_int_equal(smp.devs[1].util, 5);
    assert_string_equal(smp.devs[2].error, "");
    assert_int_equal(smp.devs[2].nprocs, 1);
    assert_true(smp.nerrors >= 2);
    fg_sample_cleanup(&smp);

    /* the driver goes away under a running sampler */
    fg_test_fake_state(dir, "{\"init\":\"driver_not_loaded\",\"gpus\":[]}");
    assert_int_equal(fg_sample_take(&s, &smp, msg), FG_E_IO);
    assert_non_null(strstr(msg, "Driver Not Loaded"));
    assert_int_equal(smp.ndevs, 0);
    done(&nv, &s, &smp);

    /* no driver at start, no library, a library that is not NVML */
    assert_int_equal(fg_nvml_open(FG_FAKE_NVML_PATH, &nv, msg), FG_E_CONNECT);
    assert_non_null(strstr(msg, "nvmlInit_v2"));
    assert_null(nv.dl);
    assert_int_equal(fg_nvml_open("/nonexistent/libnvidia-ml.so.1", &nv, msg), FG_E_IO);
    assert_non_null(strstr(msg, "/nonexistent/libnvidia-ml.so.1"));
    assert_int_equal(fg_nvml_open("libm.so.6", &nv, msg), FG_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "nvmlInit_v2"));
    /* a state file that is not JSON */
    fg_test_fake_state(dir, "{not json");
    assert_int_equal(fg_nvml_open(FG_FAKE_NVML_PATH, &nv, msg), FG_E_CONNECT);
}

static void test_mig(void **state)
{
    (void)state;
    struct fg_nvml nv;
    struct fg_sampler s;
    struct fg_sample smp;
    sample_of("{\"gpus\":[{\"uuid\":\"GPU-h\",\"name\":\"NVIDIA H100 80GB HBM3\",\"total\":85899345920,\"util\":50,"
              "\"procs\":[{\"pid\":7,\"used\":100,\"gi\":1,\"ci\":0},{\"pid\":8,\"used\":200,\"gi\":2,\"ci\":0}],"
              "\"mig\":[{\"gi\":1,\"uuid\":\"MIG-1\",\"total\":10737418240,\"used\":100},"
              "{\"gi\":2,\"uuid\":\"MIG-2\",\"total\":10737418240,\"used\":200}]}]}", &nv, &s, &smp);
    assert_int_equal(smp.ndevs, 3);
    assert_int_equal(smp.devs[0].nprocs, 0);   /* moved to their instances */
    for (size_t i = 1; i < 3; i++) {
        const struct fg_device_sample *m = &smp.devs[i];
        assert_true(m->mig);
        assert_int_equal(m->index, 0);
        assert_int_equal(m->gpu_instance, i);
        assert_string_equal(m->model, "NVIDIA H100 80GB HBM3");
        assert_int_equal(m->mem_total, 10737418240ull);
        assert_int_equal(m->util, -1);          /* no GPM: compute unknown */
        assert_int_equal(m->nprocs, 1);
        assert_int_equal(m->procs[0].pid, 6 + i);
        assert_int_equal(m->procs[0].sm_util, -1);
    }
    assert_string_equal(smp.devs[1].uuid, "MIG-1");
    done(&nv, &s, &smp);
}

static void test_mig_gpm(void **state)
{
    (void)state;
    struct fg_nvml nv;
    struct fg_sampler s;
    struct fg_sample smp;
    sample_of("{\"gpus\":[{\"uuid\":\"GPU-h\",\"name\":\"NVIDIA H100 80GB HBM3\",\"total\":1,\"gpm\":true,"
              "\"procs\":[{\"pid\":7,\"used\":100,\"gi\":3,\"ci\":0}],"
              "\"mig\":[{\"gi\":3,\"uuid\":\"MIG-3\",\"total\":10,\"used\":1,\"sm\":61}]}]}", &nv, &s, &smp);
    assert_int_equal(smp.ndevs, 2);
    assert_int_equal(smp.devs[1].util, -1);   /* GPM needs two samples */
    fg_sample_cleanup(&smp);
    assert_int_equal(fg_sample_take(&s, &smp, NULL), FG_OK);
    assert_int_equal(smp.devs[1].util, 61);
    assert_int_equal(smp.devs[1].procs[0].sm_util, -1);   /* never per process on MIG */
    assert_int_equal(smp.nerrors, 0);
    done(&nv, &s, &smp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic), cmocka_unit_test(test_stride_quirk), cmocka_unit_test(test_count_protocol),
        cmocka_unit_test(test_not_supported),
        cmocka_unit_test(test_errors), cmocka_unit_test(test_mig), cmocka_unit_test(test_mig_gpm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
