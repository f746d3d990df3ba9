/* operator_proc — `fracgpu operator` as a process against a harness, webhook included (operator_proc.h). */
#include "e2e/tests/operator_proc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/yaml.h"
#include "operator/kube/resource.h"

#define NS "fracgpu-system"
#define SERVICE "fracgpu-webhook"
#define CONFIG "fracgpu"
#define MAX_ARGS 48

extern char **environ;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* A port on 127.0.0.1 that nothing listens on now; 0 when none could be had. */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    unsigned port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static enum fg_err create(struct fg_harness *h, json_object *obj, char *errmsg)
{
    static const struct fg_kube_resource *const kinds[] = { &fg_kube_secrets, &fg_kube_services,
                                                            &fg_kube_mutatingwebhookconfigurations,
                                                            &fg_kube_poddisruptionbudgets, &fg_kube_endpointslices };
    const char *kind = fg_json_get_str(obj, "kind", NULL);
    const struct fg_kube_resource *res = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds && !res; i++)
        if (fg_str_eq(kind, kinds[i]->kind))
            res = kinds[i];
    if (!res)
        return fg_errmsg(errmsg, FG_E_INVAL, "webhook.yaml: a %s, which the harness does not install", kind ? kind : "?");
    char *path = fg_kube_path(res, res->namespaced ? fg_json_get_str(obj, "metadata", "namespace", NULL) : NULL, NULL,
                              NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(h->client, path, obj, NULL, &st);
    if (err == FG_E_KUBE_ALREADY_EXISTS)
        err = FG_OK;
    if (err)
        fg_errmsg(errmsg, err, "cannot create the %s: %s", kind, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    return err;
}

/* Every document of manifests/operator/webhook.yaml. */
static enum fg_err install_manifest(struct fg_harness *h, char *errmsg)
{
    const char *src = getenv("FG_SOURCE_DIR");
    if (!src)
        return fg_errmsg(errmsg, FG_E_INVAL, "FG_SOURCE_DIR is not set: where are the manifests?");
    char path[1024];
    snprintf(path, sizeof path, "%s/manifests/operator/webhook.yaml", src);
    struct fg_buf text = FG_BUF_INIT;
    enum fg_err err = fg_buf_read_file(&text, path, errmsg);
    char *doc = err ? NULL : (char *)fg_buf_str(&text);
    while (doc && !err) {
        char *sep = strstr(doc, "\n---\n");
        if (sep)
            sep[1] = '\0';
        json_object *obj = NULL;
        err = fg_yaml_parse(doc, strlen(doc), &obj, errmsg);
        if (!err)
            err = create(h, obj, errmsg);
        json_object_put(obj);
        doc = sep ? sep + 5 : NULL;
    }
    fg_buf_cleanup(&text);
    return err;
}

/* The EndpointSlice of the webhook's Service: 127.0.0.1 on port. */
static enum fg_err install_endpoints(struct fg_harness *h, unsigned port, char *errmsg)
{
    char *text = fg_asprintf("{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"
                             "\"name\":\"" SERVICE "-local\",\"namespace\":\"" NS "\",\"labels\":{"
                             "\"kubernetes.io/service-name\":\"" SERVICE "\"}},\"addressType\":\"IPv4\","
                             "\"ports\":[{\"name\":\"https\",\"port\":%u}],\"endpoints\":[{\"addresses\":"
                             "[\"127.0.0.1\"],\"conditions\":{\"ready\":true}}]}",
                             port);
    json_object *obj = json_tokener_parse(text);
    free(text);
    enum fg_err err = create(h, obj, errmsg);
    json_object_put(obj);
    return err;
}

static enum fg_err install(struct fg_harness *h, unsigned webhook_port, char *errmsg)
{
    enum fg_err err = fg_harness_crds(h, errmsg);
    if (!err && (err = fg_harness_namespace(h, NS)))
        fg_errmsg(errmsg, err, "cannot create namespace " NS);
    if (!err)
        err = install_manifest(h, errmsg);
    if (!err)
        err = install_endpoints(h, webhook_port, errmsg);
    return err;
}

/* Whether the webhook configuration trusts a CA (the operator wrote its caBundle). */
static bool trusted(struct fg_harness *h)
{
    char *path = fg_kube_path(&fg_kube_mutatingwebhookconfigurations, NULL, CONFIG, NULL, NULL);
    json_object *cfg = NULL;
    bool ok = fg_kube_get(h->client, path, &cfg, NULL) == FG_OK &&
              fg_json_get_str(fg_json_at(fg_json_get(cfg, "webhooks", NULL), 0), "clientConfig", "caBundle", NULL);
    json_object_put(cfg);
    free(path);
    return ok;
}

static bool running(struct fg_operator_proc *op)
{
    int status;
    return waitpid(op->pid, &status, WNOHANG) == 0;
}

static void spawn(struct fg_harness *h, struct fg_operator_proc *op, const char *const *extra, int log_fd)
{
    char bin[512], listen[32], webhook[32];
    snprintf(bin, sizeof bin, "%s/fracgpu", getenv("FG_BIN_DIR") ? getenv("FG_BIN_DIR") : ".");
    snprintf(listen, sizeof listen, "127.0.0.1:%u", op->listen_port);
    snprintf(webhook, sizeof webhook, "127.0.0.1:%u", op->webhook_port);
    const char *argv[MAX_ARGS] = { bin, "operator", "--kubeconfig", h->kubeconfig, "--listen", listen,
                                   "--webhook-listen", webhook, "--leader-elect=false" };
    size_t n = 9;
    for (size_t i = 0; extra && extra[i] && n < MAX_ARGS - 1; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    char *envp[256];
    size_t k = 0;
    for (char **e = environ; *e && k < 250; e++)
        if (strncmp(*e, "POD_NAME=", 9) && strncmp(*e, "POD_NAMESPACE=", 14))
            envp[k++] = *e;
    envp[k++] = "POD_NAMESPACE=" NS;
    envp[k] = NULL;
    /* $FG_OPERATOR_WRAPPER: words the operator's command line runs under (valgrind and its options) */
    const char *wrapped[MAX_ARGS * 2];
    size_t w = 0;
    char *wrapper = getenv("FG_OPERATOR_WRAPPER") ? fg_strdup(getenv("FG_OPERATOR_WRAPPER")) : NULL, *save = NULL;
    for (char *word = wrapper ? strtok_r(wrapper, " ", &save) : NULL; word && w < MAX_ARGS; word = strtok_r(NULL, " ", &save))
        wrapped[w++] = word;
    for (size_t i = 0; i <= n; i++)
        wrapped[w + i] = argv[i];
    op->pid = fork();
    if (op->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(log_fd, 1);
        dup2(log_fd, 2);
        execvpe(wrapped[0], (char *const *)wrapped, envp);
        _exit(127);
    }
    free(wrapper);
}

enum fg_err fg_operator_proc_start(struct fg_harness *h, struct fg_operator_proc *op, const char *const *extra,
                                   unsigned ready_s, char *errmsg)
{
    memset(op, 0, sizeof *op);
    op->listen_port = free_port();
    op->webhook_port = free_port();
    if (!op->listen_port || !op->webhook_port || op->listen_port == op->webhook_port)
        return fg_errmsg(errmsg, FG_E_IO, "no free ports on 127.0.0.1");
    enum fg_err err = install(h, op->webhook_port, errmsg);
    if (err)
        return err;
    snprintf(op->log, sizeof op->log, "/tmp/fg-operator-XXXXXX.log");
    int fd = mkstemps(op->log, 4);
    if (fd < 0)
        return fg_errmsg(errmsg, FG_E_IO, "cannot create the operator's log file");
    spawn(h, op, extra, fd);
    close(fd);
    if (op->pid < 0)
        return fg_errmsg(errmsg, FG_E_IO, "cannot fork");
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)ready_s * FG_NS_PER_S;
    struct fg_buf body = FG_BUF_INIT;
    bool ready = false;
    while (!ready && running(op) && fg_clock_mono_ns() < deadline) {
        ready = fg_harness_http(NULL, op->listen_port, "GET", "/readyz", &body) == 200 && trusted(h);
        if (!ready)
            sleep_ms(50);
    }
    fg_buf_cleanup(&body);
    if (ready)
        return FG_OK;
    bool alive = running(op);
    fg_operator_proc_stop(op, true);
    return fg_errmsg(errmsg, FG_E_TIMEOUT, "the operator %s (log: %s)",
                     alive ? "was not ready in time" : "exited before it was ready", op->log);
}

int fg_operator_proc_stop(struct fg_operator_proc *op, bool keep_log)
{
    int status = 0, result = -1;
    if (op->pid > 0) {
        kill(op->pid, SIGTERM);
        int polls = getenv("FG_OPERATOR_WRAPPER") ? 2400 : 200;   /* 50 ms each */
        for (int i = 0; i < polls && waitpid(op->pid, &status, WNOHANG) == 0; i++)
            sleep_ms(50);
        if (waitpid(op->pid, &status, WNOHANG) == 0) {
            kill(op->pid, SIGKILL);
            waitpid(op->pid, &status, 0);
        } else if (WIFEXITED(status)) {
            result = WEXITSTATUS(status);
        }
        op->pid = 0;
    }
    if (!keep_log && op->log[0])
        unlink(op->log);
    return result;
}
