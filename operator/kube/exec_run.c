/*
 * exec_run — running a credential plugin once, bounded in time and output.
 *
 * posix_spawn(p) starts the plugin with stdin on /dev/null, stdout and stderr on pipes, every other
 * descriptor closed, default signal dispositions and an empty mask (the client ignores SIGPIPE; a
 * plugin must not inherit that), in a process group of its own. The group matters for the kill: a
 * plugin is often a script whose children (gcloud, az, a sleeping `aws`) would outlive a kill of the
 * script alone and keep running after fracgpu gave up on them. The parent polls both pipes and the
 * cancel descriptor until both pipes close, then waits for the exit status, all against one
 * monotonic deadline (the real clock: a test's frozen fg_clock must not stop the timeout). Whatever
 * ends a run early — the deadline, too much output, cancellation — kills the group and reaps the
 * plugin before returning, so no run leaves a process or a descriptor behind.
 *
 * stderr is kept (its first FG__KUBE_EXEC_STDERR_MAX bytes) for the error message when the plugin
 * fails, and logged as a warning when it succeeds but said something; stdout is never logged.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/mem.h"
#include "base/clock.h"
#include "operator/kube/exec_internal.h"

#define FG__KUBE_EXEC_STDERR_MAX 4096
#define STDERR_SHOWN 240   /* bytes of stderr quoted in a message */

static int64_t now_ms(void)
{
    return (int64_t)(fg_clock_real_ns() / FG_NS_PER_MS);
}

/* `name=…` is replaced by the plugin's own env or by KUBERNETES_EXEC_INFO. */
static bool overridden(const struct fg_kube_exec *x, const char *entry)
{
    size_t n = strcspn(entry, "=");
    if (n == strlen("KUBERNETES_EXEC_INFO") && strncmp(entry, "KUBERNETES_EXEC_INFO", n) == 0)
        return true;
    for (size_t i = 0; i < x->nenv; i++)
        if (strlen(x->env[i].name) == n && strncmp(entry, x->env[i].name, n) == 0)
            return true;
    return false;
}

/* The process environment, then the plugin's env, then KUBERNETES_EXEC_INFO; NULL-terminated. */
static char **child_env(const struct fg_kube_exec *x, const char *info)
{
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **env = fg_calloc(n + x->nenv + 2, sizeof *env);
    size_t m = 0;
    for (char **e = environ; *e; e++)
        if (!overridden(x, *e))
            env[m++] = fg_strdup(*e);
    for (size_t i = 0; i < x->nenv; i++)
        env[m++] = fg_asprintf("%s=%s", x->env[i].name, x->env[i].value);
    env[m] = fg_asprintf("KUBERNETES_EXEC_INFO=%s", info);
    return env;
}

static void free_strv(char **v)
{
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* Starts the plugin with stdout on out_fd and stderr on err_fd. */
static int spawn(const struct fg_kube_exec *x, const char *info, int out_fd, int err_fd, pid_t *pid)
{
    char **argv = fg_calloc(x->nargs + 2, sizeof *argv);
    argv[0] = x->command;
    for (size_t i = 0; i < x->nargs; i++)
        argv[i + 1] = x->args[i];
    char **env = child_env(x, info);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    int rc = strchr(x->command, '/') ? posix_spawn(pid, x->command, &fa, &attr, argv, env)
                                     : posix_spawnp(pid, x->command, &fa, &attr, argv, env);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    free_strv(env);
    free(argv);
    return rc;
}

static void kill_and_reap(pid_t pid)
{
    kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* Reads what is there from *fd into b (bytes past b's limit are dropped and flag *full); closes *fd
 * (-1) at end of file. */
static void drain(int *fd, struct fg_buf *b, bool *full)
{
    char chunk[4096];
    ssize_t n = read(*fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    if (fg_buf_append(b, chunk, (size_t)n))
        *full = true;
}

struct run {
    pid_t pid;
    int out_fd, err_fd, cancel_fd;
    int64_t deadline;
    struct fg_buf *out, err;
    bool out_full, err_full;
};

/* Polls the pipes until both close. FG_E_TIMEOUT, FG_E_TOO_BIG or FG_E_SHUTDOWN end it early. */
static enum fg_err collect(struct run *r)
{
    while (r->out_fd >= 0 || r->err_fd >= 0) {
        int64_t left = r->deadline - now_ms();
        if (left <= 0)
            return FG_E_TIMEOUT;
        struct pollfd p[3] = { { .fd = r->out_fd, .events = POLLIN }, { .fd = r->err_fd, .events = POLLIN },
                               { .fd = r->cancel_fd, .events = POLLIN } };
        if (poll(p, 3, (int)(left < 1000 ? left : 1000)) < 0 && errno != EINTR)
            return FG_E_IO;
        if (p[2].revents)
            return FG_E_SHUTDOWN;
        if (p[0].revents)
            drain(&r->out_fd, r->out, &r->out_full);
        if (r->out_full)
            return FG_E_TOO_BIG;
        if (p[1].revents)
            drain(&r->err_fd, &r->err, &r->err_full);   /* past its cap, stderr is dropped, not fatal */
    }
    return FG_OK;
}

/* Waits for the exit status once the pipes have closed (a plugin may close them and linger). */
static enum fg_err await_exit(struct run *r, int *status)
{
    for (;;) {
        pid_t got = waitpid(r->pid, status, WNOHANG);
        if (got == r->pid)
            return FG_OK;
        if (got < 0 && errno != EINTR)
            return FG_E_IO;
        int64_t left = r->deadline - now_ms();
        if (left <= 0)
            return FG_E_TIMEOUT;
        struct pollfd p = { .fd = r->cancel_fd, .events = POLLIN };
        if (poll(&p, 1, left < 5 ? (int)left : 5) > 0)
            return FG_E_SHUTDOWN;
    }
}

/* The start of stderr on one line, for a message. */
static void stderr_summary(const struct fg_buf *err, char *out, size_t size)
{
    size_t m = 0;
    bool space = true;   /* drops leading and repeated white space */
    for (size_t i = 0; i < err->len && m + 4 < size; i++) {
        unsigned char ch = (unsigned char)err->data[i];
        bool blank = ch < 0x20 || ch == ' ' || ch == 0x7f;
        if (blank && space)
            continue;
        out[m++] = blank ? ' ' : (char)ch;
        space = blank;
    }
    while (m > 0 && out[m - 1] == ' ')
        m--;
    if (m + 4 >= size)
        memcpy(out + m, "...", 3), m += 3;
    out[m] = '\0';
}

static enum fg_err explain_exit(const struct fg_kube_exec *x, int status, const struct fg_buf *err, char *errmsg)
{
    char said[STDERR_SHOWN + 1];
    stderr_summary(err, said, sizeof said);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        if (said[0])
            fg_log(FG_LOG_WARN, "kube", "exec plugin \"%s\" wrote to stderr: %s", x->command, said);
        return FG_OK;
    }
    if (WIFEXITED(status))
        return fg_errmsg(errmsg, FG_E_IO, "exited with status %d%s%s", WEXITSTATUS(status),
                         said[0] ? ": " : " and wrote nothing to stderr", said);
    return fg_errmsg(errmsg, FG_E_IO, "was killed by signal %d (%s)%s%s", WTERMSIG(status),
                     strsignal(WTERMSIG(status)), said[0] ? ": " : "", said);
}

static enum fg_err spawn_failed(const struct fg_kube_exec *x, int rc, char *errmsg)
{
    if (rc == ENOENT && !strchr(x->command, '/'))
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "not found on PATH%s%.300s",
                         x->install_hint ? "; " : "", x->install_hint ? x->install_hint : "");
    if (rc == ENOENT)
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "no such file%s%.300s", x->install_hint ? "; " : "",
                         x->install_hint ? x->install_hint : "");
    return fg_errmsg(errmsg, FG_E_IO, "cannot start it: %s", strerror(rc));
}

enum fg_err fg__kube_exec_run(const struct fg_kube_exec *x, const char *info, unsigned timeout_ms, int cancel_fd,
                              struct fg_buf *out, char *errmsg)
{
    int outp[2], errp[2];
    if (pipe2(outp, O_CLOEXEC) != 0)
        return fg_errmsg(errmsg, FG_E_IO, "cannot make a pipe: %s", strerror(errno));
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(outp[0]);
        close(outp[1]);
        return fg_errmsg(errmsg, FG_E_IO, "cannot make a pipe: %s", strerror(errno));
    }
    struct run r = { .out_fd = outp[0], .err_fd = errp[0], .cancel_fd = cancel_fd, .out = out,
                     .deadline = now_ms() + timeout_ms };
    fg_buf_init(&r.err, FG__KUBE_EXEC_STDERR_MAX);
    size_t saved_limit = out->limit;
    out->limit = FG__KUBE_EXEC_OUTPUT_MAX;
    int rc = spawn(x, info, outp[1], errp[1], &r.pid);
    close(outp[1]);
    close(errp[1]);
    enum fg_err err;
    int status = 0;
    if (rc != 0) {
        err = spawn_failed(x, rc, errmsg);
        goto out_close;
    }
    if (!(err = collect(&r)))
        err = await_exit(&r, &status);
    switch (err) {
    case FG_OK:   /* reaped */
        err = explain_exit(x, status, &r.err, errmsg);
        goto out_close;
    case FG_E_TIMEOUT:
        fg_errmsg(errmsg, err, "did not finish within %u ms and was killed", timeout_ms);
        break;
    case FG_E_TOO_BIG:
        fg_errmsg(errmsg, err, "wrote more than %u bytes and was killed", FG__KUBE_EXEC_OUTPUT_MAX);
        break;
    case FG_E_SHUTDOWN:
        fg_errmsg(errmsg, err, "stopped: the client is being freed");
        break;
    default:
        fg_errmsg(errmsg, err, "cannot wait for it: %s", strerror(errno));
        break;
    }
    kill_and_reap(r.pid);
out_close:
    if (r.out_fd >= 0)
        close(r.out_fd);
    if (r.err_fd >= 0)
        close(r.err_fd);
    fg_buf_cleanup(&r.err);
    out->limit = saved_limit;
    return err;
}
