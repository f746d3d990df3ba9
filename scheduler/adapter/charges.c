/*
 * charges — what each pod charges the snapshot, kept in step with what it is now.
 *
 * A pod on a node charges its CPU and memory there. A capacity pod charges only what its holder
 * asks for itself: what it reserves for tenants stays visible to fracgpu's cycle, which shrinks the
 * reservation before binding a tenant that needs it (bind.c). A tenant bound to a live capacity pod
 * also charges its compute and memory to that pod's bin; a tenant whose capacity pod is not a bin
 * (gone, or not yet known) charges CPU and memory only, until the capacity pass evicts it. A pod
 * this scheduler placed charges its assumed placement from the cycle on, before the watch shows it.
 */
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "reconcilers/podcontract.h"
#include "scheduler/adapter/adapter_int.h"

void sa_node_list_add(struct sa_node *n, struct sa_pod *p)
{
    if (n->n_pods == n->cap_pods) {
        n->cap_pods = n->cap_pods ? 2 * n->cap_pods : 16;
        n->pods = fg_realloc(n->pods, n->cap_pods * sizeof(*n->pods));
    }
    p->node_pos = n->n_pods;
    n->pods[n->n_pods++] = p;
    p->on = n;
}

static void list_remove(struct sa_pod *p)
{
    struct sa_node *n = p->on;
    struct sa_pod *last = n->pods[--n->n_pods];
    n->pods[p->node_pos] = last;
    last->node_pos = p->node_pos;
    p->on = NULL;
}

/* The dedicated owner of a confirmed pod (strings borrowed from it). */
static const char *owner_of(const struct sa_pod *p)
{
    return p->info.exclusive || !p->info.workload ? p->key : p->info.workload;
}

void sa_charge_on(struct fg__sched_adapter *a, struct sa_pod *p, struct sa_node *n)
{
    p->charged_slot = -1;
    p->pl.code = FG_SCHED_UNSCHEDULABLE;
    if (n->id < 0)
        return;
    struct fg_sched_pod c;
    int slot = -1;
    if (p->assumed) {
        c = p->want.pod;
        if (c.n_gpus && p->assumed_slot >= 0 && p->assumed_slot < n->n_gpus && n->bins[p->assumed_slot].cap &&
            !strcmp(n->bins[p->assumed_slot].cap->name, p->assumed_cap))
            slot = p->assumed_slot;
    } else {
        c = (struct fg_sched_pod){ .name = p->key, .cpu_milli = p->info.cpu_milli, .mem_mib = p->info.mem_mib };
        if (p->info.role == FG_SA_CAPACITY) {
            c.cpu_milli -= p->info.reserved_cpu;
            c.mem_mib -= p->info.reserved_mem_mib;
        } else if (p->info.role == FG_SA_FRACGPU && p->info.has_gpu && !p->info.problem[0]) {
            slot = sa_node_slot_of(n, p->info.cap_name);
            if (slot >= 0 && !fg_str_eq(n->bins[slot].cap->info.gpu_uuid, p->info.gpu_uuid))
                slot = -1;   /* the name now holds another GPU: not this tenant's */
            c.gpu_milli = p->info.milli;
            c.gpu_mem_mib = p->info.gpu_mem_mib ? p->info.gpu_mem_mib : n->gpu_mem_mib;
            c.sharing = p->info.sharing;
            c.isolation = p->info.isolation;
            c.owner = p->info.isolation == FG_SCHED_ISO_DEDICATED ? owner_of(p) : NULL;
            c.group = p->info.group;
            c.group_min = p->info.group ? p->info.group_min : 0;
        }
    }
    if (slot < 0) {
        c.n_gpus = 0;
        c.gpu_milli = 0;
        c.gpu_mem_mib = 0;
        c.sharing = FG_SCHED_SHARE_NONE;
        c.isolation = FG_SCHED_ISO_SHARED;
        c.owner = NULL;
    } else {
        c.n_gpus = 1;
    }
    char why[FG_ERRMSG_MAX];
    if (fg_sched_framework_add_bound(&a->fw, &a->cluster, &c, n->id, &slot, c.n_gpus, &p->pl, why) != FG_OK) {
        fg_log(FG_LOG_WARN, SA_COMPONENT, "pod %s on node %s: %s; its CPU and memory alone are counted", p->key,
               n->name, why);
        c = (struct fg_sched_pod){ .name = p->key, .cpu_milli = c.cpu_milli < 0 ? 0 : c.cpu_milli,
                                   .mem_mib = c.mem_mib < 0 ? 0 : c.mem_mib };
        slot = -1;
        if (fg_sched_framework_add_bound(&a->fw, &a->cluster, &c, n->id, &slot, 0, &p->pl, why) != FG_OK)
            return;
    }
    if (p->group_wait)
        p->pl.code = FG_SCHED_WAIT;   /* still waiting in Permit: fg_sched_framework_bind takes it from here */
    p->charge = c;
    p->charged_slot = slot;
}

void sa_uncharge(struct fg__sched_adapter *a, struct sa_pod *p)
{
    if (!p->on)
        return;
    fg_sched_framework_unreserve(&a->fw, &a->cluster, &p->charge, &p->pl);
    list_remove(p);
    p->charged_slot = -1;
}

void sa_charge_sync(struct fg__sched_adapter *a, struct sa_pod *p)
{
    struct sa_node *n = NULL;
    if (p->assumed)
        n = sa_node_get(a, p->assumed_node, true);
    else if (p->info.node && !p->info.terminal)
        n = sa_node_get(a, p->info.node, true);
    if (p->on != n) {
        struct sa_node *was = p->on;
        sa_uncharge(a, p);
        if (was && p->info.role == FG_SA_CAPACITY)
            was->dirty = true;
        if (n) {
            sa_node_list_add(n, p);
            sa_charge_on(a, p, n);
            if (!n->json)
                n->dirty = true;   /* rebuilt (dropped when still unknown) at the next flush */
        }
        return;
    }
    if (n) {
        fg_sched_framework_unreserve(&a->fw, &a->cluster, &p->charge, &p->pl);
        sa_charge_on(a, p, n);
    }
}
