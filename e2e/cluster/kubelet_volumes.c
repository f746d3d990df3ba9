/*
 * kubelet_volumes — a container's volumes on one machine. hostPath is the node's own directory
 * (<node root>/<path>, made when missing: the simulated host has every directory a pod asks for);
 * emptyDir, configMap, secret, downwardAPI and projected volumes (service account token, configMap,
 * secret, downwardAPI sources) are files under the pod's directory, subPath a path under either.
 * A process sees them at their real paths on this machine, so every mountPath appearing in the
 * command, the args, the env values or workingDir (whole, or as a path prefix) is rewritten to its
 * host path (rewrite.h): `--proc-root=/host/proc` becomes `--proc-root=<node>/proc`. A path the
 * program builds at run time from other pieces is not rewritten.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet_spawn.h"
#include "e2e/cluster/rewrite.h"
#include "operator/kube/quantity.h"
#include "operator/kube/resource.h"

static bool write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    fg_mkdir_p(path);
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

static void write_downward(json_object *pod, const struct fg_sim_spawn *s, const char *dir, json_object *items)
{
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        const char *fp = fg_json_get_str(it, "fieldRef", "fieldPath", NULL), *path = fg_json_get_str(it, "path", NULL);
        const char *v = fp ? fg_sim_pod_field(pod, fp, s) : NULL;
        if (path)
            write_file(dir, path, v ? v : "", v ? strlen(v) : 0);
    }
}

/* Fills the volume `vol` at host (a directory under the pod's). */
static enum fg_err fill_volume(struct fg_sim_kubelets *k, const struct fg_sim_spawn *s, json_object *pod,
                               json_object *vol, const char *host)
{
    char *errmsg = s->errmsg;
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    fg_mkdir_p(host);
    json_object *v;
    if ((v = fg_json_get(vol, "configMap", NULL)) || (v = fg_json_get(vol, "secret", NULL))) {
        bool secret = fg_json_get(vol, "secret", NULL) != NULL;
        json_object *data = fg_sim_read_data(k, secret, ns, fg_json_get_str(v, secret ? "secretName" : "name", NULL), errmsg);
        if (!data && !json_object_get_boolean(fg_json_get(v, "optional", NULL)))
            return FG_E_NOT_FOUND_LOCAL;
        write_items(host, data, fg_json_get(v, "items", NULL));
        json_object_put(data);
    } else if ((v = fg_json_get(vol, "downwardAPI", NULL))) {
        write_downward(pod, s, host, fg_json_get(v, "items", NULL));
    } else if ((v = fg_json_get(vol, "projected", NULL))) {
        json_object *sources = fg_json_get(v, "sources", NULL);
        for (size_t i = 0; i < fg_json_array_len(sources); i++) {
            json_object *src = json_object_array_get_idx(sources, i), *x;
            if ((x = fg_json_get(src, "serviceAccountToken", NULL))) {
                const char *path = fg_json_get_str(x, "path", NULL);
                char token[sizeof k->token + 512];
                fg_sim_pod_token(k, pod, token, sizeof token);
                write_file(host, path ? path : "token", token, strlen(token));
            } else if ((x = fg_json_get(src, "configMap", NULL)) || (x = fg_json_get(src, "secret", NULL))) {
                bool secret = fg_json_get(src, "secret", NULL) != NULL;
                json_object *data = fg_sim_read_data(k, secret, ns, fg_json_get_str(x, "name", NULL), errmsg);
                write_items(host, data, fg_json_get(x, "items", NULL));
                json_object_put(data);
            } else if ((x = fg_json_get(src, "downwardAPI", NULL))) {
                write_downward(pod, s, host, fg_json_get(x, "items", NULL));
            }
        }
    }
    return FG_OK;
}

enum fg_err fg_sim_spawn_volumes(struct fg_sim_kubelets *k, json_object *pod, json_object *spec,
                                 struct fg_sim_spawn *s)
{
    json_object *mounts = fg_json_get(spec, "volumeMounts", NULL), *vols = fg_json_get(pod, "spec", "volumes", NULL);
    for (size_t i = 0; i < fg_json_array_len(mounts) && s->nmounts < FG_SIM_MAX_MOUNTS; i++) {
        json_object *m = json_object_array_get_idx(mounts, i), *vol = NULL;
        const char *name = fg_json_get_str(m, "name", NULL), *at = fg_json_get_str(m, "mountPath", NULL);
        for (size_t j = 0; j < fg_json_array_len(vols) && !vol; j++)
            if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(vols, j), "name", NULL), name))
                vol = json_object_array_get_idx(vols, j);
        if (!vol || !at) {
            fg_errmsg(s->errmsg, FG_E_INVAL, "volumeMounts[%zu]: no volume \"%s\"", i, name ? name : "");
            return FG_E_INVAL;
        }
        struct fg_sim_spawn_mount *mt = &s->mounts[s->nmounts++];
        mt->container_path = at;
        const char *host_path = fg_json_get_str(vol, "hostPath", "path", NULL);
        if (host_path) {
            snprintf(mt->host, sizeof mt->host, "%s%s", s->node->root, host_path);
            struct stat st;
            if (stat(mt->host, &st) != 0)
                fg_mkdir_p(mt->host);   /* the simulated host has every directory a pod asks for */
        } else {
            snprintf(mt->host, sizeof mt->host, "%s/volumes/%s", s->p->dir, name);
            enum fg_err err = fill_volume(k, s, pod, vol, mt->host);
            if (err)
                return err;
        }
        const char *sub = fg_json_get_str(m, "subPath", NULL);
        if (sub && *sub) {
            size_t n = strlen(mt->host);
            snprintf(mt->host + n, sizeof mt->host - n, "/%s", sub);
        }
    }
    /* the mounts the device plugins answered with (an MPS pipe, a device list): their host paths are
     * this machine's already, as the plugin named them */
    for (size_t i = 0; i < s->p->ngrants; i++) {
        const struct fg_sim_grant *g = &s->p->grants[i];
        for (size_t j = 0; g->container == s->container && j < g->answer.nmounts && s->nmounts < FG_SIM_MAX_MOUNTS; j++) {
            struct fg_sim_spawn_mount *mt = &s->mounts[s->nmounts++];
            mt->container_path = g->answer.mounts[j].container_path;
            snprintf(mt->host, sizeof mt->host, "%s", g->answer.mounts[j].host_path);
        }
    }
    return FG_OK;
}

char *fg_sim_spawn_map_paths(const struct fg_sim_spawn *s, const char *in)
{
    struct fg_sim_mount m[FG_SIM_MAX_MOUNTS];
    for (size_t i = 0; i < s->nmounts; i++)
        m[i] = (struct fg_sim_mount){ s->mounts[i].container_path, s->mounts[i].host };
    return fg_sim_map_paths(m, s->nmounts, in);
}
