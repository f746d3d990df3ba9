/*
 * `fracgpu simulate` through the binary, on small traces written here into a temporary directory:
 *
 * Three pods live three hours, one sample a minute: A and B use 10% and 30 GiB, C 10% and 55 GiB. The
 * policy (written here too) sizes from the exact peak with no headroom after 1h of history, so at
 * the first allocation A and B (2 × 30 GiB) share an 80 GiB GPU and C (55 GiB) has one: 2 GPUs after
 * the 1h warm-up, 3 (one per pod) before it, 3 changes (each pod's first allocation), no overflow.
 * In the second trace (compressed with xz) A jumps to 55 GiB at 2h: that one sample is an overrun,
 * the recommender bumps A's memory at once (a 4th change), A moves to a GPU of its own, and 3 GPUs
 * are held to the end; the tenants' memory never exceeds a GPU in a measured minute.
 *
 * A third trace, where two pods stop and leave two half-empty GPUs, shows consolidation (below).
 *
 * Bad input — a missing directory, a malformed row, an unknown policy, a bad flag — exits 2 with a
 * message naming it, and a combined one-file trace gives the same numbers as the pair.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"

#define A "aaaaaaaa000000000000000000000001"
#define B "bbbbbbbb000000000000000000000002"
#define C "cccccccc000000000000000000000003"
#define D "dddddddd000000000000000000000004"
#define GIB 1073741824.0

static char dir[64];

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A trace pod: its memory (GiB) until 2h, then from 2h on, and the minute it stops (exclusive). */
struct trace_pod {
    const char *id;
    double gib, gib_from_2h;
    int until;
};

/* The two files of a 3-hour trace of pods into dir/sub, and with combined also the one-file form. */
static void write_trace(const char *sub, const struct trace_pod *pods, size_t n, bool combined)
{
    struct fg_buf util = FG_BUF_INIT, mem = FG_BUF_INIT, both = FG_BUF_INIT;
    fg_buf_put_str(&util, "value,timestamp_anon,container_ip\n");
    fg_buf_put_str(&mem, "timestamp_anon,value,container_ip\n");
    fg_buf_put_str(&both, "container_ip,timestamp_anon,duty_cycle,memory_bytes\n");
    for (int m = 0; m < 180; m++) {
        for (size_t p = 0; p < n; p++) {
            if (m >= pods[p].until)
                continue;
            double gib = m >= 120 ? pods[p].gib_from_2h : pods[p].gib;
            long t = 1000000 + 60L * m;
            char line[256];
            snprintf(line, sizeof line, "10.0,%ld.0,%s\n", t, pods[p].id);
            fg_buf_put_str(&util, line);
            snprintf(line, sizeof line, "%ld.0,%.1f,%s\n", t, gib * GIB, pods[p].id);
            fg_buf_put_str(&mem, line);
            snprintf(line, sizeof line, "%s,%ld,10,%.0f\n", pods[p].id, t, gib * GIB);
            fg_buf_put_str(&both, line);
        }
    }
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/pod_gpu_duty_cycle_anon.csv", sub);
    write_file(path, fg_buf_str(&util));
    snprintf(path, sizeof path, "%s/pod_gpu_memory_used_bytes_anon.csv", sub);
    write_file(path, fg_buf_str(&mem));
    if (combined) {
        snprintf(path, sizeof path, "%s/combined.csv", sub);
        write_file(path, fg_buf_str(&both));
    }
    fg_buf_cleanup(&util);
    fg_buf_cleanup(&mem);
    fg_buf_cleanup(&both);
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/fg-simulate-XXXXXX");
    assert_non_null(mkdtemp(dir));
    write_file("policy.yaml", "apiVersion: fracgpu.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: exact}\n"
                              "spec:\n  historyWindow: 24h\n  minHistory: 1h\n"
                              "  compute: {percentile: 100, headroomPercent: 0, minMilli: 50, maxMilli: 1000}\n"
                              "  memory: {percentile: 100, headroomPercent: 0, minMiB: 256, maxMiB: 81920}\n"
                              "  updateMode: Auto\n  cooldown: 1h\n  changeThresholdPercent: 10\n");
    static const struct trace_pod steady[] = { { A, 30, 30, 180 }, { B, 30, 30, 180 }, { C, 55, 55, 180 } };
    static const struct trace_pod jump[] = { { A, 30, 55, 180 }, { B, 30, 30, 180 }, { C, 55, 55, 180 } };
    static const struct trace_pod ending[] = { { A, 30, 30, 180 }, { B, 30, 30, 120 }, { C, 40, 40, 120 },
                                               { D, 40, 40, 180 } };
    write_trace("steady", steady, 3, true);
    write_trace("jump", jump, 3, false);
    write_trace("ending", ending, 4, false);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "xz %s/jump/*.csv", dir);   /* leaves only the .csv.xz files */
    assert_int_equal(system(cmd), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) ? -1 : 0;
}

/* Runs `fracgpu simulate ARGS` (a shell word list, %s for dir); its stdout and stderr into out. */
static int simulate(struct fg_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int simulate(struct fg_buf *out, const char *fmt, ...)
{
    char args[1024], cmd[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s simulate %s 2>&1", FG_FRACGPU, args);
    return fg_buf_run_command(out, cmd);
}

static void says(const struct fg_buf *out, const char *what)
{
    if (!strstr(fg_buf_str(out), what))
        fail_msg("expected \"%s\" in:\n%s", what, fg_buf_str(out));
}

static void test_steady(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    assert_int_equal(simulate(&out, "--usage %s/steady --policy %s/policy.yaml", dir, dir), 0);
    says(&out, "policy exact\n");
    says(&out, "pods 3\n");
    says(&out, "warmup_minutes 60\n");
    says(&out, "gpus_peak 2\n");
    says(&out, "gpus_peak_all 3\n");
    says(&out, "one_per_pod 3\n");
    says(&out, "memory_overflow_gpu_minutes 0\n");
    says(&out, "changes 3\n");
    says(&out, "overrun_pct 0.000\n");
    says(&out, "hindsight 2\n");
    /* The same trace as one combined file, as JSON, with a report. */
    assert_int_equal(simulate(&out, "--usage %s/steady/combined.csv --policy %s/policy.yaml --json --out %s/r.html",
                              dir, dir, dir), 0);
    says(&out, "\"gpus_peak\":2,");
    says(&out, "\"memory_overflow_gpu_minutes\":0,");
    says(&out, "\"changes\":3,");
    char path[256];
    snprintf(path, sizeof path, "%s/r.html", dir);
    assert_int_equal(fg_buf_read_file(&out, path, NULL), FG_OK);
    says(&out, "<svg");
    says(&out, "GPUs over time");
    assert_null(strstr(fg_buf_str(&out), "<script"));   /* self-contained: nothing fetched */
    assert_null(strstr(fg_buf_str(&out), "src="));
    assert_null(strstr(fg_buf_str(&out), "href="));
    fg_buf_cleanup(&out);
}

static void test_jump_xz(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    assert_int_equal(simulate(&out, "--usage %s/jump --policy %s/policy.yaml", dir, dir), 0);
    says(&out, "gpus_peak 3\n");
    says(&out, "memory_overflow_gpu_minutes 0\n");
    says(&out, "changes 4\n");
    says(&out, "samples 540\n");
    says(&out, "overrun_memory_pct 0.185\n");   /* 1 of 540 */
    /* One pod alone: one GPU once sized. */
    assert_int_equal(simulate(&out, "--usage %s/jump --policy %s/policy.yaml --pods aaaaaaaa", dir, dir), 0);
    says(&out, "pods 1\n");
    says(&out, "gpus_peak 1\n");
    fg_buf_cleanup(&out);
}

/* Consolidation: A and B (30 GiB) share a GPU at 1h, C and D (40 GiB) fill another. B and C stop at
 * 2h, leaving A and D alone on theirs. Without consolidation both GPUs stay to the end (mean 2.00); with
 * it (the default, one GPU a minute) A, the GPU with less memory, is moved onto D's at the first
 * minute after: one GPU for the last hour (mean 1.50), one more change, one consolidation. */
static void test_consolidation(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    assert_int_equal(simulate(&out, "--usage %s/ending --policy %s/policy.yaml --consolidation-interval 0", dir, dir), 0);
    says(&out, "gpus_peak 2\n");
    says(&out, "gpus_mean 2.00\n");
    says(&out, "changes 4\n");
    says(&out, "consolidations 0\n");
    assert_int_equal(simulate(&out, "--usage %s/ending --policy %s/policy.yaml", dir, dir), 0);
    says(&out, "gpus_peak 2\n");
    says(&out, "gpus_mean 1.50\n");
    says(&out, "changes 5\n");
    says(&out, "consolidations 1\n");
    says(&out, "memory_overflow_gpu_minutes 0\n");
    /* every 2h: its one chance, at the end of the minute before 2h, comes while B and C still run */
    assert_int_equal(simulate(&out, "--usage %s/ending --policy %s/policy.yaml --consolidation-interval 2h", dir, dir), 0);
    says(&out, "gpus_mean 2.00\n");
    assert_int_equal(simulate(&out, "--usage %s/ending --policy batch --consolidation-interval soon", dir), 2);
    says(&out, "--consolidation-interval \"soon\"");
    fg_buf_cleanup(&out);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    assert_int_equal(simulate(&out, "--usage %s/none --policy batch", dir), 2);
    says(&out, "fracgpu simulate: --usage ");
    says(&out, "No such file or directory");
    assert_int_equal(simulate(&out, "--usage %s/steady --policy none-such", dir), 2);
    says(&out, "unknown policy \"none-such\"");
    assert_int_equal(simulate(&out, "--usage %s/steady --policy batch --frobnicate", dir), 2);
    says(&out, "unknown option \"--frobnicate\"");
    assert_int_equal(simulate(&out, "--usage %s/steady --policy batch --half third", dir), 2);
    says(&out, "--half \"third\"");
    assert_int_equal(simulate(&out, "--usage %s/steady --policy batch --gpu-memory-gib lots", dir), 2);
    assert_int_equal(simulate(&out, "--policy batch"), 2);
    says(&out, "--usage is required");
    assert_int_equal(simulate(&out, "--usage %s/steady --policy batch --pods ffffffff", dir), 2);
    says(&out, "no pod of the trace has that hash");
    write_file("bad.csv", "container_ip,timestamp_anon,duty_cycle,memory_bytes\n" A ",60,10,1\n" A ",120,lots,1\n");
    assert_int_equal(simulate(&out, "--usage %s/bad.csv --policy batch", dir), 2);
    says(&out, "bad.csv:3: duty_cycle 'lots' is not a number");
    write_file("bad-policy.yaml", "kind: GPUPolicy\nspec: {compute: {percentile: 150}}\n");
    assert_int_equal(simulate(&out, "--usage %s/steady --policy %s/bad-policy.yaml", dir, dir), 2);
    says(&out, "spec.compute.percentile");
    write_file("garbage.csv.gz", "\x1f\x8b not really gzip");
    assert_int_equal(simulate(&out, "--usage %s/garbage.csv.gz --policy batch", dir), 2);
    says(&out, "not a valid gzip file");
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady),
        cmocka_unit_test(test_jump_xz),
        cmocka_unit_test(test_consolidation),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
