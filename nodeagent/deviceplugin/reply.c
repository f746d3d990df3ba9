/* What a container gets from Allocate (reply.h). */
#include "nodeagent/deviceplugin/reply.h"

#include <dirent.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nodeagent/holder/mps_paths.h"


const char *fg_dp_form_name(enum fg_dp_form f)
{
    switch (f) {
    case FG_DP_FORM_AUTO: return "auto";
    case FG_DP_FORM_ENVVAR: return "envvar";
    case FG_DP_FORM_VOLUME_MOUNTS: return "volume-mounts";
    case FG_DP_FORM_CDI: return "cdi-cri";
    }
    return "?";
}

enum fg_err fg_dp_form_parse(const char *name, enum fg_dp_form *out)
{
    for (int f = FG_DP_FORM_AUTO; f <= FG_DP_FORM_CDI; f++)
        if (name && strcmp(name, fg_dp_form_name((enum fg_dp_form)f)) == 0) {
            *out = (enum fg_dp_form)f;
            return FG_OK;
        }
    return FG_E_INVAL;
}

/* Whether the file at path mentions needle in its first 64 KiB. */
static bool file_mentions(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* A CDI spec for NVIDIA GPUs in dir (yaml or json files declaring kind nvidia.com/gpu). */
static bool cdi_spec_in(const char *dir, char *found, size_t found_size)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool yes = false;
    struct dirent *e;
    while (!yes && (e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".yaml") && strcmp(dot, ".yml") && strcmp(dot, ".json")))
            continue;
        snprintf(found, found_size, "%s/%s", dir, e->d_name);
        yes = file_mentions(found, "nvidia.com/gpu");
    }
    closedir(d);
    return yes;
}

/* Whether a TOML line sets key = true (not commented out). */
static bool toml_true(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    bool yes = false;
    while (!yes && fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");
        size_t klen = strlen(key);
        if (strncmp(p, key, klen) != 0)
            continue;
        p += klen;
        p += strspn(p, " \t");
        if (*p++ != '=')
            continue;
        p += strspn(p, " \t");
        yes = strncmp(p, "true", 4) == 0 && (p[4] == '\0' || strchr(" \t\r\n#", p[4]));
    }
    fclose(f);
    return yes;
}

enum fg_dp_form fg_dp_form_detect(const char *host_root, char *why)
{
    char dir[FG_DP_PATH_MAX], found[FG_DP_PATH_MAX + 256];
    const char *root = host_root && strcmp(host_root, "/") ? host_root : "";
    static const char *const cdi_dirs[] = { "/etc/cdi", "/var/run/cdi", NULL };
    for (int i = 0; cdi_dirs[i]; i++) {
        snprintf(dir, sizeof(dir), "%s%s", root, cdi_dirs[i]);
        if (cdi_spec_in(dir, found, sizeof(found))) {
            if (why)
                snprintf(why, FG_ERRMSG_MAX, "CDI spec %.400s declares nvidia.com/gpu", found);
            return FG_DP_FORM_CDI;
        }
    }
    snprintf(found, sizeof(found), "%s/etc/nvidia-container-runtime/config.toml", root);
    if (toml_true(found, "accept-nvidia-visible-devices-as-volume-mounts")) {
        if (why)
            snprintf(why, FG_ERRMSG_MAX, "%.400s accepts the device list as volume mounts", found);
        return FG_DP_FORM_VOLUME_MOUNTS;
    }
    if (why)
        snprintf(why, FG_ERRMSG_MAX, "no NVIDIA CDI spec in %.100s/etc/cdi or %.100s/var/run/cdi, no volume-mount list in %.200s",
                 root, root, found);
    return FG_DP_FORM_ENVVAR;
}

static void add_env(struct fg_dp_reply *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_env(struct fg_dp_reply *r, const char *name, const char *fmt, ...)
{
    struct fg_dp_env *e = &r->envs[r->nenvs++];
    snprintf(e->name, sizeof(e->name), "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->value, sizeof(e->value), fmt, ap);
    va_end(ap);
}

static void add_mount(struct fg_dp_reply *r, const char *container_path, const char *host_path, bool read_only)
{
    struct fg_dp_mount *m = &r->mounts[r->nmounts++];
    snprintf(m->container_path, sizeof(m->container_path), "%s", container_path);
    snprintf(m->host_path, sizeof(m->host_path), "%s", host_path);
    m->read_only = read_only;
}

enum fg_err fg_dp_reply_build(enum fg_dp_form f, const struct fg_dp_grant_view *g, struct fg_dp_reply *out,
                              char *errmsg)
{
    memset(out, 0, sizeof(*out));
    char path[FG_DP_PATH_MAX];
    switch (f) {
    case FG_DP_FORM_CDI:
        snprintf(out->cdi_device, sizeof(out->cdi_device), "nvidia.com/gpu=%s", g->gpu_uuid);
        add_env(out, "NVIDIA_VISIBLE_DEVICES", "%s", g->gpu_uuid);
        break;
    case FG_DP_FORM_VOLUME_MOUNTS:
        snprintf(path, sizeof(path), FG_DP_MOUNTS_DIR "/%s", g->gpu_uuid);
        add_mount(out, path, "/dev/null", true);
        add_env(out, "NVIDIA_VISIBLE_DEVICES", FG_DP_MOUNTS_DIR);
        break;
    case FG_DP_FORM_AUTO:
    case FG_DP_FORM_ENVVAR:
        add_env(out, "NVIDIA_VISIBLE_DEVICES", "%s", g->gpu_uuid);
        break;
    }
    if (!g->mps)
        return FG_OK;
    enum fg_err err = fg_mps_dir(g->mps_root, g->gpu_uuid, "pipe", path, sizeof(path), errmsg);
    if (err)
        return err;
    add_mount(out, FG_DP_MPS_PIPE, path, false);
    if ((err = fg_mps_dir(g->mps_root, g->gpu_uuid, "shm", path, sizeof(path), errmsg)))
        return err;
    add_mount(out, "/dev/shm", path, false);
    add_env(out, "CUDA_MPS_PIPE_DIRECTORY", FG_DP_MPS_PIPE);
    int64_t pct = g->compute_milli / 10;
    add_env(out, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "%" PRId64, pct < 1 ? 1 : pct > 100 ? 100 : pct);
    if (g->memory_mib > 0)
        add_env(out, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=%" PRId64 "M", g->memory_mib);
    return FG_OK;
}
