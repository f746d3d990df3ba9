/*
 * resize — capacity pods' reservations shrunk through pods/resize, one request in flight per pod.
 *
 * A capacity pod reserves CPU and memory for the tenants it is made for; as they bind, bind.c lowers
 * its target requests (sa_resize_shrink) by what each takes. The target is what is sent: absolute
 * requests, as the resize subresource takes them. Two resizes of one pod in flight at once could
 * reach the API server in either order, the larger last, and leave the pod reserving what tenants
 * already use — so a pod has at most one in flight, and when its answer comes the latest target is
 * sent if it moved meanwhile. A shrink is applied once the pod's spec equals its target and the
 * kubelet reports the spec's resources as its own (podinfo's `resized`). A refused resize drops the
 * target and fails the binds that waited on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/resource.h"
#include "scheduler/adapter/adapter_int.h"

/* The requests p is asked to have: its target, or its spec's when it has none. */
static void requests(const struct sa_pod *p, int64_t *cpu, int64_t *mem)
{
    *cpu = p->target_set ? p->target_cpu : p->info.cpu_milli;
    *mem = p->target_set ? p->target_mem : p->info.mem_mib;
}

void sa_resize_reserved(const struct sa_pod *p, int64_t *cpu, int64_t *mem)
{
    requests(p, cpu, mem);
    *cpu = *cpu > FG_SA_HOLDER_CPU_MILLI ? *cpu - FG_SA_HOLDER_CPU_MILLI : 0;
    *mem = *mem > FG_SA_HOLDER_MEM_MIB ? *mem - FG_SA_HOLDER_MEM_MIB : 0;
}

void sa_resize_shrink(struct sa_pod *p, int64_t cpu, int64_t mem)
{
    int64_t c, m;
    requests(p, &c, &m);
    p->target_set = true;
    p->target_cpu = c - cpu;
    p->target_mem = m - mem;
}

bool sa_resize_applied(const struct sa_pod *p)
{
    if (p->resize_inflight)
        return false;
    if (p->target_set && (p->info.cpu_milli != p->target_cpu || p->info.mem_mib != p->target_mem))
        return false;
    return p->info.resized;
}

struct resize_call {
    struct fg__sched_adapter *a;
    char *key, *uid;
    int64_t cpu, mem;           /* the target sent */
};

static void resized(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct resize_call *rc = ud;
    struct fg__sched_adapter *a = rc->a;
    struct sa_pod *cap = a->running ? sa_pod_get(a, rc->key) : NULL;
    if (cap && strcmp(cap->uid, rc->uid))
        cap = NULL;   /* made again meanwhile: this answer is not its */
    if (cap) {
        cap->resize_inflight = false;
        if (err) {
            char why[FG_ERRMSG_MAX];
            snprintf(why, sizeof(why), "%s%s%s", fg_err_str(err), st && st->message ? ": " : "",
                     st && st->message ? st->message : "");
            fg_log(FG_LOG_WARN, SA_COMPONENT, "capacity pod %s: resize refused: %s", rc->key, why);
            cap->target_set = false;
            cap->sent_cpu = cap->sent_mem = 0;
            sa_bind_fail_waiting_on(a, rc->key, why);
        } else {
            /* the answer is not taken as the pod's state: the watch may have brought a newer one
             * (the kubelet's status applying this very resize) before it */
            fg_counter_add(a->resizes, 1);
            cap->sent_cpu = rc->cpu;
            cap->sent_mem = rc->mem;
            sa_resize_send(a, cap);   /* the target moved while this one was in flight */
            sa_bind_resume(a, cap->info.node);
        }
    }
    free(rc->key);
    free(rc->uid);
    free(rc);
}

void sa_resize_send(struct fg__sched_adapter *a, struct sa_pod *cap)
{
    if (!cap || cap->resize_inflight || !cap->target_set ||
        (cap->info.cpu_milli == cap->target_cpu && cap->info.mem_mib == cap->target_mem) ||
        (cap->sent_cpu == cap->target_cpu && cap->sent_mem == cap->target_mem))
        return;   /* nothing asked, one in flight, or the target is the pod's or on its way */
    char *body = fg_asprintf("{\"spec\":{\"containers\":[{\"name\":\"%s\",\"resources\":{\"requests\":"
                             "{\"cpu\":\"%lldm\",\"memory\":\"%lldMi\"}}}]}}",
                             cap->info.container ? cap->info.container : "holder", (long long)cap->target_cpu, (long long)cap->target_mem);
    char *path = fg_kube_path(&fg_kube_pods, cap->ns, cap->name, "resize", NULL);
    struct resize_call *rc = fg_calloc(1, sizeof(*rc));
    *rc = (struct resize_call){ a, fg_strdup(cap->key), fg_strdup(cap->uid), cap->target_cpu, cap->target_mem };
    cap->resize_inflight = true;
    fg_log(FG_LOG_INFO, SA_COMPONENT, "capacity pod %s: reservation shrunk to %lldm CPU, %lld MiB", cap->key,
           (long long)cap->target_cpu, (long long)cap->target_mem);
    fg_kube_loop_request(a->loop, "PATCH", path, "application/strategic-merge-patch+json", body, strlen(body), resized,
                         rc);
    free(path);
    free(body);
}
