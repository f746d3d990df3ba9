/*
 * kubelet_proc — a container of fracgpu's own image run for real: a process of the built fracgpu
 * binary, with what a container runtime would give it, mapped onto one machine.
 *
 *   command  the image's entrypoint is the binary (/usr/local/bin/fracgpu); a command naming it, by
 *            that path or as `fracgpu`, runs it; args follow, or the image's default `operator`;
 *   env      the image's (GNUTLS_NO_IMPLICIT_INIT=1), PATH and HOSTNAME, then envFrom and env in order
 *            — values with $(VAR) references expanded as kube expands them, fieldRef (metadata.name,
 *            namespace, uid, labels['k'], annotations['k'], spec.nodeName, spec.serviceAccountName,
 *            status.hostIP, status.podIP), resourceFieldRef, configMapKeyRef and secretKeyRef read
 *            from the API; KUBERNETES_SERVICE_HOST and _PORT, and KUBECONFIG naming a kubeconfig for
 *            the pod's service account (the test API server has one identity, so it holds the
 *            cluster's credentials, with the pod's namespace);
 *   volumes  hostPath is the node's own directory (<node>/<path>), emptyDir, configMap, secret,
 *            downwardAPI and projected ones are files under the pod's directory. A process sees them
 *            at their real paths on this machine, so every mountPath appearing in the command, the
 *            args, the env values or workingDir (whole, or as a path prefix) is rewritten to its
 *            host path (rewrite.h): `--proc-root=/host/proc` becomes `--proc-root=<node>/proc`. A
 *            path the program builds at run time from other pieces is not rewritten;
 *   network  the pod's IP: a preloaded library (podnet.c) binds its wildcard and loopback listeners
 *            to it, so two pods may both listen on :8080;
 *   NVIDIA   a container with NVIDIA_VISIBLE_DEVICES on a GPU node gets the node's NVML library
 *            and state (LD_LIBRARY_PATH, FG_FAKE_NVML_STATE), as the NVIDIA container runtime
 *            injects the driver's libraries;
 *   sanitizers  ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS pass through from the kubelet, so a
 *            sanitized binary reports into the container's log.
 * The process leads its own session and process group, has no blocked or ignored signals, writes
 * stdout and stderr to <pod dir>/<container>.log, and runs as the kubelet's user (securityContext
 * is not applied). Its pid file (pidfile.h) lets a restarted kubelet find it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/pidfile.h"
#include "e2e/cluster/rewrite.h"
#include "operator/kube/quantity.h"
#include "operator/kube/resource.h"

#define ENTRYPOINT "/usr/local/bin/fracgpu"
#define MAX_ENV 256
#define MAX_ARGS 128
#define MAX_MOUNTS 32

struct mount {
    const char *container_path;   /* borrowed from the pod */
    char host[PATH_MAX];
};

struct spawn_plan {
    char *argv[MAX_ARGS + 1];
    size_t argc;
    char *env[MAX_ENV + 1];       /* "NAME=value" */
    size_t nenv;
    struct mount mounts[MAX_MOUNTS];
    size_t nmounts;
    char workdir[PATH_MAX];
    char log[PATH_MAX];
    char *errmsg;
};

static void plan_cleanup(struct spawn_plan *s)
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

static const char *env_get(struct spawn_plan *s, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = s->nenv; i-- > 0;)
        if (!strncmp(s->env[i], name, n) && s->env[i][n] == '=')
            return s->env[i] + n + 1;
    return NULL;
}

static void env_set(struct spawn_plan *s, const char *name, const char *value)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < s->nenv; i++) {
        if (!strncmp(s->env[i], name, n) && s->env[i][n] == '=') {
            free(s->env[i]);
            s->env[i] = fg_asprintf("%s=%s", name, value);
            return;
        }
    }
    if (s->nenv < MAX_ENV)
        s->env[s->nenv++] = fg_asprintf("%s=%s", name, value);
}

static const char *lookup(void *ud, const char *name)
{
    return env_get(ud, name);
}

static char *expand(struct spawn_plan *s, const char *in)
{
    return fg_sim_expand(in, lookup, s);
}

/* metadata.labels['k'] and the like. */
static const char *field_ref(json_object *pod, const char *path, struct fg_sim_pod *p)
{
    char key[256];
    if (sscanf(path, "metadata.labels['%255[^']']", key) == 1)
        return fg_json_get_str(pod, "metadata", "labels", key, NULL);
    if (sscanf(path, "metadata.annotations['%255[^']']", key) == 1)
        return fg_json_get_str(pod, "metadata", "annotations", key, NULL);
    if (!strcmp(path, "status.podIP"))
        return p->ip;
    if (!strcmp(path, "status.hostIP"))
        return p->node ? p->node->ip : NULL;
    if (!strcmp(path, "spec.serviceAccountName")) {
        const char *sa = fg_json_get_str(pod, "spec", "serviceAccountName", NULL);
        return sa ? sa : "default";
    }
    static const char *const plain[][2] = { { "metadata.name", "name" }, { "metadata.namespace", "namespace" },
                                            { "metadata.uid", "uid" } };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (!strcmp(path, plain[i][0]))
            return fg_json_get_str(pod, "metadata", plain[i][1], NULL);
    if (!strcmp(path, "spec.nodeName"))
        return fg_json_get_str(pod, "spec", "nodeName", NULL);
    return NULL;
}

/* A ConfigMap's or Secret's data (values decoded) as a new object, or NULL with errmsg set. */
static json_object *read_data(struct fg_sim_kubelets *k, bool secret, const char *ns, const char *name, char *errmsg)
{
    char *path = fg_kube_path(secret ? &fg_kube_secrets : &fg_kube_configmaps, ns, name, NULL, NULL);
    json_object *obj = NULL;
    enum fg_err err = fg_kube_get(k->client, path, &obj, NULL);
    free(path);
    if (err) {
        fg_errmsg(errmsg, err, "%s \"%s\" not found", secret ? "secret" : "configmap", name);
        return NULL;
    }
    json_object *out = json_object_new_object();
    json_object *data = fg_json_get(obj, "data", NULL), *string_data = fg_json_get(obj, "stringData", NULL);
    if (json_object_is_type(data, json_type_object)) {
        json_object_object_foreach(data, key, v) {
            const char *text = json_object_get_string(v);
            if (!secret) {
                json_object_object_add(out, key, json_object_new_string(text));
                continue;
            }
            size_t tlen = strlen(text), pad = 0;
            while (pad < 2 && pad < tlen && text[tlen - 1 - pad] == '=')
                pad++;
            unsigned char *raw = fg_malloc(tlen + 4);
            int n = EVP_DecodeBlock(raw, (const unsigned char *)text, (int)tlen);
            size_t len = n >= (int)pad ? (size_t)n - pad : 0;
            json_object_object_add(out, key, json_object_new_string_len((const char *)raw, (int)len));
            free(raw);
        }
    }
    if (json_object_is_type(string_data, json_type_object)) {
        json_object_object_foreach(string_data, key, v) json_object_object_add(out, key, json_object_get(v));
    }
    json_object_put(obj);
    return out;
}

static enum fg_err build_env(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, json_object *spec,
                             struct spawn_plan *s)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    env_set(s, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    env_set(s, "HOSTNAME", fg_json_get_str(pod, "metadata", "name", NULL));
    env_set(s, "GNUTLS_NO_IMPLICIT_INIT", "1");
    json_object *from = fg_json_get(spec, "envFrom", NULL);
    for (size_t i = 0; i < fg_json_array_len(from); i++) {
        json_object *f = json_object_array_get_idx(from, i);
        bool secret = fg_json_get(f, "secretRef", NULL) != NULL;
        const char *name = fg_json_get_str(f, secret ? "secretRef" : "configMapRef", "name", NULL);
        const char *prefix = fg_json_get_str(f, "prefix", NULL);
        json_object *data = read_data(k, secret, ns, name, s->errmsg);
        if (!data && !json_object_get_boolean(fg_json_get(f, secret ? "secretRef" : "configMapRef", "optional", NULL)))
            return FG_E_NOT_FOUND_LOCAL;
        if (json_object_is_type(data, json_type_object)) {
            json_object_object_foreach(data, key, v) {
                char *var = fg_asprintf("%s%s", prefix ? prefix : "", key);
                env_set(s, var, json_object_get_string(v));
                free(var);
            }
        }
        json_object_put(data);
    }
    json_object *env = fg_json_get(spec, "env", NULL);
    for (size_t i = 0; i < fg_json_array_len(env); i++) {
        json_object *e = json_object_array_get_idx(env, i);
        const char *name = fg_json_get_str(e, "name", NULL);
        if (!name)
            continue;
        json_object *vf = fg_json_get(e, "valueFrom", NULL);
        if (!vf) {
            char *v = expand(s, fg_json_get_str(e, "value", NULL) ? fg_json_get_str(e, "value", NULL) : "");
            env_set(s, name, v);
            free(v);
            continue;
        }
        const char *fp = fg_json_get_str(vf, "fieldRef", "fieldPath", NULL);
        const char *res = fg_json_get_str(vf, "resourceFieldRef", "resource", NULL);
        json_object *cm = fg_json_get(vf, "configMapKeyRef", NULL), *sec = fg_json_get(vf, "secretKeyRef", NULL);
        if (fp) {
            const char *v = field_ref(pod, fp, p);
            env_set(s, name, v ? v : "");
        } else if (res) {
            const char *dot = strchr(res, '.');
            json_object *q = dot ? fg_json_get(spec, "resources", strncmp(res, "limits", 6) ? "requests" : "limits",
                                                dot + 1, NULL)
                                 : NULL;
            int64_t milli = 0;
            char out[32] = "0";
            if (q && fg_quantity_json(q, &milli, NULL) == FG_OK)
                snprintf(out, sizeof out, "%lld", (long long)fg_quantity_units(milli));
            env_set(s, name, out);
        } else if (cm || sec) {
            json_object *ref = cm ? cm : sec;
            json_object *data = read_data(k, sec != NULL, ns, fg_json_get_str(ref, "name", NULL), s->errmsg);
            const char *v = fg_json_get_str(data, fg_json_get_str(ref, "key", NULL), NULL);
            if (!v && !json_object_get_boolean(fg_json_get(ref, "optional", NULL))) {
                json_object_put(data);
                if (data)
                    fg_errmsg(s->errmsg, FG_E_NOT_FOUND_LOCAL, "couldn't find key %s in %s %s",
                              fg_json_get_str(ref, "key", NULL), cm ? "ConfigMap" : "Secret",
                              fg_json_get_str(ref, "name", NULL));
                return FG_E_NOT_FOUND_LOCAL;
            }
            env_set(s, name, v ? v : "");
            json_object_put(data);
        }
    }
    /* what the kubelet and the runtime add */
    char host[256] = "", port[16] = "";
    sscanf(k->server, "%*[a-z]://%255[^:/]:%15[0-9]", host, port);
    env_set(s, "KUBERNETES_SERVICE_HOST", host);
    env_set(s, "KUBERNETES_SERVICE_PORT", port);
    char kubeconfig[PATH_MAX + 16];
    snprintf(kubeconfig, sizeof kubeconfig, "%s/kubeconfig", p->dir);
    env_set(s, "KUBECONFIG", kubeconfig);
    const char *devices = env_get(s, "NVIDIA_VISIBLE_DEVICES");
    if (devices && *devices && strcmp(devices, "void") && strcmp(devices, "none") &&
        fg_resources_get(&p->node->group->capacity, "nvidia.com/gpu") > 0) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/usr/lib/nvidia", p->node->root);
        env_set(s, "LD_LIBRARY_PATH", path);
        snprintf(path, sizeof path, "%s/nvml/state.json", p->node->root);
        env_set(s, "FG_FAKE_NVML_STATE", path);
    }
    char preload[PATH_MAX + 32];
    snprintf(preload, sizeof preload, "%s/libfg_sim_podnet.so", k->lib_dir);
    env_set(s, "LD_PRELOAD", preload);
    env_set(s, "FG_SIM_POD_IP", p->ip);
    static const char *const passed[] = { "UBSAN_OPTIONS", "LSAN_OPTIONS" };
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++)
        if (getenv(passed[i]))
            env_set(s, passed[i], getenv(passed[i]));
    const char *asan = getenv("ASAN_OPTIONS");
    char *asan_opts = fg_asprintf("%s%sverify_asan_link_order=0", asan ? asan : "", asan && *asan ? ":" : "");
    env_set(s, "ASAN_OPTIONS", asan_opts);   /* the preloaded library comes before the sanitizer runtime */
    free(asan_opts);
    return FG_OK;
}

/* ---- volumes ---- */

static bool write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    fg_sim_mkdir_p(path);
    *slash = '/';
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* Writes the keys of data (or only `items`, under their paths) into dir. */
static void write_items(const char *dir, json_object *data, json_object *items)
{
    if (fg_json_array_len(items)) {
        for (size_t i = 0; i < json_object_array_length(items); i++) {
            json_object *it = json_object_array_get_idx(items, i);
            const char *v = fg_json_get_str(data, fg_json_get_str(it, "key", NULL), NULL);
            const char *path = fg_json_get_str(it, "path", NULL);
            if (v && path)
                write_file(dir, path, v, strlen(v));
        }
        return;
    }
    if (json_object_is_type(data, json_type_object)) {
        json_object_object_foreach(data, key, v) {
            const char *text = json_object_get_string(v);
            write_file(dir, key, text, strlen(text));
        }
    }
}

static void write_downward(json_object *pod, struct fg_sim_pod *p, const char *dir, json_object *items)
{
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        const char *fp = fg_json_get_str(it, "fieldRef", "fieldPath", NULL), *path = fg_json_get_str(it, "path", NULL);
        const char *v = fp ? field_ref(pod, fp, p) : NULL;
        if (path)
            write_file(dir, path, v ? v : "", v ? strlen(v) : 0);
    }
}

/* Fills the volume `vol` at host (a directory under the pod's). */
static enum fg_err fill_volume(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, json_object *vol,
                               const char *host, char *errmsg)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    fg_sim_mkdir_p(host);
    json_object *v;
    if ((v = fg_json_get(vol, "configMap", NULL)) || (v = fg_json_get(vol, "secret", NULL))) {
        bool secret = fg_json_get(vol, "secret", NULL) != NULL;
        json_object *data = read_data(k, secret, ns, fg_json_get_str(v, secret ? "secretName" : "name", NULL), errmsg);
        if (!data && !json_object_get_boolean(fg_json_get(v, "optional", NULL)))
            return FG_E_NOT_FOUND_LOCAL;
        write_items(host, data, fg_json_get(v, "items", NULL));
        json_object_put(data);
    } else if ((v = fg_json_get(vol, "downwardAPI", NULL))) {
        write_downward(pod, p, host, fg_json_get(v, "items", NULL));
    } else if ((v = fg_json_get(vol, "projected", NULL))) {
        json_object *sources = fg_json_get(v, "sources", NULL);
        for (size_t i = 0; i < fg_json_array_len(sources); i++) {
            json_object *src = json_object_array_get_idx(sources, i), *x;
            if ((x = fg_json_get(src, "serviceAccountToken", NULL))) {
                const char *path = fg_json_get_str(x, "path", NULL);
                write_file(host, path ? path : "token", k->token, strlen(k->token));
            } else if ((x = fg_json_get(src, "configMap", NULL)) || (x = fg_json_get(src, "secret", NULL))) {
                bool secret = fg_json_get(src, "secret", NULL) != NULL;
                json_object *data = read_data(k, secret, ns, fg_json_get_str(x, "name", NULL), errmsg);
                write_items(host, data, fg_json_get(x, "items", NULL));
                json_object_put(data);
            } else if ((x = fg_json_get(src, "downwardAPI", NULL))) {
                write_downward(pod, p, host, fg_json_get(x, "items", NULL));
            }
        }
    }
    return FG_OK;
}

static enum fg_err map_volumes(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, json_object *spec,
                               struct spawn_plan *s)
{
    json_object *mounts = fg_json_get(spec, "volumeMounts", NULL), *vols = fg_json_get(pod, "spec", "volumes", NULL);
    for (size_t i = 0; i < fg_json_array_len(mounts) && s->nmounts < MAX_MOUNTS; i++) {
        json_object *m = json_object_array_get_idx(mounts, i), *vol = NULL;
        const char *name = fg_json_get_str(m, "name", NULL), *at = fg_json_get_str(m, "mountPath", NULL);
        for (size_t j = 0; j < fg_json_array_len(vols) && !vol; j++)
            if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(vols, j), "name", NULL), name))
                vol = json_object_array_get_idx(vols, j);
        if (!vol || !at) {
            fg_errmsg(s->errmsg, FG_E_INVAL, "volumeMounts[%zu]: no volume \"%s\"", i, name ? name : "");
            return FG_E_INVAL;
        }
        struct mount *mt = &s->mounts[s->nmounts++];
        mt->container_path = at;
        const char *host_path = fg_json_get_str(vol, "hostPath", "path", NULL);
        if (host_path) {
            snprintf(mt->host, sizeof mt->host, "%s%s", p->node->root, host_path);
            struct stat st;
            if (stat(mt->host, &st) != 0)
                fg_sim_mkdir_p(mt->host);   /* the simulated host has every directory a pod asks for */
        } else {
            snprintf(mt->host, sizeof mt->host, "%s/volumes/%s", p->dir, name);
            enum fg_err err = fill_volume(k, p, pod, vol, mt->host, s->errmsg);
            if (err)
                return err;
        }
        const char *sub = fg_json_get_str(m, "subPath", NULL);
        if (sub && *sub) {
            size_t n = strlen(mt->host);
            snprintf(mt->host + n, sizeof mt->host - n, "/%s", sub);
        }
    }
    return FG_OK;
}

static char *map_paths(const struct spawn_plan *s, const char *in)
{
    struct fg_sim_mount m[MAX_MOUNTS];
    for (size_t i = 0; i < s->nmounts; i++)
        m[i] = (struct fg_sim_mount){ s->mounts[i].container_path, s->mounts[i].host };
    return fg_sim_map_paths(m, s->nmounts, in);
}

static void add_arg(struct spawn_plan *s, char *arg)
{
    if (s->argc < MAX_ARGS)
        s->argv[s->argc++] = arg;
    else
        free(arg);
}

static enum fg_err build_argv(struct fg_sim_kubelets *k, json_object *spec, struct spawn_plan *s)
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
        add_arg(s, expand(s, json_object_get_string(json_object_array_get_idx(cmd, i))));
    if (!fg_json_array_len(cmd) && !args)
        add_arg(s, fg_strdup("operator"));   /* the image's CMD */
    for (size_t i = 0; i < fg_json_array_len(args); i++)
        add_arg(s, expand(s, json_object_get_string(json_object_array_get_idx(args, i))));
    return FG_OK;
}

static enum fg_err write_kubeconfig(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, char *errmsg)
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
    if (k->token[0])
        fg_json_set_str(uu, "token", k->token);
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

enum fg_err fg_sim_proc_start(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, size_t i, char *errmsg)
{
    struct fg_sim_container *c = &p->containers[i];
    json_object *spec = i < p->ninit ? json_object_array_get_idx(fg_json_get(pod, "spec", "initContainers", NULL), i)
                                     : json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), i - p->ninit);
    struct spawn_plan s = { .errmsg = errmsg };
    enum fg_err err;
    fg_sim_mkdir_p(p->dir);
    if ((err = write_kubeconfig(k, p, pod, errmsg)) || (err = build_env(k, p, pod, spec, &s)) ||
        (err = map_volumes(k, p, pod, spec, &s)) || (err = build_argv(k, spec, &s)))
        goto out;
    for (size_t a = 1; a < s.argc; a++) {
        char *mapped = map_paths(&s, s.argv[a]);
        free(s.argv[a]);
        s.argv[a] = mapped;
    }
    for (size_t e = 0; e < s.nenv; e++) {
        char *eq = strchr(s.env[e], '=');
        char *mapped = map_paths(&s, eq + 1);
        *eq = '\0';
        char *entry = fg_asprintf("%s=%s", s.env[e], mapped);
        free(mapped);
        free(s.env[e]);
        s.env[e] = entry;
    }
    const char *wd = fg_json_get_str(spec, "workingDir", NULL);
    char *mapped_wd = wd ? map_paths(&s, wd) : NULL;
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
        execve(s.argv[0], s.argv, s.env);
        _exit(127);
    }
    if (pid < 0) {
        err = fg_errmsg(errmsg, FG_E_IO, "cannot start the process: %s", strerror(errno));
        goto out;
    }
    c->pid = pid;
    c->child = true;
    char pidfile[PATH_MAX];
    fg_sim_proc_pidfile(p, c, pidfile);
    fg_sim_pidfile_write(pidfile, pid);
out:
    plan_cleanup(&s);
    return err;
}
