/*
 * kubelet_env — a container's environment, built as kube builds it: the image's variables
 * (GNUTLS_NO_IMPLICIT_INIT=1), PATH and HOSTNAME, what the device plugins answered for the
 * container's devices (NVIDIA_VISIBLE_DEVICES=<uuid,...>; kube puts them first, so the pod's own
 * variables override them), then envFrom and env in order. Values with $(VAR)
 * references are expanded from what came before them; fieldRef (metadata.name, namespace, uid,
 * labels['k'], annotations['k'], spec.nodeName, spec.serviceAccountName, status.hostIP,
 * status.podIP), resourceFieldRef, configMapKeyRef and secretKeyRef are read from the pod and the
 * API. Then what the kubelet and the runtime add: KUBERNETES_SERVICE_HOST and _PORT; KUBECONFIG
 * naming the pod's kubeconfig (kubelet_proc.c writes it); on a GPU node, for a container with
 * NVIDIA_VISIBLE_DEVICES naming any of the node's GPUs (kubelet_nvidia.c), the node's NVML library
 * and state (LD_LIBRARY_PATH, FG_FAKE_NVML_STATE) and the GPUs it shows (FG_FAKE_NVML_VISIBLE), as
 * the NVIDIA container runtime injects the driver's libraries and those GPUs' devices; the pod network's preloaded
 * library and IP (podnet.c); and the kubelet's ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS, so a
 * sanitized binary reports into the container's log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet_spawn.h"
#include "e2e/cluster/rewrite.h"
#include "operator/kube/quantity.h"
#include "operator/kube/resource.h"

static const char *env_get(struct fg_sim_spawn *s, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = s->nenv; i-- > 0;)
        if (!strncmp(s->env[i], name, n) && s->env[i][n] == '=')
            return s->env[i] + n + 1;
    return NULL;
}

static void env_set(struct fg_sim_spawn *s, const char *name, const char *value)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < s->nenv; i++) {
        if (!strncmp(s->env[i], name, n) && s->env[i][n] == '=') {
            free(s->env[i]);
            s->env[i] = fg_asprintf("%s=%s", name, value);
            return;
        }
    }
    if (s->nenv < FG_SIM_MAX_ENV)
        s->env[s->nenv++] = fg_asprintf("%s=%s", name, value);
}

static const char *lookup(void *ud, const char *name)
{
    return env_get(ud, name);
}

char *fg_sim_spawn_expand(struct fg_sim_spawn *s, const char *in)
{
    return fg_sim_expand(in, lookup, s);
}

const char *fg_sim_pod_field(json_object *pod, const char *path, const struct fg_sim_spawn *s)
{
    char key[256];
    if (sscanf(path, "metadata.labels['%255[^']']", key) == 1)
        return fg_json_get_str(pod, "metadata", "labels", key, NULL);
    if (sscanf(path, "metadata.annotations['%255[^']']", key) == 1)
        return fg_json_get_str(pod, "metadata", "annotations", key, NULL);
    if (!strcmp(path, "status.podIP"))
        return s->p->ip;
    if (!strcmp(path, "status.hostIP"))
        return s->node->ip;
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

json_object *fg_sim_read_data(struct fg_sim_kubelets *k, bool secret, const char *ns, const char *name, char *errmsg)
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
            size_t len = 0;
            unsigned char *raw = fg_base64_decode(text, &len); /* the API server stores only base64 */
            json_object_object_add(out, key, json_object_new_string_len(raw ? (const char *)raw : "", (int)len));
            free(raw);
        }
    }
    if (json_object_is_type(string_data, json_type_object)) {
        json_object_object_foreach(string_data, key, v) json_object_object_add(out, key, json_object_get(v));
    }
    json_object_put(obj);
    return out;
}

/* The GPUs the NVIDIA container runtime gives the container, in any of the forms a device plugin
 * answers in: NVIDIA_VISIBLE_DEVICES, CDI device names (nvidia.com/gpu=<UUID>), and mounts under
 * /var/run/nvidia-container-devices/<UUID> — a comma-separated list for fg_sim_nvidia_visible (caller
 * frees). */
static char *runtime_devices(struct fg_sim_spawn *s)
{
    static const char cdi_prefix[] = "nvidia.com/gpu=", mount_prefix[] = "/var/run/nvidia-container-devices/";
    struct fg_buf b = FG_BUF_INIT;
    const char *env = env_get(s, "NVIDIA_VISIBLE_DEVICES");
    fg_buf_put_str(&b, env ? env : "");
    for (size_t i = 0; i < s->p->ngrants; i++) {
        const struct fg_sim_grant *g = &s->p->grants[i];
        if (g->container != s->container)
            continue;
        for (size_t j = 0; j < g->answer.ncdi; j++)
            if (fg_str_has_prefix(g->answer.cdi[j], cdi_prefix)) {
                fg_buf_put_str(&b, ",");
                fg_buf_put_str(&b, g->answer.cdi[j] + strlen(cdi_prefix));
            }
        for (size_t j = 0; j < g->answer.nmounts; j++)
            if (fg_str_has_prefix(g->answer.mounts[j].container_path, mount_prefix)) {
                fg_buf_put_str(&b, ",");
                fg_buf_put_str(&b, g->answer.mounts[j].container_path + strlen(mount_prefix));
            }
    }
    return fg_buf_take(&b);
}

enum fg_err fg_sim_spawn_env(struct fg_sim_kubelets *k, json_object *pod, json_object *spec, struct fg_sim_spawn *s)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    env_set(s, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    env_set(s, "HOSTNAME", fg_json_get_str(pod, "metadata", "name", NULL));
    env_set(s, "GNUTLS_NO_IMPLICIT_INIT", "1");
    for (size_t i = 0; i < s->p->ngrants; i++) {
        const struct fg_sim_grant *g = &s->p->grants[i];
        for (size_t j = 0; g->container == s->container && j < g->answer.nenv; j++) {
            const char *eq = strchr(g->answer.env[j], '=');
            char *name = eq ? fg_strndup(g->answer.env[j], (size_t)(eq - g->answer.env[j])) : NULL;
            if (name && *name)
                env_set(s, name, eq + 1);
            free(name);
        }
    }
    json_object *from = fg_json_get(spec, "envFrom", NULL);
    for (size_t i = 0; i < fg_json_array_len(from); i++) {
        json_object *f = json_object_array_get_idx(from, i);
        bool secret = fg_json_get(f, "secretRef", NULL) != NULL;
        const char *name = fg_json_get_str(f, secret ? "secretRef" : "configMapRef", "name", NULL);
        const char *prefix = fg_json_get_str(f, "prefix", NULL);
        json_object *data = fg_sim_read_data(k, secret, ns, name, s->errmsg);
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
            char *v = fg_sim_spawn_expand(s, fg_json_get_str(e, "value", NULL) ? fg_json_get_str(e, "value", NULL) : "");
            env_set(s, name, v);
            free(v);
            continue;
        }
        const char *fp = fg_json_get_str(vf, "fieldRef", "fieldPath", NULL);
        const char *res = fg_json_get_str(vf, "resourceFieldRef", "resource", NULL);
        json_object *cm = fg_json_get(vf, "configMapKeyRef", NULL), *sec = fg_json_get(vf, "secretKeyRef", NULL);
        if (fp) {
            const char *v = fg_sim_pod_field(pod, fp, s);
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
            json_object *data = fg_sim_read_data(k, sec != NULL, ns, fg_json_get_str(ref, "name", NULL), s->errmsg);
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
    snprintf(kubeconfig, sizeof kubeconfig, "%s/kubeconfig", s->p->dir);
    env_set(s, "KUBECONFIG", kubeconfig);
    char visible[FG_SIM_MAX_GPUS * (FG_SIM_GPU_UUID_LEN + 1) + 1];
    char *devices = runtime_devices(s);
    bool gpus = k->cfg->kubelet.gpu_state == FG_SIM_GPU_STATE_FILES &&
                fg_sim_nvidia_visible(s->node, devices, visible, sizeof visible);
    free(devices);
    if (gpus) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/usr/lib/nvidia", s->node->root);
        env_set(s, "LD_LIBRARY_PATH", path);
        char *search = fg_asprintf("%s/usr/bin:%s", s->node->root, env_get(s, "PATH") ? env_get(s, "PATH") : "");
        env_set(s, "PATH", search);   /* the MPS binaries the runtime injects */
        free(search);
        snprintf(path, sizeof path, "%s/nvml/state.json", s->node->root);
        env_set(s, "FG_FAKE_NVML_STATE", path);
        env_set(s, "FG_FAKE_NVML_VISIBLE", visible);
    }
    char preload[PATH_MAX + 32];
    snprintf(preload, sizeof preload, "%s/libfg_sim_podnet.so", k->lib_dir);
    env_set(s, "LD_PRELOAD", preload);
    env_set(s, "FG_SIM_POD_IP", s->p->ip);
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
