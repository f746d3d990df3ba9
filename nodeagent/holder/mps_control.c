/* mps_control — bounded runs of nvidia-cuda-mps-control; see mps_control.h. */
#include "nodeagent/holder/mps_control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/mem.h"

extern char **environ;

#define OUTPUT_MAX (64u * 1024u)

static const char *const owned_vars[] = { "CUDA_MPS_PIPE_DIRECTORY=", "CUDA_MPS_LOG_DIRECTORY=",
                                          "CUDA_VISIBLE_DEVICES=" };

static bool owned(const char *var, bool with_visible)
{
    for (size_t i = 0; i < sizeof owned_vars / sizeof owned_vars[0]; i++)
        if ((i < 2 || with_visible) && fg_str_has_prefix(var, owned_vars[i]))
            return true;
    return false;
}

void fg_mps_control_init(struct fg_mps_control *c, const char *bin, const char *pipe_dir, const char *log_dir,
                         const char *visible)
{
    size_t n = 0;
    while (environ[n])
        n++;
    c->bin = fg_strdup(bin);
    c->envp = fg_calloc(n + 4, sizeof *c->envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!owned(environ[i], visible != NULL))
            c->envp[k++] = fg_strdup(environ[i]);
    c->envp[k++] = fg_asprintf("CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    c->envp[k++] = fg_asprintf("CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
    if (visible)
        c->envp[k++] = fg_asprintf("CUDA_VISIBLE_DEVICES=%s", visible);
    c->envp[k] = NULL;
}

void fg_mps_control_cleanup(struct fg_mps_control *c)
{
    for (size_t i = 0; c->envp && c->envp[i]; i++)
        free(c->envp[i]);
    free(c->envp);
    free(c->bin);
    c->envp = NULL;
    c->bin = NULL;
}

/* Starts the child with in[0] as stdin and out[1] as stdout and stderr. */
static int spawn(const struct fg_mps_control *c, const char *arg, int in_fd, int out_fd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    posix_spawnattr_init(&attr);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGINT);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = { c->bin, (char *)arg, NULL };
    int rc = posix_spawnp(pid, c->bin, &fa, &attr, argv, c->envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Appends what can be read from fd now (up to OUTPUT_MAX in all); false at end of file or error. */
static bool drain(int fd, struct fg_buf *out)
{
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0)
        return n < 0 && (errno == EAGAIN || errno == EINTR);
    size_t room = out->len < OUTPUT_MAX ? OUTPUT_MAX - out->len : 0;
    fg_buf_put(out, chunk, (size_t)n < room ? (size_t)n : room);
    return true;
}

static int exit_status(int wstatus)
{
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : 255;
}

enum fg_err fg_mps_control_run(const struct fg_mps_control *c, const char *arg, const char *input,
                               unsigned timeout_ms, struct fg_buf *out, int *status, char *errmsg)
{
    fg_buf_reset(out);
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return fg_errmsg(errmsg, FG_E_IO, "pipe: %s", strerror(errno));
    if (pipe2(outp, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return fg_errmsg(errmsg, FG_E_IO, "pipe: %s", strerror(errno));
    }
    pid_t pid;
    int rc = spawn(c, arg, in[0], outp[1], &pid);
    close(in[0]);
    close(outp[1]);
    if (rc != 0) {
        close(in[1]);
        close(outp[0]);
        return fg_errmsg(errmsg, FG_E_IO, "cannot run %s: %s", c->bin, rc == ENOENT ? "not found" : strerror(rc));
    }
    /* the input is a few short lines: it fits the pipe, so writing it cannot block on the child */
    if (input && write(in[1], input, strlen(input)) < 0) {
        /* the child went before reading: its exit status says what happened */
    }
    close(in[1]);
    fcntl(outp[0], F_SETFL, O_NONBLOCK);

    uint64_t deadline = fg_clock_real_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    bool open = true, exited = false;
    int wstatus = 0;
    while (!exited) {
        if (waitpid(pid, &wstatus, WNOHANG) == pid) {
            exited = true;
            break;
        }
        uint64_t now = fg_clock_real_ns();
        if (now >= deadline)
            break;
        uint64_t left_ms = (deadline - now) / FG_NS_PER_MS + 1;
        struct pollfd p = { .fd = outp[0], .events = POLLIN };
        /* a short poll: the child's exit does not wake it when a daemon still holds the pipe */
        int ready = open ? poll(&p, 1, left_ms < 10 ? (int)left_ms : 10) : 0;
        if (ready > 0)
            open = drain(outp[0], out);
        else if (!open)
            usleep(5000);
    }
    while (open && drain(outp[0], out) && out->len < OUTPUT_MAX) {
        struct pollfd p = { .fd = outp[0], .events = POLLIN };
        if (poll(&p, 1, 0) <= 0)
            break;
    }
    close(outp[0]);
    if (!exited) {
        kill(pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        return fg_errmsg(errmsg, FG_E_TIMEOUT, "%s%s%s did not finish within %u ms", c->bin, arg ? " " : "",
                         arg ? arg : "", timeout_ms);
    }
    *status = exit_status(wstatus);
    return FG_OK;
}

enum fg_err fg_mps_control_command(const struct fg_mps_control *c, const char *command, unsigned timeout_ms,
                                   struct fg_buf *reply, char *errmsg)
{
    struct fg_buf own = FG_BUF_INIT;
    struct fg_buf *out = reply ? reply : &own;
    char *input = fg_asprintf("%s\n", command);
    int status = 0;
    enum fg_err err = fg_mps_control_run(c, NULL, input, timeout_ms, out, &status, errmsg);
    free(input);
    if (!err && status != 0) {
        size_t len = out->len;
        while (len && (out->data[len - 1] == '\n' || out->data[len - 1] == ' '))
            len--;
        err = fg_errmsg(errmsg, FG_E_CONNECT, "\"%s\": %s exited with %d%s%.*s", command, c->bin, status,
                        len ? ": " : "", (int)(len > 200 ? 200 : len), len ? out->data : "");
    }
    fg_buf_cleanup(&own);
    return err;
}
