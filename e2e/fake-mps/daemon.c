/* daemon — fracgpu-sim-mps-control's control daemon: the socket, the commands, the limits file;
 * see fake_mps.h. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fake_mps.h"

struct daemon {
    int listen_fd, lock_fd, sig_fd;
    FILE *log;
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char limits[PATH_MAX];
    double percentage;
    json_object *mem;    /* device -> value as given */
    unsigned commands;
    bool quit;
};

static void daemon_log(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void daemon_log(struct daemon *d, const char *fmt, ...)
{
    if (!d->log)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(d->log, "[%s.%03ld Control %5d] ", when, ts.tv_nsec / 1000000, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    vfprintf(d->log, fmt, ap);
    va_end(ap);
    fputc('\n', d->log);
    fflush(d->log);
}

/* Rewrites the limits file: a temporary name, then rename. */
static void write_limits(struct daemon *d)
{
    json_object *o = json_object_new_object();
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    json_object_object_add(o, "pid", json_object_new_int((int)getpid()));
    json_object_object_add(o, "visible_devices", visible ? json_object_new_string(visible) : NULL);
    json_object_object_add(o, "log_directory", json_object_new_string(fake_mps_log_dir()));
    json_object_object_add(o, "default_active_thread_percentage", json_object_new_double(d->percentage));
    json_object_object_add(o, "default_device_pinned_mem_limit", json_object_get(d->mem));
    json_object_object_add(o, "commands", json_object_new_int((int)d->commands));
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", d->limits);
    if (json_object_to_file_ext(tmp, o, JSON_C_TO_STRING_PLAIN) != 0 || rename(tmp, d->limits) != 0)
        daemon_log(d, "cannot write %s: %s", d->limits, strerror(errno));
    json_object_put(o);
}

/* "4096M" / "10G": true for an integer followed by M or G. */
static bool mem_value(const char *v)
{
    size_t n = strspn(v, "0123456789");
    return n > 0 && n < 16 && (v[n] == 'M' || v[n] == 'G') && v[n + 1] == '\0';
}

/* Runs one command; the reply goes to out. */
static void command(struct daemon *d, char *line, char *out, size_t size)
{
    out[0] = '\0';
    char *save = NULL;
    const char *cmd = strtok_r(line, " \t", &save);
    const char *a1 = strtok_r(NULL, " \t", &save), *a2 = strtok_r(NULL, " \t", &save);
    d->commands++;
    if (!cmd)
        return;
    if (!strcmp(cmd, "get_server_list")) {
        /* no MPS server runs in the stand-in */
    } else if (!strcmp(cmd, "get_default_active_thread_percentage")) {
        snprintf(out, size, "%.1f\n", d->percentage);
    } else if (!strcmp(cmd, "set_default_active_thread_percentage")) {
        char *end = NULL;
        double p = a1 ? strtod(a1, &end) : 0;
        if (!a1 || *end || !(p > 0 && p <= 100))
            snprintf(out, size, "Invalid active thread percentage \"%s\"\n", a1 ? a1 : "");
        else
            d->percentage = p;
    } else if (!strcmp(cmd, "set_default_device_pinned_mem_limit")) {
        if (!a1 || !a2 || !mem_value(a2))
            snprintf(out, size, "Invalid device pinned memory limit: want <dev> <N>M or <N>G\n");
        else
            json_object_object_add(d->mem, a1, json_object_new_string(a2));
    } else if (!strcmp(cmd, "get_default_device_pinned_mem_limit")) {
        json_object *v = NULL;
        if (a1 && json_object_object_get_ex(d->mem, a1, &v))
            snprintf(out, size, "%s\n", json_object_get_string(v));
    } else if (!strcmp(cmd, "quit")) {
        d->quit = true;
    } else {
        daemon_log(d, "Unknown command %s", cmd);
    }
}

/* One client connection: a line in, the reply out. */
static void serve(struct daemon *d, int fd)
{
    daemon_log(d, "Accepting connection...");
    daemon_log(d, "NEW UI");
    char line[1024];
    size_t len = 0;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    while (len + 1 < sizeof line && poll(&p, 1, 1000) > 0) {
        ssize_t n = read(fd, line + len, sizeof line - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        if (memchr(line, '\n', len))
            break;
    }
    line[len] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    daemon_log(d, "Cmd:%s", line);
    char out[1024];
    command(d, line, out, sizeof out);
    if (out[0] && send(fd, out, strlen(out), MSG_NOSIGNAL) < 0)
        daemon_log(d, "cannot answer: %s", strerror(errno));
    daemon_log(d, "UI closed");
    write_limits(d);
}

static const char *failed(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *failed(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return why;
}

/* Takes the lock, listens, opens the log: NULL, or what went wrong. */
static const char *start(struct daemon *d, char *why, size_t size)
{
    const char *pipe_dir = fake_mps_pipe_dir();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/control_lock", pipe_dir);
    d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (d->lock_fd < 0)
        return failed(why, size, "cannot open %s: %s", path, strerror(errno));
    if (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return failed(why, size, "An instance of this daemon is already running");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if ((size_t)snprintf(d->sock, sizeof d->sock, "%s/control", pipe_dir) >= sizeof d->sock)
        return failed(why, size, "pipe directory path too long");
    memcpy(sa.sun_path, d->sock, sizeof d->sock);
    unlink(d->sock);   /* left by a daemon that died: the lock says none runs */
    d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (d->listen_fd < 0 || bind(d->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(d->listen_fd, 16) != 0)
        return failed(why, size, "cannot listen on %s: %s", d->sock, strerror(errno));
    snprintf(path, sizeof path, "%s/control.log", fake_mps_log_dir());
    d->log = fopen(path, "ae");
    if (!d->log)
        return failed(why, size, "cannot open %s: %s", path, strerror(errno));
    snprintf(d->limits, sizeof d->limits, "%s/%s", pipe_dir, FAKE_MPS_LIMITS_FILE);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    d->sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC);
    if (d->sig_fd < 0)
        return failed(why, size, "signalfd: %s", strerror(errno));
    daemon_log(d, "Starting control daemon using socket %s", d->sock);
    daemon_log(d, "To connect CUDA applications to this daemon, set env CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    write_limits(d);
    return NULL;
}

static void run(struct daemon *d)
{
    while (!d->quit) {
        struct pollfd p[2] = { { .fd = d->listen_fd, .events = POLLIN }, { .fd = d->sig_fd, .events = POLLIN } };
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents) {
            struct signalfd_siginfo si;
            if (read(d->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
                daemon_log(d, "Exiting on signal %u", si.ssi_signo);
            break;
        }
        if (p[0].revents) {
            int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                serve(d, fd);
                close(fd);
            }
        }
    }
    if (d->quit)
        daemon_log(d, "Exit");
}

static void cleanup(struct daemon *d, bool started)
{
    if (started) {
        unlink(d->sock);
        unlink(d->limits);
    }
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    if (d->sig_fd >= 0)
        close(d->sig_fd);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    if (d->log)
        fclose(d->log);
    json_object_put(d->mem);
}

int fake_mps_daemon(bool foreground)
{
    const char *injected = getenv("FG_SIM_MPS_START_ERROR");
    if (injected) {
        fprintf(stderr, "%s\n", injected);
        return 1;
    }
    int ready[2] = { -1, -1 };
    if (!foreground) {
        if (pipe2(ready, O_CLOEXEC) != 0)
            return perror("pipe"), 1;
        pid_t pid = fork();
        if (pid < 0)
            return perror("fork"), 1;
        if (pid > 0) {
            /* the caller's process: exit as soon as the daemon says whether it listens */
            close(ready[1]);
            char msg[512];
            ssize_t n = read(ready[0], msg, sizeof msg - 1);
            close(ready[0]);
            if (n == 1 && msg[0] == '\0')
                return 0;
            fprintf(stderr, "%.*s\n", n > 0 ? (int)n : 0, n > 0 ? msg : "");
            return 1;
        }
        close(ready[0]);
        setsid();
    }
    struct daemon d = { .listen_fd = -1, .lock_fd = -1, .sig_fd = -1, .percentage = 100,
                        .mem = json_object_new_object() };
    char why[512];
    const char *err = start(&d, why, sizeof why);
    if (!foreground) {
        if (!err) {
            int null = open("/dev/null", O_RDWR);
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            close(null);
        }
        if (write(ready[1], err ? err : "", err ? strlen(err) : 1) < 0) {
            /* the caller is gone: nobody to tell */
        }
        close(ready[1]);
    } else if (err) {
        fprintf(stderr, "%s\n", err);
    }
    if (!err)
        run(&d);
    cleanup(&d, !err);
    return err ? 1 : 0;
}
