/*
 * The command line of every role, through the fracgpu binary: --help answers on stdout with exit 0,
 * bad usage exits 2 with a message naming what is wrong, an unusable kubeconfig exits 1, and none of
 * them starts anything (each run is bounded: a role that started serving would time out).
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

extern char **environ;

struct run {
    int status;             /* exit status, or -1 when it had to be killed */
    struct fg_buf out, err;
};

static void slurp(const char *path, struct fg_buf *b)
{
    fg_buf_reset(b);
    if (fg_buf_read_file(b, path, NULL) != FG_OK)
        fg_buf_reset(b);
}

/* Runs fracgpu with args (NULL-terminated), without NODE_NAME, POD_NAME, POD_NAMESPACE or KUBECONFIG in
 * its environment. */
static void run(struct run *r, const char *const *args)
{
    char out_path[] = "/tmp/fg-cli-out-XXXXXX", err_path[] = "/tmp/fg-cli-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    assert_true(out_fd >= 0 && err_fd >= 0);
    char *argv[32] = { (char *)FG_FRACGPU };
    size_t n = 1;
    for (; args[n - 1]; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    char *envp[64];
    size_t e = 0;
    for (char **v = environ; *v && e < 62; v++)
        if (strncmp(*v, "NODE_NAME=", 10) && strncmp(*v, "KUBECONFIG=", 11) && strncmp(*v, "HOME=", 5) &&
            strncmp(*v, "POD_NAME=", 9) && strncmp(*v, "POD_NAMESPACE=", 14))
            envp[e++] = *v;
    envp[e++] = "HOME=/nonexistent";
    envp[e] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, FG_FRACGPU, &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    r->status = -1;
    for (int ms = 0; ms < 20000; ms += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (r->status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    slurp(out_path, &r->out);
    slurp(err_path, &r->err);
    close(out_fd);
    close(err_fd);
    unlink(out_path);
    unlink(err_path);
}

static void expect(int status, const char *stream_has, const char *const *args)
{
    struct run r = { 0 };
    fg_buf_init(&r.out, 0);
    fg_buf_init(&r.err, 0);
    run(&r, args);
    const char *where = status == 0 ? fg_buf_str(&r.out) : fg_buf_str(&r.err);
    if (r.status != status || (stream_has && !strstr(where, stream_has)))
        fail_msg("fracgpu %s %s ...: exit %d, want %d with \"%s\"\nstdout: %s\nstderr: %s", args[0],
                 args[1] ? args[1] : "", r.status, status, stream_has ? stream_has : "", fg_buf_str(&r.out),
                 fg_buf_str(&r.err));
    fg_buf_cleanup(&r.out);
    fg_buf_cleanup(&r.err);
}

#define EXPECT(status, has, ...) expect((status), (has), (const char *const[]){ __VA_ARGS__, NULL })

static void test_help(void **state)
{
    (void)state;
    EXPECT(0, "usage: fracgpu <command>", "--help");
    EXPECT(0, "node-agent", "help");
    EXPECT(0, "usage: fracgpu operator", "operator", "--help");
    EXPECT(0, "--leader-elect-lease-duration", "operator", "-h");
    EXPECT(0, "--workload-kind GROUP/VERSION/KIND/PLURAL[=CLASS]", "operator", "--help");
    EXPECT(0, "--grant-key-rotation D", "operator", "--help");
    EXPECT(0, "--collect-interval D", "operator", "--help");
    EXPECT(0, "usage: fracgpu node-agent", "node-agent", "--help");
    EXPECT(0, "capacity-holder", "help");
    EXPECT(0, "usage: fracgpu capacity-holder", "capacity-holder", "--help");
    EXPECT(0, "--mps-root DIR", "capacity-holder", "-h");
    EXPECT(0, "usage: fracgpu replay", "replay", "--help");
    EXPECT(0, "usage: fracgpu version", "version", "--help");
    EXPECT(0, "fracgpu ", "--version");
    EXPECT(2, "unknown command", "exporter");   /* the node agent replaced it */
}

static void test_operator_usage(void **state)
{
    (void)state;
    EXPECT(2, "--listen wants HOST:PORT", "operator", "--listen", "nonsense");
    EXPECT(2, "--listen wants HOST:PORT", "operator", "--listen", "127.0.0.1:99999");
    EXPECT(2, "--listen wants HOST:PORT", "operator", "--listen", "::1:80");
    EXPECT(2, "--workers wants 1 to 64", "operator", "--workers", "0");
    EXPECT(2, "--workers wants 1 to 64", "operator", "--workers", "9x");
    EXPECT(2, "--workers wants 1 to 64", "operator", "--workers", "4294967297");
    EXPECT(2, "--log-level", "operator", "--log-level", "loud");
    EXPECT(2, "workload kind \"PyTorchJob\": want GROUP/VERSION/KIND/PLURAL", "operator", "--workload-kind", "PyTorchJob");
    EXPECT(2, "is built in", "operator", "--workload-kind", "apps/v1/Deployment/deployments");
    EXPECT(2, "given twice", "operator", "--workload-kind", "kubeflow.org/v1/PyTorchJob/pytorchjobs", "--workload-kind",
           "kubeflow.org/v1/PyTorchJob/pytorchjobs=training");
    EXPECT(2, "--webhook-cert-lifetime wants a positive duration", "operator", "--webhook-cert-lifetime", "soon");
    EXPECT(2, "--webhook-ca-lifetime wants a positive duration", "operator", "--webhook-ca-lifetime", "0s");
    EXPECT(2, "--grant-key-rotation wants a positive duration", "operator", "--grant-key-rotation", "monthly");
    EXPECT(2, "--grant-key-grace wants a positive duration", "operator", "--grant-key-grace", "0s");
    EXPECT(2, "--grant-key-grace must be shorter than --grant-key-rotation", "operator", "--grant-key-grace", "2h",
           "--grant-key-rotation", "90m");
    EXPECT(2, "--grant-key-grace must be shorter than --grant-key-rotation", "operator", "--grant-key-grace", "721h");
    EXPECT(2, "usage:", "operator", "--bogus");
    EXPECT(2, "unexpected argument", "operator", "extra");
    EXPECT(2, "--leader-elect wants true or false", "operator", "--leader-elect=maybe");
    EXPECT(2, "unit must be", "operator", "--leader-elect-retry-period", "2d");
    EXPECT(2, "whole seconds", "operator", "--leader-elect-lease-duration", "1500ms");
    EXPECT(2, "shorter than the lease duration", "operator", "--leader-elect-renew-deadline", "20s");
    EXPECT(2, "retry period", "operator", "--leader-elect-retry-period", "9s");
    EXPECT(2, "--kube-api-qps wants a number", "operator", "--kube-api-qps", "0");
    EXPECT(2, "--kube-api-qps wants a number", "operator", "--kube-api-qps", "fast");
    EXPECT(2, "--kube-api-burst wants 1 to 1000000", "operator", "--kube-api-burst", "-5");
    EXPECT(2, "--preemption-delay wants a positive duration", "operator", "--preemption-delay", "never");
    EXPECT(2, "--pod-group-timeout wants a positive duration", "operator", "--pod-group-timeout", "0s");
    EXPECT(2, "--collect-interval wants a positive duration", "operator", "--collect-interval", "0s");
    EXPECT(2, "--collect-timeout wants a positive duration", "operator", "--collect-timeout", "soon");
    EXPECT(2, "--collect-timeout: at most 10m", "operator", "--collect-timeout", "11m");
    EXPECT(2, "--collect-concurrency wants 1 to 1024", "operator", "--collect-concurrency", "0");
    EXPECT(2, "--collect-concurrency wants 1 to 1024", "operator", "--collect-concurrency", "2000");
    EXPECT(1, "/nonexistent/kubeconfig", "operator", "--kubeconfig", "/nonexistent/kubeconfig", "--listen",
           "127.0.0.1:0");
    EXPECT(1, "/nonexistent/kubeconfig", "operator", "--leader-elect=false", "--kubeconfig", "/nonexistent/kubeconfig");
}

static void test_node_agent_usage(void **state)
{
    (void)state;
    EXPECT(2, "--node-name (or $NODE_NAME) is required", "node-agent");
    EXPECT(2, "--interval", "node-agent", "--node-name", "n", "--interval", "0s");
    EXPECT(2, "--interval", "node-agent", "--node-name", "n", "--interval", "10");
    EXPECT(2, "usage:", "node-agent", "--node-name", "n", "--leader-elect");   /* one agent per node: no election */
    EXPECT(2, "--listen wants HOST:PORT", "node-agent", "--node-name", "n", "--listen", "x");
    EXPECT(1, "/nonexistent/kubeconfig", "node-agent", "--node-name", "n", "--kubeconfig", "/nonexistent/kubeconfig");
}

static void test_capacity_holder_usage(void **state)
{
    (void)state;
    EXPECT(2, "--pod-name and --pod-namespace (or $POD_NAME and $POD_NAMESPACE) are required", "capacity-holder");
    EXPECT(2, "are required", "capacity-holder", "--pod-name", "p");
    EXPECT(2, "--context-overhead-mib wants MiB", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n",
           "--context-overhead-mib", "lots");
    EXPECT(2, "--context-overhead-mib wants MiB", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n",
           "--context-overhead-mib", "-1");
    EXPECT(2, "--mps-health-interval", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n",
           "--mps-health-interval", "0s");
    EXPECT(2, "--mps-root wants a directory", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n",
           "--mps-root", "");
    EXPECT(2, "usage:", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n", "--leader-elect");
    EXPECT(2, "unexpected argument", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n", "extra");
    EXPECT(2, "--listen wants HOST:PORT", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n", "--listen", "x");
    EXPECT(1, "/nonexistent/kubeconfig", "capacity-holder", "--pod-name", "p", "--pod-namespace", "n", "--kubeconfig",
           "/nonexistent/kubeconfig");
}

static void test_other_roles(void **state)
{
    (void)state;
    EXPECT(2, "usage: fracgpu replay", "replay", "--policy", "fgd");
    /* replay says what is wrong before the usage */
    EXPECT(2, "fracgpu replay: --nodes is required", "replay", "--policy", "fgd");
    EXPECT(2, "fracgpu replay: unknown option \"--bogus\"", "replay", "--bogus");
    EXPECT(2, "fracgpu replay: --seed \"abc\": a seed", "replay", "--nodes", "n", "--pods", "p", "--policy", "fgd",
           "--seed", "abc");
    EXPECT(2, "fracgpu replay: --seeds \"5-2\": a range", "replay", "--nodes", "n", "--pods", "p", "--policy", "fgd",
           "--seeds", "5-2");
    EXPECT(2, "fracgpu replay: --tune \"0\"", "replay", "--nodes", "n", "--pods", "p", "--policy", "fgd", "--seed", "1",
           "--tune", "0");
    EXPECT(2, "fracgpu replay: --placements writes one seed's", "replay", "--nodes", "n", "--pods", "p", "--policy",
           "fgd", "--seeds", "1-3", "--placements", "f.csv");
    EXPECT(2, "fracgpu replay: --seed or --seeds is required", "replay", "--nodes", "n", "--pods", "p", "--policy", "fgd");
    EXPECT(2, "fracgpu replay: --nodes needs a value", "replay", "--nodes");
    EXPECT(2, "unexpected argument", "version", "now");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_operator_usage),
        cmocka_unit_test(test_node_agent_usage),
        cmocka_unit_test(test_capacity_holder_usage),
        cmocka_unit_test(test_other_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
