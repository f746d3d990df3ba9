/* usage — per-pod sums of a sample's processes; see usage.h. */
#include "exporter/usage.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "exporter/cgroup.h"

static struct fg_pod_usage *row_get(struct fg_device_usage *du, bool in_pod, const struct fg_pod_ref *ref)
{
    for (size_t i = 0; i < du->nrows; i++) {
        struct fg_pod_usage *r = &du->rows[i];
        if (r->in_pod == in_pod &&
            (!in_pod || (strcmp(r->ref.ns, ref->ns) == 0 && strcmp(r->ref.name, ref->name) == 0 &&
                         strcmp(r->ref.container, ref->container) == 0)))
            return r;
    }
    du->rows = fg_realloc(du->rows, (du->nrows + 1) * sizeof *du->rows);
    struct fg_pod_usage *r = &du->rows[du->nrows++];
    memset(r, 0, sizeof *r);
    r->in_pod = in_pod;
    if (in_pod)
        r->ref = *ref;
    r->mem_known = true;
    r->util = 0;
    return r;
}

/* Finds the pod of one process; false when it is in none (or cannot be told). */
static bool attribute(const struct fg_proc_sample *p, const char *proc_root, struct fg_pods *pods,
                      struct fg_pod_ref *ref, size_t *unattributed)
{
    struct fg_cgroup_ident id;
    char msg[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_cgroup_read_pid(proc_root, p->pid, &id, msg);
    if (err == FG_E_NOT_FOUND_LOCAL)
        return false;
    if (err) {
        (*unattributed)++;
        bool exited = strstr(msg, "No such file") != NULL;
        fg_log(exited ? FG_LOG_DEBUG : FG_LOG_WARN, "exporter", "pid %u: cannot tell its pod: %s", p->pid,
               msg[0] ? msg : fg_err_str(err));
        return false;
    }
    return fg_pods_lookup(pods, id.pod_uid, id.container_id, ref);
}

#define MPS_SERVER_EXE "nvidia-cuda-mps-server"

/* True when pid runs the MPS server (argv[0]'s base name); a process that cannot be read is not one. */
static bool is_mps_server(const char *proc_root, unsigned pid)
{
    char path[PATH_MAX], argv0[256];
    snprintf(path, sizeof path, "%s/%u/cmdline", proc_root, pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(argv0, 1, sizeof argv0 - 1, f);
    fclose(f);
    argv0[n] = '\0';   /* argv[0] ends at its NUL; a longer one is cut and is no match */
    const char *base = strrchr(argv0, '/');
    return strcmp(base ? base + 1 : argv0, MPS_SERVER_EXE) == 0;
}

/* An MPS device's compute (util: percent, -1 unknown) goes to the pod of its clients when there is one
 * such pod; with several, no pod's share can be told. */
static void attribute_mps_util(struct fg_device_usage *du, int util)
{
    size_t pods = 0;
    for (size_t i = 0; i < du->nrows; i++)
        pods += du->rows[i].in_pod && du->rows[i].has_mps_client;
    for (size_t i = 0; i < du->nrows; i++)
        if (du->rows[i].in_pod && du->rows[i].has_mps_client)
            du->rows[i].util = pods == 1 ? util : -1;
}

void fg_usage_build(const struct fg_sample *smp, const char *proc_root, struct fg_pods *pods, struct fg_usage *out)
{
    memset(out, 0, sizeof *out);
    out->devs = fg_calloc(smp->ndevs ? smp->ndevs : 1, sizeof *out->devs);
    out->ndevs = smp->ndevs;
    for (size_t d = 0; d < smp->ndevs; d++) {
        const struct fg_device_sample *dev = &smp->devs[d];
        struct fg_device_usage *du = &out->devs[d];
        du->dev = dev;
        bool mps = false;
        int server_util = -1;
        for (size_t i = 0; i < dev->nprocs; i++) {
            const struct fg_proc_sample *p = &dev->procs[i];
            if (!p->mps && is_mps_server(proc_root, p->pid)) {
                du->mps_server_mem_known = du->mps_server ? du->mps_server_mem_known && p->mem_known : p->mem_known;
                du->mps_server = true;
                du->mps_server_mem += p->mem_known ? p->mem_used : 0;
                server_util = p->sm_util > server_util ? p->sm_util : server_util;
                continue;
            }
            mps |= p->mps;
            struct fg_pod_ref ref;
            bool in_pod = attribute(p, proc_root, pods, &ref, &out->unattributed);
            struct fg_pod_usage *r = row_get(du, in_pod, &ref);
            r->has_mps_client |= p->mps;
            if (p->mem_known)
                r->mem_used += p->mem_used;
            else
                r->mem_known = false;
            if (p->sm_util < 0 || r->util < 0)
                r->util = -1;
            else
                r->util = r->util + p->sm_util > 100 ? 100 : r->util + p->sm_util;
        }
        /* a MIG instance (no per-process figures) used by one pod alone: its compute is that pod's */
        if (dev->mig && dev->util >= 0 && du->nrows == 1 && du->rows[0].in_pod && du->rows[0].util < 0)
            du->rows[0].util = dev->util;
        if (mps)
            attribute_mps_util(du, dev->util >= 0 ? dev->util : server_util);
    }
}

void fg_usage_cleanup(struct fg_usage *u)
{
    for (size_t i = 0; i < u->ndevs; i++)
        free(u->devs[i].rows);
    free(u->devs);
    memset(u, 0, sizeof *u);
}
