/*
 * Leader election end to end: `fracgpu operator` processes on the test API server, with short
 * durations (lease 2 s, renew deadline 1.5 s, retry period 250 ms) and the leader probe on (while
 * leading, each appends "<identity> <CLOCK_MONOTONIC ns>" to one shared file every 10 ms):
 *   - of two replicas exactly one leads;
 *   - SIGKILL of the leader: the standby leads within lease duration + retry period of the kill;
 *   - SIGSTOP of the leader (cut off: frozen with its lease): the standby takes over once the lease
 *     expires, and the frozen one, continued, never acts as leader again — it stops its leader-only
 *     work, its last probe line precedes the new leader's first;
 *   - SIGTERM of the leader: it releases the Lease and the standby leads within one retry period;
 *   - over the whole run the probe file, in time order, changes hands exactly once per handover: no
 *     instant had two leaders.
 * Measured times are printed. Every wait is bounded; every process is reaped.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "e2e/tests/kubectl.h"
#include "e2e/tests/harness.h"

extern char **environ;

#define LEASE_NS (2 * FG_NS_PER_S)
#define RETRY_NS (250 * FG_NS_PER_MS)
/* What a new leader adds to the election itself before its probe's first line: the supervisor's
 * tick (50 ms), the probe's period (10 ms), scheduling on a busy machine. */
#define START_SLACK_NS (300 * FG_NS_PER_MS)
#define MAX_LINES 20000

struct replica {
    char name[8];
    pid_t pid;
    char log[160];
};

static struct fg_harness h;
static char dir[64];
static char probe[128];

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

static void start_replica(struct replica *r, const char *name)
{
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->log, sizeof r->log, "%s/%s.log", dir, name);
    char pod[32];
    snprintf(pod, sizeof pod, "POD_NAME=%s", name);
    char *envp[128];
    size_t n = 0;
    for (char **e = environ; *e && n < 120; e++)
        if (strncmp(*e, "POD_NAME=", 9) && strncmp(*e, "POD_NAMESPACE=", 14))
            envp[n++] = *e;
    envp[n++] = pod;
    envp[n] = NULL;
    char bin[512];
    snprintf(bin, sizeof bin, "%s/fracgpu", getenv("FG_BIN_DIR"));
    char *argv[] = { bin, "operator", "--kubeconfig", h.kubeconfig, "--listen", "127.0.0.1:0", "--webhook-listen", "127.0.0.1:0",
                     "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms",
                     "--leader-elect-retry-period", "250ms", "--leader-probe", probe, NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, r->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    assert_int_equal(posix_spawn(&r->pid, bin, &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
}

/* Waits for r to exit (bounded), SIGKILLing it past the bound; returns its wait status. */
static int reap(struct replica *r, int timeout_ms)
{
    int status = 0;
    for (int ms = 0; ms < timeout_ms; ms += 10) {
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            return status;
        }
        sleep_ms(10);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, &status, 0);
    r->pid = 0;
    return status;
}

struct line {
    char who[8];
    uint64_t ns;
};

static int by_time(const void *a, const void *b)
{
    const struct line *x = a, *y = b;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* The probe file's lines in time order (identities cut at the '_' of their random suffix). */
static size_t read_probe(struct line *lines)
{
    FILE *f = fopen(probe, "r");
    size_t n = 0;
    char who[320];
    unsigned long long ns;
    while (f && n < MAX_LINES && fscanf(f, "%319s %llu", who, &ns) == 2) {
        char *cut = strchr(who, '_');
        if (cut)
            *cut = '\0';
        snprintf(lines[n].who, sizeof lines[n].who, "%.7s", who);
        lines[n++].ns = ns;
    }
    if (f)
        fclose(f);
    qsort(lines, n, sizeof *lines, by_time);
    return n;
}

/* Waits until `who` writes a probe line stamped after `after`; returns that line's time. */
static uint64_t wait_lead(const char *who, uint64_t after, int timeout_ms)
{
    static struct line lines[MAX_LINES];
    for (int ms = 0; ms < timeout_ms; ms += 20) {
        size_t n = read_probe(lines);
        for (size_t i = 0; i < n; i++)
            if (lines[i].ns > after && !strcmp(lines[i].who, who))
                return lines[i].ns;
        sleep_ms(20);
    }
    fail_msg("%s did not lead within %d ms", who, timeout_ms);
    return 0;
}

static void dump_logs(struct replica *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct fg_buf b = FG_BUF_INIT;
        if (fg_buf_read_file(&b, rs[i].log, NULL) == FG_OK)
            fprintf(stderr, "---- %s\n%s", rs[i].name, fg_buf_str(&b));
        fg_buf_cleanup(&b);
    }
}

static struct replica *by_name(struct replica *rs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rs[i].name, name))
            return &rs[i];
    fail_msg("no replica %s", name);
    return NULL;
}

static void install(void)
{
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    assert_int_equal(fg_harness_namespace(&h, "fracgpu-system"), FG_OK);
    snprintf(dir, sizeof dir, "/tmp/fg-e2e-leader-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(probe, sizeof probe, "%s/probe", dir);
    struct fg_kubectl k;
    fg_kubectl_init(&k, dir, h.kubeconfig);
    struct fg_buf out = FG_BUF_INIT;
    char crds[512];
    snprintf(crds, sizeof crds, "%s/crds", getenv("FG_SOURCE_DIR"));
    if (fg_kubectl_run(&k, &out, NULL, "apply", "-k", crds, NULL) != 0 ||
        fg_kubectl_run(&k, &out, NULL, "wait", "--for=condition=Established", "--timeout=20s",
                       "crd/gpupolicies.fracgpu.io", "crd/gpuworkloads.fracgpu.io", NULL) != 0)
        fail_msg("kubectl: %s", fg_buf_str(&out));
    fg_buf_cleanup(&out);
}

static double seconds(uint64_t ns)
{
    return (double)ns / 1e9;
}

static void test_one_leader_through_kill_stop_and_term(void **state)
{
    (void)state;
    static struct line lines[MAX_LINES];
    install();
    struct replica rs[3] = { 0 };
    start_replica(&rs[0], "a");
    start_replica(&rs[1], "b");

    /* Exactly one of the two leads, and keeps leading. */
    size_t n = 0;
    for (int ms = 0; ms < 30000 && n == 0; ms += 50) {
        n = read_probe(lines);
        sleep_ms(50);
    }
    if (n == 0) {
        dump_logs(rs, 2);
        fail_msg("nobody led within 30 s");
    }
    sleep_ms(1000);
    n = read_probe(lines);
    for (size_t i = 1; i < n; i++)
        assert_string_equal(lines[i].who, lines[0].who);
    struct replica *leader = by_name(rs, 2, lines[0].who);
    struct replica *standby = leader == &rs[0] ? &rs[1] : &rs[0];

    /* SIGKILL: the standby leads within lease duration + retry period. */
    uint64_t killed = fg_clock_mono_ns();
    kill(leader->pid, SIGKILL);
    reap(leader, 5000);
    uint64_t led = wait_lead(standby->name, killed, 10000);
    printf("SIGKILL of %s: %s led %.3f s later (bound: lease %.2f s + retry %.2f s)\n", leader->name, standby->name,
           seconds(led - killed), seconds(LEASE_NS), seconds(RETRY_NS));
    assert_true(led - killed <= LEASE_NS + RETRY_NS + START_SLACK_NS);
    leader = standby;
    standby = &rs[2];
    start_replica(standby, "c");
    sleep_ms(3000);   /* c lists and watches: a warm standby */

    /* SIGSTOP: frozen with its lease, the leader is taken over when the lease expires; continued,
     * it never acts as leader again. */
    uint64_t stopped = fg_clock_mono_ns();
    kill(leader->pid, SIGSTOP);
    led = wait_lead(standby->name, stopped, 10000);
    printf("SIGSTOP of %s: %s led %.3f s later\n", leader->name, standby->name, seconds(led - stopped));
    sleep_ms(1000);
    kill(leader->pid, SIGCONT);
    sleep_ms(1500);
    n = read_probe(lines);
    uint64_t frozen_last = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(lines[i].who, leader->name) && lines[i].ns > frozen_last)
            frozen_last = lines[i].ns;
    printf("the frozen leader's last probe line: %.3f s before the SIGSTOP; the new leader's first: %.3f s after\n",
           seconds(stopped - (frozen_last < stopped ? frozen_last : stopped)), seconds(led - stopped));
    assert_true(frozen_last < led);
    assert_true(frozen_last <= stopped + 20 * FG_NS_PER_MS);
    struct fg_buf log = FG_BUF_INIT;
    assert_int_equal(fg_buf_read_file(&log, leader->log, NULL), FG_OK);
    if (!strstr(fg_buf_str(&log), "stopping the leader-only runnables: no longer leading")) {
        dump_logs(rs, 3);
        fail_msg("%s did not stand down after SIGCONT", leader->name);
    }
    fg_buf_cleanup(&log);
    struct replica *frozen = leader;
    leader = standby;
    standby = frozen;

    /* SIGTERM: the Lease is released and the standby leads within one retry period. */
    uint64_t termed = fg_clock_mono_ns();
    kill(leader->pid, SIGTERM);
    led = wait_lead(standby->name, termed, 10000);
    printf("SIGTERM of %s: %s led %.3f s later (bound: retry %.2f s)\n", leader->name, standby->name,
           seconds(led - termed), seconds(RETRY_NS));
    assert_true(led - termed <= RETRY_NS + START_SLACK_NS);
    int status = reap(leader, 10000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* The whole record: hands changed exactly three times, never back and forth. */
    sleep_ms(300);
    kill(standby->pid, SIGTERM);
    status = reap(standby, 10000);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    n = read_probe(lines);
    unsigned handovers = 0;
    for (size_t i = 1; i < n; i++)
        handovers += strcmp(lines[i].who, lines[i - 1].who) != 0;
    printf("%zu probe lines, %u handovers\n", n, handovers);
    if (handovers != 3) {
        dump_logs(rs, 3);
        fail_msg("%u handovers in the probe record, want 3", handovers);
    }
    assert_int_equal(fg_remove_tree(dir), 0);
    fg_harness_stop(&h);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_leader_through_kill_stop_and_term),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
