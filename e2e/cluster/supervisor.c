/*
 * supervisor — `fracgpu-sim-cluster`: starts the test API server and every enabled component as
 * processes of their own, waits until the initial nodes are Ready, says so on stdout, keeps them
 * running (a part that exits is started again after a backoff, the API server on its old port with
 * its state file), and on SIGTERM or SIGINT stops them in reverse order, then any pod process a
 * kubelet left behind.
 *
 *   fracgpu-sim-cluster --kubeconfig-out FILE [--nodes N] [--config FILE] [--dir DIR]
 *                       [--disable PART]... [--apiserver PATH] [--fracgpu PATH] [--ready-timeout D]
 *                       [--log-level LEVEL]
 *
 * The working directory (--dir, else a new /tmp/fracgpu-sim-XXXXXX) holds config.json (what every
 * part reads), logs/<part>.log, the API server's state file, and nodes/<node>/ (each simulated
 * node's own host directories and its pods' files). The ready line is
 *   fracgpu-sim-cluster: ready: N nodes, kubeconfig FILE, directory DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/pidfile.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"

#define LOG "sim-cluster"
#define MAX_CHILDREN (FG_SIM_NCOMPONENTS + 1)
#define BACKOFF_MAX_NS (30 * FG_NS_PER_S)

struct child {
    char name[32];
    char *argv[16];
    pid_t pid;
    uint64_t restart_at_ns;     /* when to start again (0: running or not wanted) */
    uint64_t backoff_ns;
    unsigned restarts;
};

struct supervisor {
    struct fg_sim_config cfg;
    char dir[1024], kubeconfig[PATH_MAX], config_path[PATH_MAX];
    char apiserver_bin[PATH_MAX], self[PATH_MAX];
    const char *log_level;
    struct child children[MAX_CHILDREN];
    size_t nchildren;
    unsigned port;
    int apiserver_out;          /* the API server's stdout, kept open (it prints one line) */
    struct fg_kube_client *client;
    uint64_t ready_timeout_ns;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fracgpu-sim-cluster --kubeconfig-out FILE [options]\n\n"
            "Runs the test API server and a simulated cluster (controllers, default scheduler, kubelets,\n"
            "autoscaler) until SIGTERM or SIGINT.\n\n"
            "  --kubeconfig-out FILE   where to write the kubeconfig of the cluster (required)\n"
            "  --nodes N               initial nodes of the first node group\n"
            "  --config FILE           node groups and timings (YAML; see e2e/cluster/README.md)\n"
            "  --dir DIR               working directory (default: a new /tmp/fracgpu-sim-XXXXXX)\n"
            "  --disable PART          do not run controllers, scheduler, kubelets or autoscaler\n"
            "  --apiserver PATH        the test API server (default: fracgpu-test-apiserver beside this)\n"
            "  --fracgpu PATH          the binary pods of fracgpu's image run (default: fracgpu beside this)\n"
            "  --ready-timeout D       how long to wait for the initial nodes (default 60s)\n"
            "  --log-level LEVEL       debug, info, warn, error or off (default info)\n");
}

/* dir/name beside this executable. */
static void beside_self(char *out, size_t size, const char *name)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, size, "%.3000s/%s", self, name);
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* ---- children ---- */

static struct child *add_child(struct supervisor *s, const char *name)
{
    struct child *c = &s->children[s->nchildren++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->backoff_ns = FG_NS_PER_S;
    return c;
}

static void set_argv(struct child *c, const char *const *argv)
{
    for (size_t i = 0; c->argv[i]; i++)
        FG_FREE(c->argv[i]);
    for (size_t i = 0; argv[i] && i + 1 < sizeof c->argv / sizeof c->argv[0]; i++)
        c->argv[i] = fg_strdup(argv[i]);
}

/* Starts c with stdout and stderr appended to logs/<name>.log (stdout into *out_pipe when given). */
static enum fg_err spawn(struct supervisor *s, struct child *c, int *out_pipe)
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
        dprintf(2, "cannot run %s: %s\n", c->argv[0], strerror(errno));
        _exit(127);
    }
    close(log);
    if (out_pipe) {
        close(pipefd[1]);
        *out_pipe = pipefd[0];
    }
    if (pid < 0) {
        if (out_pipe)
            close(pipefd[0]);
        return FG_E_IO;
    }
    c->pid = pid;
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

static enum fg_err start_apiserver(struct supervisor *s, struct child *c)
{
    char listen[64], state[PATH_MAX + 32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", s->port);
    snprintf(state, sizeof state, "%s/apiserver-state.json", s->dir);
    const char *argv[] = { s->apiserver_bin, "--listen", listen, "--kubeconfig-out", s->kubeconfig, "--state-file",
                           state, "--log-level", "warn", NULL };
    set_argv(c, argv);
    if (s->apiserver_out >= 0)
        close(s->apiserver_out);
    s->apiserver_out = -1;
    enum fg_err err = spawn(s, c, &s->apiserver_out);
    if (!err && !read_address(s->apiserver_out, &s->port, 10000))
        err = FG_E_TIMEOUT;
    return err;
}

static enum fg_err start_component(struct supervisor *s, struct child *c)
{
    const char *argv[] = { s->self, "component", c->name, "--kubeconfig", s->kubeconfig, "--config", s->config_path,
                           "--dir", s->dir, "--log-level", s->log_level, NULL };
    set_argv(c, argv);
    return spawn(s, c, NULL);
}

static enum fg_err start(struct supervisor *s, struct child *c)
{
    return c == &s->children[0] ? start_apiserver(s, c) : start_component(s, c);
}

/* Reaps exited children and schedules their restart. */
static void reap(struct supervisor *s)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < s->nchildren; i++) {
            struct child *c = &s->children[i];
            if (c->pid != pid)
                continue;
            c->pid = 0;
            c->restarts++;
            c->restart_at_ns = fg_clock_mono_ns() + c->backoff_ns;
            fg_log(FG_LOG_WARN, LOG, "%s exited (%s %d); starting it again in %llu ms", c->name,
                   WIFEXITED(status) ? "status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                   (unsigned long long)(c->backoff_ns / FG_NS_PER_MS));
            c->backoff_ns = c->backoff_ns * 2 < BACKOFF_MAX_NS ? c->backoff_ns * 2 : BACKOFF_MAX_NS;
        }
    }
    uint64_t now = fg_clock_mono_ns();
    for (size_t i = 0; i < s->nchildren; i++) {
        struct child *c = &s->children[i];
        if (!c->pid && c->restart_at_ns && c->restart_at_ns <= now && start(s, c) != FG_OK)
            c->restart_at_ns = now + c->backoff_ns;
    }
}

/* SIGTERM to c, then SIGKILL after timeout. */
static void stop_child(struct child *c, uint64_t timeout_ns)
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
static enum fg_err launch_fleet(struct supervisor *s, char *errmsg)
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
static enum fg_err wait_ready(struct supervisor *s, char *errmsg)
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

/* ---- options ---- */

static int parse(struct supervisor *s, int argc, char **argv)
{
    static const struct option options[] = {
        { "kubeconfig-out", required_argument, NULL, 'k' }, { "nodes", required_argument, NULL, 'n' },
        { "config", required_argument, NULL, 'c' },         { "dir", required_argument, NULL, 'd' },
        { "disable", required_argument, NULL, 'x' },        { "apiserver", required_argument, NULL, 'a' },
        { "fracgpu", required_argument, NULL, 'f' },        { "ready-timeout", required_argument, NULL, 'r' },
        { "log-level", required_argument, NULL, 'v' },      { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *config = NULL, *dir = NULL, *kubeconfig = NULL, *fracgpu = NULL;
    const char *disabled[FG_SIM_NCOMPONENTS];
    size_t ndisabled = 0;
    long nodes = -1;
    int64_t ms;
    char *end, why[FG_ERRMSG_MAX];
    enum fg_log_level level;
    int c;
    s->ready_timeout_ns = 60 * FG_NS_PER_S;
    s->log_level = "info";
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'k': kubeconfig = optarg; break;
        case 'c': config = optarg; break;
        case 'd': dir = optarg; break;
        case 'a': snprintf(s->apiserver_bin, sizeof s->apiserver_bin, "%s", optarg); break;
        case 'f': fracgpu = optarg; break;
        case 'n':
            nodes = strtol(optarg, &end, 10);
            if (!*optarg || *end || nodes < 0 || nodes > 100000) {
                fprintf(stderr, "fracgpu-sim-cluster: --nodes wants 0 to 100000, got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case 'x':
            if (!fg_sim_component_enabled(&(struct fg_sim_config){ .controllers = true, .scheduler = true,
                                                                   .kubelets = true, .autoscaler = true },
                                          optarg)) {
                fprintf(stderr, "fracgpu-sim-cluster: --disable wants controllers, scheduler, kubelets or autoscaler, "
                                "got \"%s\"\n", optarg);
                return 2;
            }
            disabled[ndisabled++ % FG_SIM_NCOMPONENTS] = optarg;
            break;
        case 'r':
            if (fg_duration_parse(optarg, &ms, why) != FG_OK) {
                fprintf(stderr, "fracgpu-sim-cluster: --ready-timeout: %s\n", why);
                return 2;
            }
            s->ready_timeout_ns = (uint64_t)ms * FG_NS_PER_MS;
            break;
        case 'v':
            if (!fg_log_parse_level(optarg, &level)) {
                fprintf(stderr, "fracgpu-sim-cluster: --log-level wants debug, info, warn, error or off\n");
                return 2;
            }
            fg_log_set_level(level);
            s->log_level = optarg;
            break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || !kubeconfig) {
        fprintf(stderr, "fracgpu-sim-cluster: %s\n", optind != argc ? "unexpected argument" : "--kubeconfig-out is required");
        usage(stderr);
        return 2;
    }
    if (config ? fg_sim_config_load(&s->cfg, config, why) != FG_OK : (fg_sim_config_default(&s->cfg), false)) {
        fprintf(stderr, "fracgpu-sim-cluster: %s\n", why);
        return 2;
    }
    if (nodes >= 0) {
        struct fg_sim_group *g = &s->cfg.groups[0];
        g->initial_size = (unsigned)nodes;
        g->min_size = g->min_size < (unsigned)nodes ? g->min_size : (unsigned)nodes;
        g->max_size = g->max_size > (unsigned)nodes ? g->max_size : (unsigned)nodes;
    }
    for (size_t i = 0; i < ndisabled && i < FG_SIM_NCOMPONENTS; i++) {
        s->cfg.controllers = s->cfg.controllers && strcmp(disabled[i], "controllers");
        s->cfg.scheduler = s->cfg.scheduler && strcmp(disabled[i], "scheduler");
        s->cfg.kubelets = s->cfg.kubelets && strcmp(disabled[i], "kubelets");
        s->cfg.autoscaler = s->cfg.autoscaler && strcmp(disabled[i], "autoscaler");
    }
    if (!s->apiserver_bin[0])
        beside_self(s->apiserver_bin, sizeof s->apiserver_bin, "fracgpu-test-apiserver");
    if (fracgpu || !s->cfg.fracgpu_binary[0]) {
        char path[PATH_MAX];
        if (fracgpu)
            snprintf(path, sizeof path, "%s", fracgpu);
        else
            beside_self(path, sizeof path, "fracgpu");
        if (!realpath(path, s->cfg.fracgpu_binary))
            snprintf(s->cfg.fracgpu_binary, sizeof s->cfg.fracgpu_binary, "%s", path);
    }
    if (dir) {
        char real[PATH_MAX];
        if (mkdirs(dir) || !realpath(dir, real)) {
            fprintf(stderr, "fracgpu-sim-cluster: cannot use --dir %s: %s\n", dir, strerror(errno));
            return 2;
        }
        if (strlen(real) >= sizeof s->dir) {
            fprintf(stderr, "fracgpu-sim-cluster: --dir %s is longer than %zu bytes\n", real, sizeof s->dir - 1);
            return 2;
        }
        memcpy(s->dir, real, strlen(real) + 1);
    } else {
        snprintf(s->dir, sizeof s->dir, "/tmp/fracgpu-sim-XXXXXX");
        if (!mkdtemp(s->dir)) {
            fprintf(stderr, "fracgpu-sim-cluster: cannot make a working directory: %s\n", strerror(errno));
            return 1;
        }
    }
    snprintf(s->kubeconfig, sizeof s->kubeconfig, "%s", kubeconfig);
    return 0;
}

static enum fg_err write_config(struct supervisor *s, char *errmsg)
{
    char logs[PATH_MAX + 8];
    snprintf(logs, sizeof logs, "%s/logs", s->dir);
    snprintf(s->config_path, sizeof s->config_path, "%s/config.json", s->dir);
    if (mkdirs(logs))
        return fg_errmsg(errmsg, FG_E_IO, "cannot make %s: %s", logs, strerror(errno));
    json_object *doc = fg_sim_config_to_json(&s->cfg);
    int rc = json_object_to_file_ext(s->config_path, doc, JSON_C_TO_STRING_PRETTY);
    json_object_put(doc);
    return rc ? fg_errmsg(errmsg, FG_E_IO, "cannot write %s", s->config_path) : FG_OK;
}

int fg_sim_supervisor_main(int argc, char **argv)
{
    struct supervisor s = { .apiserver_out = -1 };
    int status = parse(&s, argc, argv);
    if (status)
        return status < 0 ? 0 : status;
    ssize_t n = readlink("/proc/self/exe", s.self, sizeof s.self - 1);
    s.self[n > 0 ? n : 0] = '\0';
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char errmsg[FG_ERRMSG_MAX] = "";
    enum fg_err err = write_config(&s, errmsg);
    struct child *api = add_child(&s, "apiserver");
    if (!err && (err = start_apiserver(&s, api)))
        fg_errmsg(errmsg, err, "the test API server did not start (see %s/logs/apiserver.log)", s.dir);
    if (!err)
        err = launch_fleet(&s, errmsg);
    const char *names[] = FG_SIM_COMPONENTS;
    for (size_t i = 0; i < FG_SIM_NCOMPONENTS && !err; i++) {
        if (!fg_sim_component_enabled(&s.cfg, names[i]))
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
