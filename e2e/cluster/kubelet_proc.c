/*
 * kubelet_proc — a container of fracgpu's own image run for real: a process of the built fracgpu
 * binary, with what a container runtime would give it, mapped onto one machine.
 *
 *   command  the image's entrypoint is the binary (/usr/local/bin/fracgpu); a command naming it, by
 *            that path or as `fracgpu`, runs it; args follow, or the image's default `operator`;
 *            $(VAR) references expand from the container's environment (kubelet_env.c) and mount
 *            paths map to host paths (kubelet_volumes.c);
 *   identity a kubeconfig for the pod's service account, named by KUBECONFIG: the cluster's
 *            credentials when it has a token, else a token naming the ServiceAccount (the test API
 *            server's audit log tells the identities apart by it), with the pod's namespace;
 *   network  the pod's IP: a preloaded library (podnet.c) binds its wildcard and loopback listeners
 *            to it, so two pods may both listen on :8080.
 * The process leads its own session and process group, has no blocked or ignored signals, writes
 * stdout and stderr to <pod dir>/<container>.log, and runs as the kubelet's user (securityContext
 * is not applied). Its pid file (pidfile.h) lets a restarted kubelet find it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet_spawn.h"
#include "e2e/cluster/pidfile.h"
#include "operator/kube/quantity.h"
#include "operator/kube/resource.h"

#define ENTRYPOINT "/usr/local/bin/fracgpu"

static void plan_cleanup(struct fg_sim_spawn *s)
{
    for (size_t i = 0; i < s->argc; i++)
        free(s->argv[i]);
    for (size_t i = 0; i < s->nenv; i++)
        free(s->env[i]);
}

void fg_sim_proc_pidfile(const struct fg_sim_pod *p, const struct fg_sim_container *c, char *path)
{
    snprintf(path, PATH_MAX, "%s/%s.pid", p->dir, c->name);
}

bool fg_sim_proc_signal(struct fg_sim_container *c, int sig)
{
    if (c->pid <= 0 || c->exited)
        return false;
    return kill(-c->pid, sig) == 0 || kill(c->pid, sig) == 0;
}

/* ---- environment ---- */

static void add_arg(struct fg_sim_spawn *s, char *arg)
{
    if (s->argc < FG_SIM_MAX_ARGS)
        s->argv[s->argc++] = arg;
    else
        free(arg);
}

static enum fg_err build_argv(struct fg_sim_kubelets *k, json_object *spec, struct fg_sim_spawn *s)
{
    json_object *cmd = fg_json_get(spec, "command", NULL), *args = fg_json_get(spec, "args", NULL);
    if (fg_json_array_len(cmd)) {
        const char *exe = json_object_get_string(json_object_array_get_idx(cmd, 0));
        if (!fg_str_eq(exe, ENTRYPOINT) && !fg_str_eq(exe, "fracgpu")) {
            fg_errmsg(s->errmsg, FG_E_NOT_FOUND_LOCAL, "exec: \"%s\": executable file not found in $PATH", exe);
            return FG_E_NOT_FOUND_LOCAL;
        }
    }
    add_arg(s, fg_strdup(k->cfg->fracgpu_binary));
    for (size_t i = 1; i < fg_json_array_len(cmd); i++)
        add_arg(s, fg_sim_spawn_expand(s, json_object_get_string(json_object_array_get_idx(cmd, i))));
    if (!fg_json_array_len(cmd) && !args)
        add_arg(s, fg_strdup("operator"));   /* the image's CMD */
    for (size_t i = 0; i < fg_json_array_len(args); i++)
        add_arg(s, fg_sim_spawn_expand(s, json_object_get_string(json_object_array_get_idx(args, i))));
    return FG_OK;
}

void fg_sim_pod_token(const struct fg_sim_kubelets *k, json_object *pod, char *out, size_t size)
{
    const char *sa = fg_json_get_str(pod, "spec", "serviceAccountName", NULL);
    if (k->token[0])
        snprintf(out, size, "%s", k->token);
    else
        snprintf(out, size, "system:serviceaccount:%s:%s", fg_json_get_str(pod, "metadata", "namespace", NULL),
                 sa ? sa : "default");
}

static enum fg_err write_kubeconfig(struct fg_sim_kubelets *k, const struct fg_sim_pod *p, json_object *pod, char *errmsg)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    const char *sa = fg_json_get_str(pod, "spec", "serviceAccountName", NULL);
    char user[512];
    snprintf(user, sizeof user, "system:serviceaccount:%s:%s", ns, sa ? sa : "default");
    json_object *kc = json_object_new_object();
    fg_json_set_str(kc, "apiVersion", "v1");
    fg_json_set_str(kc, "kind", "Config");
    json_object *clusters = json_object_new_array(), *cl = json_object_new_object(), *cluster = json_object_new_object();
    fg_json_set_str(cluster, "server", k->server);
    if (k->ca_pem_path[0])
        fg_json_set_str(cluster, "certificate-authority", k->ca_pem_path);
    fg_json_set_str(cl, "name", "cluster");
    json_object_object_add(cl, "cluster", cluster);
    json_object_array_add(clusters, cl);
    json_object_object_add(kc, "clusters", clusters);
    json_object *users = json_object_new_array(), *u = json_object_new_object(), *uu = json_object_new_object();
    char token[sizeof k->token + 512];
    fg_sim_pod_token(k, pod, token, sizeof token);
    fg_json_set_str(uu, "token", token);
    fg_json_set_str(u, "name", user);
    json_object_object_add(u, "user", uu);
    json_object_array_add(users, u);
    json_object_object_add(kc, "users", users);
    json_object *contexts = json_object_new_array(), *cx = json_object_new_object(), *ctx = json_object_new_object();
    fg_json_set_str(ctx, "cluster", "cluster");
    fg_json_set_str(ctx, "user", user);
    fg_json_set_str(ctx, "namespace", ns);
    fg_json_set_str(cx, "name", "pod");
    json_object_object_add(cx, "context", ctx);
    json_object_array_add(contexts, cx);
    json_object_object_add(kc, "contexts", contexts);
    fg_json_set_str(kc, "current-context", "pod");
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/kubeconfig", p->dir);
    int rc = json_object_to_file_ext(path, kc, JSON_C_TO_STRING_PRETTY);
    json_object_put(kc);
    chmod(path, 0600);
    return rc ? fg_errmsg(errmsg, FG_E_IO, "cannot write %s", path) : FG_OK;
}

enum fg_err fg_sim_proc_start(struct fg_sim_kubelets *k, const struct fg_sim_pod *p, const struct fg_sim_node *node,
                              json_object *pod, size_t i, pid_t *out, char *errmsg)
{
    const struct fg_sim_container *c = &p->containers[i];
    json_object *spec = i < p->ninit ? json_object_array_get_idx(fg_json_get(pod, "spec", "initContainers", NULL), i)
                                     : json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), i - p->ninit);
    struct fg_sim_spawn s = { .p = p, .container = i, .node = node, .errmsg = errmsg };
    enum fg_err err;
    fg_mkdir_p(p->dir);
    if ((err = write_kubeconfig(k, p, pod, errmsg)) || (err = fg_sim_spawn_env(k, pod, spec, &s)) ||
        (err = fg_sim_spawn_volumes(k, pod, spec, &s)) || (err = build_argv(k, spec, &s)))
        goto out;
    for (size_t a = 1; a < s.argc; a++) {
        char *mapped = fg_sim_spawn_map_paths(&s, s.argv[a]);
        free(s.argv[a]);
        s.argv[a] = mapped;
    }
    for (size_t e = 0; e < s.nenv; e++) {
        char *eq = strchr(s.env[e], '=');
        char *mapped = fg_sim_spawn_map_paths(&s, eq + 1);
        *eq = '\0';
        char *entry = fg_asprintf("%s=%s", s.env[e], mapped);
        free(mapped);
        free(s.env[e]);
        s.env[e] = entry;
    }
    const char *wd = fg_json_get_str(spec, "workingDir", NULL);
    char *mapped_wd = wd ? fg_sim_spawn_map_paths(&s, wd) : NULL;
    snprintf(s.workdir, sizeof s.workdir, "%s", mapped_wd && mapped_wd[0] == '/' ? mapped_wd : p->dir);
    free(mapped_wd);
    snprintf(s.log, sizeof s.log, "%s/%s.log", p->dir, c->name);
    s.argv[s.argc] = NULL;
    s.env[s.nenv] = NULL;

    pid_t pid = fork();
    if (pid == 0) {   /* only async-signal-safe calls until exec */
        setsid();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        for (int sig = 1; sig < NSIG; sig++)
            sigaction(sig, &dfl, NULL);
        int log = open(s.log, O_WRONLY | O_CREAT | O_APPEND, 0644), null = open("/dev/null", O_RDONLY);
        if (log < 0 || null < 0 || chdir(s.workdir) != 0)
            _exit(126);
        dup2(null, 0);
        dup2(log, 1);
        dup2(log, 2);
        close_range(3, ~0U, 0);   /* nothing of the kubelets' own: sockets, lock files, pipes */
        execve(s.argv[0], s.argv, s.env);
        _exit(127);
    }
    if (pid < 0) {
        err = fg_errmsg(errmsg, FG_E_IO, "cannot start the process: %s", strerror(errno));
        goto out;
    }
    *out = pid;
    char pidfile[PATH_MAX];
    fg_sim_proc_pidfile(p, c, pidfile);
    fg_sim_pidfile_write(pidfile, pid);
out:
    plan_cleanup(&s);
    return err;
}
