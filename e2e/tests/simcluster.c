/* simcluster — a simulated cluster as a process for end-to-end tests; see simcluster.h. */
#include "base/fs.h"
#include "base/mem.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/simcluster.h"

#include <errno.h>
#include <json-c/linkhash.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/json.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"

#define MAX_ARGS 32

/* Reads lines from fd until one holds "ready:" or timeout_s pass. */
static bool wait_ready(int fd, unsigned timeout_s)
{
    char buf[4096];
    size_t len = 0;
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_s * FG_NS_PER_S;
    while (fg_clock_mono_ns() < deadline) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "ready:"))
            return true;
        if (len == sizeof buf - 1)
            len = 0;
    }
    return false;
}

enum fg_err fg_simcluster_start(struct fg_simcluster *c, const char *config, const char *const *extra, unsigned ready_s,
                                char *errmsg)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/fgs-XXXXXX"); /* short: see below */
    if (!mkdtemp(c->dir))
        return fg_errmsg(errmsg, FG_E_IO, "mkdtemp: %s", strerror(errno));
    snprintf(c->kubeconfig, sizeof c->kubeconfig, "%s/kubeconfig", c->dir);
    /* a node's hostPaths live under <work>/nodes/<node>/, and an mps capacity holder's MPS control socket,
     * <mps-root>/<GPU-UUID>/pipe/control, must fit a unix socket's 108 bytes there: 103 with these names */
    snprintf(c->work, sizeof c->work, "%s/c", c->dir);
    char bin[512];
    const char *bindir = getenv("FG_BIN_DIR");
    snprintf(bin, sizeof bin, "%s/fracgpu-sim-cluster", bindir ? bindir : "build/bin");
    const char *argv[MAX_ARGS + 1] = { bin, "--kubeconfig-out", c->kubeconfig, "--dir", c->work, "--log-level", "info" };
    size_t argc = 7;
    if (config) {
        argv[argc++] = "--config";
        argv[argc++] = config;
    }
    for (size_t i = 0; extra && extra[i] && argc < MAX_ARGS; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    int out[2];
    if (pipe(out)) {
        enum fg_err err = fg_errmsg(errmsg, FG_E_IO, "pipe: %s", strerror(errno));
        fg_remove_tree(c->dir);
        return err;
    }
    char log[160];
    snprintf(log, sizeof log, "%s/supervisor.log", c->dir);
    c->pid = fork();
    if (c->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);   /* a test that dies takes its cluster with it */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(out[1], 1);
        if (fd >= 0)
            dup2(fd, 2);
        close(out[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    if (c->pid < 0) {
        enum fg_err err = fg_errmsg(errmsg, FG_E_IO, "fork: %s", strerror(errno));
        close(out[0]);
        fg_remove_tree(c->dir);
        return err;
    }
    bool ready = wait_ready(out[0], ready_s);
    close(out[0]);
    if (!ready) {
        fg_simcluster_stop(c, true);
        return fg_errmsg(errmsg, FG_E_TIMEOUT, "the simulated cluster was not ready within %u s (see %s)", ready_s, c->dir);
    }
    struct fg_kube_config kc;
    enum fg_err err = fg_kube_config_load_file(c->kubeconfig, NULL, &kc, errmsg);
    if (!err) {
        err = fg_kube_client_new(&kc, NULL, &c->client, errmsg);
        fg_kube_config_cleanup(&kc);
    }
    if (err) {
        fg_simcluster_stop(c, true);
        return err;
    }
    fg_kubectl_init(&c->k, c->dir, c->kubeconfig);
    return FG_OK;
}

/* With $FG_AUDIT_DIR set: the distinct requests fracgpu's identities made (the API server's audit
 * lines of system:serviceaccount:fracgpu-system:*) into $FG_AUDIT_DIR/<program>.audit, for test_rbac. */
static void keep_audit(struct fg_simcluster *c)
{
    const char *dir = getenv("FG_AUDIT_DIR");
    if (!dir || !*dir)
        return;
    char from[256], to[512];
    snprintf(from, sizeof from, "%s/audit.log", c->work);
    snprintf(to, sizeof to, "%s/%s.audit", dir, program_invocation_short_name);
    struct fg_buf in = FG_BUF_INIT;
    if (fg_buf_read_file(&in, from, NULL) != FG_OK) {
        fprintf(stderr, "no audit log at %s\n", from);
        return;
    }
    struct lh_table *seen = lh_kchar_table_new(1024, NULL);
    struct fg_buf out = FG_BUF_INIT;
    char *save = NULL;
    for (char *line = strtok_r((char *)fg_buf_str(&in), "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (fg_str_has_prefix(line, "system:serviceaccount:fracgpu-system:") && !lh_table_lookup_entry(seen, line)) {
            lh_table_insert(seen, line, NULL);
            fg_buf_put_str(&out, line);
            fg_buf_put_str(&out, "\n");
        }
    fg_mkdir_p(dir);
    if (fg_write_file_atomic(to, fg_buf_str(&out), strlen(fg_buf_str(&out))) != 0)
        fprintf(stderr, "cannot write %s\n", to);
    lh_table_free(seen);
    fg_buf_cleanup(&out);
    fg_buf_cleanup(&in);
}

void fg_simcluster_stop(struct fg_simcluster *c, bool keep)
{
    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        uint64_t deadline = fg_clock_mono_ns() + 30 * FG_NS_PER_S;
        int status;
        while (waitpid(c->pid, &status, WNOHANG) == 0) {
            if (fg_clock_mono_ns() > deadline) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, &status, 0);
                break;
            }
            nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
        }
        c->pid = 0;
        keep_audit(c);
    }
    fg_kube_client_free(c->client);
    c->client = NULL;
    if (keep || getenv("FG_KEEP_SIM")) {
        fprintf(stderr, "simulated cluster kept in %s\n", c->dir);
        return;
    }
    if (c->dir[0] && fg_remove_tree(c->dir) != 0)
        fprintf(stderr, "cannot remove %s\n", c->dir);
}

enum fg_err fg_simcluster_log(struct fg_simcluster *c, const char *component, struct fg_buf *out)
{
    char path[256];
    snprintf(path, sizeof path, "%s/logs/%s.log", c->work, component);
    fg_buf_reset(out);
    return fg_buf_read_file(out, path, NULL);
}

pid_t fg_simcluster_component_pid(struct fg_simcluster *c, const char *component)
{
    char path[256], mark[96];
    snprintf(path, sizeof path, "%s/supervisor.log", c->dir);
    snprintf(mark, sizeof mark, "started %s (pid ", component);
    struct fg_buf b;
    fg_buf_init(&b, 0);
    pid_t pid = 0;
    if (fg_buf_read_file(&b, path, NULL) == FG_OK)
        for (const char *s = fg_buf_str(&b); (s = strstr(s, mark)); s++)
            pid = (pid_t)atoi(s + strlen(mark));
    fg_buf_cleanup(&b);
    return pid;
}

/* A set of strings that no log may hold, at least MIN_SECRET characters each. */
#define MIN_SECRET 16
struct secrets {
    char **s;
    size_t n, cap;
};

static void secret_add(struct secrets *x, char *s)
{
    if (strlen(s) < MIN_SECRET) {
        free(s);
        return;
    }
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 16;
        x->s = fg_realloc(x->s, x->cap * sizeof(*x->s));
    }
    x->s[x->n++] = s;
}

/* One Secret value (base64, as the API holds it): that text, and what it decodes to — as text when
 * it is text, each line apart (a PEM key's body lines), else as lowercase hex. */
static void secret_value(struct secrets *x, const char *b64)
{
    secret_add(x, fg_strdup(b64));
    size_t len = 0;
    unsigned char *raw = fg_base64_decode(b64, &len);
    if (!raw)
        return;
    bool text = true;
    for (size_t i = 0; i < len && text; i++)
        text = raw[i] == '\n' || raw[i] == '\r' || (raw[i] >= 0x20 && raw[i] < 0x7f);
    if (text) {
        char *all = fg_strndup((const char *)raw, len), *save = NULL;
        for (char *line = strtok_r(all, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save))
            if (strncmp(line, "-----", 5))
                secret_add(x, fg_strdup(line));
        free(all);
    } else {
        char *hex = fg_malloc(2 * len + 1);
        for (size_t i = 0; i < len; i++)
            snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        secret_add(x, hex);
    }
    free(raw);
}

/* Every value of every Secret of the cluster. */
static void cluster_secrets(struct fg_simcluster *c, struct secrets *x)
{
    char *path = fg_kube_path(&fg_kube_secrets, NULL, NULL, NULL, NULL);
    json_object *list = NULL;
    if (fg_kube_get(c->client, path, &list, NULL) == FG_OK) {
        json_object *items = fg_json_get(list, "items", NULL);
        for (size_t i = 0; i < fg_json_array_len(items); i++) {
            json_object_object_foreach(fg_json_get(json_object_array_get_idx(items, i), "data", NULL), key, value) {
                (void)key;
                if (json_object_is_type(value, json_type_string))
                    secret_value(x, json_object_get_string(value));
            }
        }
    } else {
        fprintf(stderr, "cannot list the cluster's Secrets to look for them in its logs\n");
    }
    json_object_put(list);
    free(path);
}

/* What is wrong with one log: a sanitizer report, or a secret (named by its length, never shown). */
static size_t log_problems(const char *path, const struct secrets *x)
{
    struct fg_buf b;
    fg_buf_init(&b, 0);
    size_t problems = 0;
    if (fg_buf_read_file(&b, path, NULL) == FG_OK) {
        const char *text = fg_buf_str(&b);
        if (strstr(text, "ERROR: AddressSanitizer") || strstr(text, "runtime error:") ||
            strstr(text, "ERROR: LeakSanitizer") || strstr(text, "WARNING: ThreadSanitizer")) {
            fprintf(stderr, "sanitizer report in %s\n", path);
            problems++;
        }
        for (size_t i = 0; i < x->n; i++)
            if (strstr(text, x->s[i])) {
                fprintf(stderr, "secret material (%zu characters of a Secret's value) in %s\n", strlen(x->s[i]), path);
                problems++;
            }
    }
    fg_buf_cleanup(&b);
    return problems;
}

/* The secrets found in the /metrics of fracgpu's running operator replicas and node agents; how
 * many were read into *read. */
static size_t metrics_problems(struct fg_simcluster *c, const struct secrets *x, size_t *read)
{
    static const struct { const char *component; unsigned port; } served[] = { { "operator", 8080 },
                                                                               { "node-agent", 9402 } };
    size_t problems = 0;
    char *path = fg_kube_path(&fg_kube_pods, "fracgpu-system", NULL, NULL, "labelSelector=app.kubernetes.io%2Fname%3Dfracgpu");
    json_object *list = NULL;
    if (fg_kube_get(c->client, path, &list, NULL) == FG_OK) {
        json_object *items = fg_json_get(list, "items", NULL);
        for (size_t i = 0; i < fg_json_array_len(items); i++) {
            json_object *pod = json_object_array_get_idx(items, i);
            const char *ip = fg_json_get_str(pod, "status", "podIP", NULL);
            const char *component = fg_json_get_str(pod, "metadata", "labels", "app.kubernetes.io/component", NULL);
            for (size_t s = 0; ip && s < sizeof served / sizeof served[0]; s++) {
                struct fg_buf body = FG_BUF_INIT;
                bool got = fg_str_eq(component, served[s].component) &&
                           fg_harness_http(ip, served[s].port, "GET", "/metrics", &body) == 200;
                *read += got;
                for (size_t k = 0; got && k < x->n; k++)
                    if (strstr(fg_buf_str(&body), x->s[k])) {
                        fprintf(stderr, "secret material (%zu characters of a Secret's value) in the /metrics of %s\n",
                                strlen(x->s[k]), fg_json_get_str(pod, "metadata", "name", NULL));
                        problems++;
                    }
                fg_buf_cleanup(&body);
            }
        }
    }
    json_object_put(list);
    free(path);
    return problems;
}

size_t fg_simcluster_log_problems(struct fg_simcluster *c)
{
    if (!c->client)
        return 0;   /* never started: no cluster, no logs */
    struct secrets x = { 0 };
    cluster_secrets(c, &x);
    char patterns[3][256];
    snprintf(patterns[0], sizeof patterns[0], "%s/supervisor.log", c->dir);
    snprintf(patterns[1], sizeof patterns[1], "%s/logs/*.log", c->work);
    snprintf(patterns[2], sizeof patterns[2], "%s/nodes/*/pods/*/*.log", c->work);
    size_t metrics = 0, logs = 0, problems = metrics_problems(c, &x, &metrics);
    for (size_t p = 0; p < 3; p++) {
        glob_t g;
        if (glob(patterns[p], 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++, logs++)
            problems += log_problems(g.gl_pathv[i], &x);
        globfree(&g);
    }
    fprintf(stderr, "looked for %zu secret values in %zu logs and %zu /metrics: %zu found\n", x.n, logs, metrics,
            problems);
    for (size_t i = 0; i < x.n; i++)
        free(x.s[i]);
    free(x.s);
    return problems;
}

int fg_simcluster_operator_arg(struct fg_simcluster *c, const char *arg, struct fg_buf *out)
{
    char *patch = fg_asprintf("[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"%s\"}]",
                              arg);
    int rc = fg_kubectl_run(&c->k, out, NULL, "patch", "deployment/fracgpu-operator", "-n", "fracgpu-system",
                            "--type=json", "-p", patch, NULL);
    free(patch);
    if (rc == 0)
        rc = fg_kubectl_run(&c->k, out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n",
                            "fracgpu-system", "--timeout=120s", NULL);
    return rc;
}
