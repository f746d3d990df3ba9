/*
 * supervisor — `fracgpu-sim-cluster`: starts the test API server and every enabled component as
 * processes of their own, waits until the initial nodes are Ready, says so on stdout, keeps them
 * running (a part that exits is started again after a backoff, 1 s doubling to 30 s and back to 1 s
 * after a minute's run, the API server on its old port with its state file), and on SIGTERM or
 * SIGINT stops them in reverse order, then any pod process a kubelet left behind.
 *
 *   fracgpu-sim-cluster --kubeconfig-out FILE [--nodes N] [--config FILE] [--dir DIR]
 *                       [--disable PART]... [--apiserver PATH] [--fracgpu PATH] [--ready-timeout D]
 *                       [--log-level LEVEL]
 *
 * The working directory (--dir, else a new /tmp/fracgpu-sim-XXXXXX) holds config.json (what every
 * part reads), logs/<part>.log, the API server's state file and audit log (audit.log), and
 * nodes/<node>/ (each simulated node's own host directories and its pods' files). The ready line is
 *   fracgpu-sim-cluster: ready: N nodes, kubeconfig FILE, directory DIR
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/selfpath.h"
#include "e2e/cluster/pidfile.h"
#include "e2e/cluster/sim.h"
#include "e2e/cluster/supervisor.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"

#define LOG "sim-cluster"

#define BACKOFF_MAX_NS (30 * FG_NS_PER_S)
#define BACKOFF_RESET_NS (60 * FG_NS_PER_S)   /* a run this long starts the backoff from 1 s again */

/* ---- children ---- */

static struct fg_sim_child *add_child(struct fg_sim_supervisor *s, const char *name)
{
    struct fg_sim_child *c = &s->children[s->nchildren++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->backoff_ns = FG_NS_PER_S;
    return c;
}

static void set_argv(struct fg_sim_child *c, const char *const *argv)
{
    for (size_t i = 0; c->argv[i]; i++)
        FG_FREE(c->argv[i]);
    for (size_t i = 0; argv[i] && i + 1 < sizeof c->argv / sizeof c->argv[0]; i++)
        c->argv[i] = fg_strdup(argv[i]);
}

/* Starts c with stdout and stderr appended to logs/<name>.log (stdout into *out_pipe when given). */
static enum fg_err spawn(struct fg_sim_supervisor *s, struct fg_sim_child *c, int *out_pipe)
{
    char log_path[PATH_MAX + 64];
    snprintf(log_path, sizeof log_path, "%s/logs/%s.log", s->dir, c->name);
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int pipefd[2] = { -1, -1 };
    if (log < 0 || (out_pipe && pipe2(pipefd, O_CLOEXEC))) {
        if (log >= 0)
            close(log);
        return FG_E_IO;
    }
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        dup2(out_pipe ? pipefd[1] : log, 1);
        dup2(log, 2);
        execv(c->argv[0], c->argv);
        static const char why[] = "fracgpu-sim-cluster: cannot run the part's program\n";
        ssize_t ignored = write(2, why, sizeof why - 1);   /* only async-signal-safe calls here */
        (void)ignored;
        _exit(127);
    }
    close(log);
    if (out_pipe)
        close(pipefd[1]);
    if (pid < 0) {
        if (out_pipe)
            close(pipefd[0]);
        return FG_E_IO;
    }
    if (out_pipe)
        *out_pipe = pipefd[0];
    c->pid = pid;
    c->started_ns = fg_clock_mono_ns();
    c->restart_at_ns = 0;
    fg_log(FG_LOG_INFO, LOG, "started %s (pid %d)", c->name, (int)pid);
    return FG_OK;
}

/* Reads the API server's "HOST:PORT" line within timeout_ms. */
static bool read_address(int fd, unsigned *port, unsigned timeout_ms)
{
    char line[128];
    size_t len = 0;
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    while (len < sizeof line - 1 && fg_clock_mono_ns() < deadline) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(fd, line + len, 1);
        if (n <= 0)
            return false;
        if (line[len] == '\n') {
            line[len] = '\0';
            const char *colon = strrchr(line, ':');
            return colon && sscanf(colon + 1, "%u", port) == 1;
        }
        len++;
    }
    return false;
}

static enum fg_err start_apiserver(struct fg_sim_supervisor *s, struct fg_sim_child *c)
{
    char listen[64], state[PATH_MAX + 32], audit[PATH_MAX + 32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", s->port);
    snprintf(state, sizeof state, "%s/apiserver-state.json", s->dir);
    snprintf(audit, sizeof audit, "%s/audit.log", s->dir);
    const char *argv[] = { s->apiserver_bin, "--listen", listen, "--kubeconfig-out", s->kubeconfig, "--state-file",
                           state, "--audit-log", audit, "--log-level", "warn", NULL };
    set_argv(c, argv);
    if (s->apiserver_out >= 0)
        close(s->apiserver_out);
    s->apiserver_out = -1;
    enum fg_err err = spawn(s, c, &s->apiserver_out);
    if (!err && !read_address(s->apiserver_out, &s->port, 10000))
        err = FG_E_TIMEOUT;
    return err;
}

static enum fg_err start_component(struct fg_sim_supervisor *s, struct fg_sim_child *c)
{
    const char *argv[] = { s->self, "component", c->name, "--kubeconfig", s->kubeconfig, "--config", s->config_path,
                           "--dir", s->dir, "--log-level", s->log_level, NULL };
    set_argv(c, argv);
    return spawn(s, c, NULL);
}

static enum fg_err start(struct fg_sim_supervisor *s, struct fg_sim_child *c)
{
    return c == &s->children[0] ? start_apiserver(s, c) : start_component(s, c);
}

/* Reaps exited children and schedules their restart. */
static void reap(struct fg_sim_supervisor *s)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < s->nchildren; i++) {
            struct fg_sim_child *c = &s->children[i];
            if (c->pid != pid)
                continue;
            c->pid = 0;
            c->restarts++;
            if (fg_clock_mono_ns() - c->started_ns >= BACKOFF_RESET_NS)
                c->backoff_ns = FG_NS_PER_S;   /* it ran well: no crash loop */
            c->restart_at_ns = fg_clock_mono_ns() + c->backoff_ns;
            fg_log(FG_LOG_WARN, LOG, "%s exited (%s %d); starting it again in %llu ms", c->name,
                   WIFEXITED(status) ? "status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                   (unsigned long long)(c->backoff_ns / FG_NS_PER_MS));
            c->backoff_ns = c->backoff_ns * 2 < BACKOFF_MAX_NS ? c->backoff_ns * 2 : BACKOFF_MAX_NS;
        }
    }
    uint64_t now = fg_clock_mono_ns();
    for (size_t i = 0; i < s->nchildren; i++) {
        struct fg_sim_child *c = &s->children[i];
        if (!c->pid && c->restart_at_ns && c->restart_at_ns <= now && start(s, c) != FG_OK)
            c->restart_at_ns = now + c->backoff_ns;
    }
}

/* SIGTERM to c, then SIGKILL after timeout. */
static void stop_child(struct fg_sim_child *c, uint64_t timeout_ns)
{
    c->restart_at_ns = 0;
    if (!c->pid)
        return;
    kill(c->pid, SIGTERM);
    uint64_t deadline = fg_clock_mono_ns() + timeout_ns;
    int status;
    while (waitpid(c->pid, &status, WNOHANG) == 0) {
        if (fg_clock_mono_ns() > deadline) {
            fg_log(FG_LOG_WARN, LOG, "%s did not stop within %llu s: killing it", c->name,
                   (unsigned long long)(timeout_ns / FG_NS_PER_S));
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            break;
        }
        nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    }
    c->pid = 0;
}

/* ---- readiness ---- */

static size_t initial_nodes(const struct fg_sim_config *cfg)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->ngroups; i++)
        n += cfg->groups[i].initial_size;
    return n;
}

static size_t ready_nodes(struct fg_kube_client *client)
{
    json_object *list = NULL;
    char *path = fg_kube_path(&fg_kube_nodes, NULL, NULL, NULL, NULL);
    size_t ready = 0;
    if (fg_kube_get(client, path, &list, NULL) == FG_OK) {
        json_object *items = fg_json_get(list, "items", NULL);
        for (size_t i = 0; i < fg_json_array_len(items); i++) {
            json_object *conds = fg_json_get(json_object_array_get_idx(items, i), "status", "conditions", NULL);
            for (size_t j = 0; j < fg_json_array_len(conds); j++) {
                json_object *c = json_object_array_get_idx(conds, j);
                ready += fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready") &&
                         fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
            }
        }
    }
    json_object_put(list);
    free(path);
    return ready;
}

/* The supervisor's own client, and the initial instances of every node group (those already there,
 * in a reused working directory, count). */
static enum fg_err launch_fleet(struct fg_sim_supervisor *s, char *errmsg)
{
    struct fg_kube_config kc;
    enum fg_err err = fg_kube_config_load_file(s->kubeconfig, NULL, &kc, errmsg);
    if (err)
        return err;
    err = fg_kube_client_new(&kc, NULL, &s->client, errmsg);
    fg_kube_config_cleanup(&kc);
    for (size_t i = 0; i < s->cfg.ngroups && !err; i++) {
        const struct fg_sim_group *g = &s->cfg.groups[i];
        long have = fg_sim_cloud_count(s->client, g->name);
        if (have < 0)
            return fg_errmsg(errmsg, FG_E_CONNECT, "cannot list the instances of %s", g->name);
        for (long n = have; n < (long)g->initial_size && !err; n++) {
            char node[FG_SIM_NODE_NAME_MAX];
            err = fg_sim_cloud_launch(s->client, g->name, node, errmsg);
        }
    }
    return err;
}

/* Waits for the initial nodes (when kubelets run), watching the children meanwhile. */
static enum fg_err wait_ready(struct fg_sim_supervisor *s, char *errmsg)
{
    size_t want = s->cfg.kubelets ? initial_nodes(&s->cfg) : 0, have = 0;
    uint64_t deadline = fg_clock_mono_ns() + s->ready_timeout_ns;
    while ((have = ready_nodes(s->client)) < want && fg_clock_mono_ns() < deadline) {
        reap(s);
        nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
    }
    if (have < want)
        return fg_errmsg(errmsg, FG_E_TIMEOUT, "%zu of %zu nodes Ready after the ready timeout (see %s/logs)", have,
                         want, s->dir);
    printf("fracgpu-sim-cluster: ready: %zu nodes, kubeconfig %s, directory %s\n", have, s->kubeconfig, s->dir);
    fflush(stdout);
    return FG_OK;
}

int fg_sim_supervisor_main(int argc, char **argv)
{
    struct fg_sim_supervisor s = { .apiserver_out = -1 };
    int status = fg_sim_supervisor_parse(&s, argc, argv);
    if (status)
        return status < 0 ? 0 : status;
    fg_sim_self_path(s.self, sizeof s.self, NULL);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char errmsg[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_sim_supervisor_write_config(&s, errmsg);
    struct fg_sim_child *api = add_child(&s, "apiserver");
    if (!err && (err = start_apiserver(&s, api)))
        fg_errmsg(errmsg, err, "the test API server did not start (see %s/logs/apiserver.log)", s.dir);
    if (!err)
        err = launch_fleet(&s, errmsg);
    const char *const *names = fg_sim_component_names;
    for (size_t i = 0; i < FG_SIM_NCOMPONENTS && !err; i++) {
        if (!*fg_sim_component_switch(&s.cfg, names[i]))
            continue;
        if ((err = start_component(&s, add_child(&s, names[i]))))
            fg_errmsg(errmsg, err, "cannot start %s", names[i]);
    }
    if (!err)
        err = wait_ready(&s, errmsg);
    if (err) {
        fg_log(FG_LOG_ERROR, LOG, "%s", errmsg);
        status = 1;
    } else {
        const struct timespec tick = { 0, 100 * 1000 * 1000 };
        int sig;
        while ((sig = sigtimedwait(&sigs, NULL, &tick)) < 0)
            reap(&s);
        fg_log(FG_LOG_INFO, LOG, "stopping on %s", strsignal(sig));
    }
    for (size_t i = s.nchildren; i-- > 1;)
        stop_child(&s.children[i], 20 * FG_NS_PER_S);
    if (s.nchildren)
        stop_child(&s.children[0], 10 * FG_NS_PER_S);
    fg_sim_pidfile_sweep(s.dir);
    fg_kube_client_free(s.client);
    if (s.apiserver_out >= 0)
        close(s.apiserver_out);
    for (size_t i = 0; i < s.nchildren; i++)
        set_argv(&s.children[i], (const char *const[]){ NULL });
    fg_sim_config_cleanup(&s.cfg);
    return status;
}
