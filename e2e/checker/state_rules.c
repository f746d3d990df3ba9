/*
 * state_rules — the three invariants of state.h judged on the records, and the violations they open.
 *
 * A GPU's limits: 1000 milli of compute, always; memory, the MiB the live capacity pod announcing
 * that GPU on that node says (the smallest, should two say it at once), and only when one does. A
 * tenant asking for the "whole" memory counts that figure. Each rule keeps whether its violation is
 * open, so that a violation is reported once when it begins and again only after it has ended. While
 * a relist is taken in the sums and the grace wait; its end judges every GPU and tenant.
 */
#include <inttypes.h>
#include <json-c/linkhash.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/mem.h"
#include "e2e/checker/state_int.h"
#include "reconcilers/podcontract.h"

#define COMPUTE_LIMIT_MILLI 1000

/* The live capacity pod that announces the memory of g (NULL: none does). */
static const struct fg__chk_capacity *memory_source(struct fg_checker_state *s, const struct fg__chk_gpu *g)
{
    const struct fg__chk_capacity *best = NULL;
    struct lh_entry *e;
    lh_foreach(s->capacity, e) {
        const struct fg__chk_capacity *c = lh_entry_v(e);
        if (c->live && c->memory_mib >= 0 && fg_str_eq(c->node, g->node) && fg_str_eq(c->uuid, g->uuid) &&
            (!best || c->memory_mib < best->memory_mib))
            best = c;
    }
    return best;
}

static void list_members(struct fg__chk_msg *m, const struct fg__chk_gpu *g, bool memory, int64_t whole_mib)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct fg__chk_tenant *t = g->members[i];
        const char *sep = i ? ", " : "";
        if (!memory)
            fg__chk_msg_add(m, "%s%s %" PRId64, sep, t->key, t->alloc.compute_milli);
        else if (t->alloc.memory_mib)
            fg__chk_msg_add(m, "%s%s %" PRId64, sep, t->key, t->alloc.memory_mib);
        else
            fg__chk_msg_add(m, "%s%s whole=%" PRId64, sep, t->key, whole_mib);
    }
}

void fg__chk_check_gpu(struct fg_checker_state *s, struct fg__chk_gpu *g)
{
    if (s->listing)
        return;
    const struct fg__chk_capacity *src = memory_source(s, g);
    int64_t compute = 0, memory = 0;
    for (size_t i = 0; i < g->n; i++) {
        compute += g->members[i]->alloc.compute_milli;
        memory += g->members[i]->alloc.memory_mib ? g->members[i]->alloc.memory_mib : src ? src->memory_mib : 0;
    }
    if (compute > s->stats.max_compute_milli)
        s->stats.max_compute_milli = compute;
    if (src && memory > s->stats.max_memory_mib) {
        s->stats.max_memory_mib = memory;
        s->stats.max_memory_limit_mib = src->memory_mib;
    }

    bool over = compute > COMPUTE_LIMIT_MILLI;
    if (over && !g->over_compute) {
        struct fg__chk_msg m = { .len = 0 };
        fg__chk_msg_add(&m, "GPU %s on node %s: compute %" PRId64 " milli > %d milli, tenants: ", g->uuid, g->node,
                        compute, COMPUTE_LIMIT_MILLI);
        list_members(&m, g, false, 0);
        fg__chk_violation(s, m.text);
    }
    g->over_compute = over;

    over = src && memory > src->memory_mib;
    if (over && !g->over_memory) {
        struct fg__chk_msg m = { .len = 0 };
        fg__chk_msg_add(&m, "GPU %s on node %s: memory %" PRId64 " MiB > %" PRId64 " MiB announced by capacity pod "
                        "%s/%s, tenants (MiB): ", g->uuid, g->node, memory, src->memory_mib, s->capacity_ns, src->name);
        list_members(&m, g, true, src->memory_mib);
        fg__chk_violation(s, m.text);
    }
    g->over_memory = over;
}

/* Why capacity pod c (NULL: none) does not back tenant t; NULL when it does. */
static const char *unbacked_because(const struct fg__chk_tenant *t, const struct fg__chk_capacity *c)
{
    if (!c)
        return "it does not exist";
    if (c->terminating)
        return "it is being deleted";
    if (!c->node)
        return "it has no node";
    if (!c->running)
        return "it is not Running";
    if (!fg_str_eq(c->node, t->node))
        return "it is on another node";
    if (!c->uuid || !t->uuid)
        return c->uuid ? "the tenant names no GPU" : "it announces no GPU";
    if (!fg_str_eq(c->uuid, t->uuid))
        return "it announces another GPU";
    return NULL;
}

void fg__chk_check_backing(struct fg_checker_state *s, struct fg__chk_tenant *t, uint64_t now_ns)
{
    if (s->listing)
        return;
    struct fg__chk_capacity *c = NULL;
    if (!t->capacity || !lh_table_lookup_ex(s->capacity, t->capacity, (void **)&c))
        c = NULL;
    bool runs = t->running && !(t->node && lh_table_lookup_entry(s->nodes_gone, t->node));
    const char *why = runs ? unbacked_because(t, c) : NULL;
    if (!why) {
        if (t->unbacked)
            s->waiting--;
        t->unbacked = t->unbacked_reported = false;
        return;
    }
    if (!t->unbacked) {
        t->unbacked = true;
        t->unbacked_since_ns = now_ns;
        s->waiting++;
    }
    uint64_t waited = now_ns > t->unbacked_since_ns ? now_ns - t->unbacked_since_ns : 0;
    if (t->unbacked_reported || waited <= s->grace_ns)
        return;
    t->unbacked_reported = true;
    struct fg__chk_msg m = { .len = 0 };
    fg__chk_msg_add(&m, "tenant %s runs on node %s, GPU %s, without its capacity pod %s/%s for %" PRIu64
                    " ms (grace %" PRIu64 " ms): %s", t->key, t->node ? t->node : "(none)", t->uuid ? t->uuid : "(none)",
                    s->capacity_ns, t->capacity ? t->capacity : "(none)", (uint64_t)((waited + FG_NS_PER_MS - 1) / FG_NS_PER_MS),
                    (uint64_t)(s->grace_ns / FG_NS_PER_MS), why);
    if (c)
        fg__chk_msg_add(&m, " (the capacity pod: node %s, GPU %s)", c->node ? c->node : "(none)",
                        c->uuid ? c->uuid : "(none)");
    fg__chk_violation(s, m.text);
}

void fg__chk_check_backing_of(struct fg_checker_state *s, const char *name, uint64_t now_ns)
{
    struct lh_entry *e;
    lh_foreach(s->tenants, e) {
        struct fg__chk_tenant *t = lh_entry_v(e);
        if (fg_str_eq(t->capacity, name))
            fg__chk_check_backing(s, t, now_ns);
    }
}

void fg_checker_state_node(struct fg_checker_state *s, const char *name, bool exists, uint64_t now_ns)
{
    bool known_gone = lh_table_lookup_entry(s->nodes_gone, name) != NULL;
    if (exists == !known_gone)
        return;
    if (exists)
        lh_table_delete(s->nodes_gone, name);
    else
        lh_table_insert(s->nodes_gone, fg_strdup(name), NULL);
    struct lh_entry *e;
    lh_foreach(s->tenants, e) {
        struct fg__chk_tenant *t = lh_entry_v(e);
        if (fg_str_eq(t->node, name))
            fg__chk_check_backing(s, t, now_ns);
    }
}

void fg_checker_state_tick(struct fg_checker_state *s, uint64_t now_ns)
{
    if (!s->waiting || s->listing)
        return;
    struct lh_entry *e;
    lh_foreach(s->tenants, e) {
        struct fg__chk_tenant *t = lh_entry_v(e);
        if (t->unbacked && !t->unbacked_reported)
            fg__chk_check_backing(s, t, now_ns);
    }
}

void fg_checker_state_relist_begin(struct fg_checker_state *s)
{
    s->listing = true;
}

void fg_checker_state_relist_end(struct fg_checker_state *s, uint64_t now_ns)
{
    s->listing = false;
    struct lh_entry *e;
    lh_foreach(s->gpus, e)
        fg__chk_check_gpu(s, lh_entry_v(e));
    lh_foreach(s->tenants, e)
        fg__chk_check_backing(s, lh_entry_v(e), now_ns);
}

void fg__chk_check_identity(struct fg_checker_state *s, struct fg__chk_tenant *t)
{
    if (!t->first_node)
        return;
    if (fg_str_eq(t->node, t->first_node) && fg_str_eq(t->uuid, t->first_uuid)) {
        fg__chk_set_str(&t->moved_to, NULL);
        return;
    }
    char *now = fg_asprintf("%s/%s", t->node ? t->node : "(none)", t->uuid ? t->uuid : "(none)");
    if (fg__chk_set_str(&t->moved_to, now)) {
        struct fg__chk_msg m = { .len = 0 };
        fg__chk_msg_add(&m, "tenant %s moved while it exists: bound to node %s, GPU %s, it now says node %s, GPU %s",
                        t->key, t->first_node, t->first_uuid, t->node ? t->node : "(none)", t->uuid ? t->uuid : "(none)");
        fg__chk_violation(s, m.text);
    }
    free(now);
}

void fg__chk_check_problem(struct fg_checker_state *s, char **last, const char *problem)
{
    if (fg__chk_set_str(last, problem) && problem)
        fg__chk_violation(s, problem);
}

void fg_checker_state_gpus(struct fg_checker_state *s, fg_checker_gpu_fn *fn, void *ud)
{
    struct lh_entry *e;
    lh_foreach(s->gpus, e) {
        struct fg__chk_gpu *g = (struct fg__chk_gpu *)lh_entry_v(e);
        if (!g->n)
            continue;
        const struct fg__chk_capacity *src = memory_source(s, g);
        struct fg_checker_gpu out = { g->node, g->uuid, g->n, 0, 0 };
        for (size_t i = 0; i < g->n; i++) {
            out.compute_milli += g->members[i]->alloc.compute_milli;
            out.memory_mib += g->members[i]->alloc.memory_mib ? g->members[i]->alloc.memory_mib
                              : src                           ? src->memory_mib
                                                              : 0;
        }
        fn(ud, &out);
    }
}
