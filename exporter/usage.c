/* usage — per-pod sums of a sample's processes; see usage.h. */
#include "exporter/usage.h"

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

void fg_usage_build(const struct fg_sample *smp, const char *proc_root, struct fg_pods *pods, struct fg_usage *out)
{
    memset(out, 0, sizeof *out);
    out->devs = fg_calloc(smp->ndevs ? smp->ndevs : 1, sizeof *out->devs);
    out->ndevs = smp->ndevs;
    for (size_t d = 0; d < smp->ndevs; d++) {
        const struct fg_device_sample *dev = &smp->devs[d];
        struct fg_device_usage *du = &out->devs[d];
        du->dev = dev;
        for (size_t i = 0; i < dev->nprocs; i++) {
            const struct fg_proc_sample *p = &dev->procs[i];
            struct fg_pod_ref ref;
            bool in_pod = attribute(p, proc_root, pods, &ref, &out->unattributed);
            struct fg_pod_usage *r = row_get(du, in_pod, &ref);
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
    }
}

void fg_usage_cleanup(struct fg_usage *u)
{
    for (size_t i = 0; i < u->ndevs; i++)
        free(u->devs[i].rows);
    free(u->devs);
    memset(u, 0, sizeof *u);
}
