/*
 * state — the invariants of fracgpu's GPU sharing, judged from pods alone, without I/O.
 *
 * An end-to-end test must not take the scheduler's word that it shared GPUs correctly, so this
 * module watches what the cluster says instead: every pod as the API server holds it, handed in one
 * event at a time (an add or update with the pod as it is now, a delete with its last known state),
 * with the time of the event passed in rather than read from a clock, and it judges after each one:
 *
 *   1. On each GPU (a node and a GPU UUID) the tenants' compute adds up to at most 1000 milli and their
 *      memory to at most the MiB that the live capacity pod holding that GPU announces; a GPU that no
 *      live capacity pod announces yet has its compute checked and its memory not.
 *   2. A Running tenant has a live capacity pod of the name it carries, on its node, announcing its
 *      GPU — given `grace_ns` to be evicted once one goes away (fg_checker_state_tick looks again when
 *      no event comes). A tenant whose Node was deleted runs nowhere, whatever its pod still says
 *      until the pod garbage collector removes it (kube's looks every 20 s, and waits 40 s for a
 *      missing node): fg_checker_state_node hears of Nodes.
 *   3. A tenant keeps the node and GPU it was first seen bound to for as long as it exists.
 * A tenant whose allocation or GPU annotations cannot be read, or a capacity pod whose memory
 * annotation cannot, is a violation too: a checker that skipped what it cannot read would pass
 * exactly the pods it should fail.
 *
 * Who is who (reconcilers/podcontract.h): a capacity pod is a pod of the capacity namespace labelled
 * with the capacity role; it is live while it has a node, runs and is not being deleted. A tenant is
 * any other pod that names a capacity pod; it counts against its GPU from its binding (spec.nodeName)
 * until it is gone or has Succeeded or Failed. A tenant whose allocation is malformed counts nothing.
 *
 * A relist is judged as a whole: between fg_checker_state_relist_begin and _end the pods are taken in
 * but nothing is judged (nor does the grace run out), since a relist delivers its adds and updates
 * before the deletes of what it no longer holds, and the picture in between never existed. The end
 * judges every GPU and tenant at once.
 *
 * A violation is counted when it begins: a GPU that stays over its limit through ten more events is
 * one violation, and one again if it goes back under and over once more. Each carries a message that
 * names the pods, the GPU, the sums and the limit; the first `keep` messages are kept and every one
 * goes to `report` as it is found.
 *
 * Not thread-safe: the caller serializes (checker.c holds a lock).
 */
#ifndef FG_CHECKER_STATE_H
#define FG_CHECKER_STATE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_CHECKER_MSG_MAX 512

struct fg_checker_state_opts {
    const char *capacity_ns;    /* where capacity pods live; copied */
    uint64_t grace_ns;          /* how long a Running tenant may outlive its capacity pod */
    size_t keep;                /* violation messages kept for fg_checker_state_message */
    void (*report)(void *ud, const char *msg);   /* NULL, or hears each violation as it is found */
    void *report_ud;
};

/* What the checker has seen so far. */
struct fg_checker_stats {
    uint64_t events;                /* pod events judged */
    uint64_t violations;            /* violations found */
    size_t gpus;                    /* distinct GPUs (node, UUID) that a tenant or capacity pod named */
    int64_t max_compute_milli;      /* the largest compute sum seen on one GPU */
    int64_t max_memory_mib;         /* the largest memory sum seen on one GPU whose memory is known */
    int64_t max_memory_limit_mib;   /* that GPU's announced memory at the time */
};

struct fg_checker_state;

struct fg_checker_state *fg_checker_state_new(const struct fg_checker_state_opts *opts);
/* NULL is ignored. */
void fg_checker_state_free(struct fg_checker_state *s);

/* A pod added or changed (borrowed, not kept), at now_ns. */
void fg_checker_state_upsert(struct fg_checker_state *s, json_object *pod, uint64_t now_ns);
/* A pod gone; pod is its last known state (only its namespace and name are read). */
void fg_checker_state_delete(struct fg_checker_state *s, json_object *pod, uint64_t now_ns);
/* Node `name` was added (exists) or deleted, at now_ns. */
void fg_checker_state_node(struct fg_checker_state *s, const char *name, bool exists, uint64_t now_ns);
/* No event, only time passing: tenants left without a capacity pod past the grace. */
void fg_checker_state_tick(struct fg_checker_state *s, uint64_t now_ns);
/* A (re)list begins: judge nothing until it ends. Calling it again before the end is harmless (a
 * list that failed half-way is followed by another). */
void fg_checker_state_relist_begin(struct fg_checker_state *s);
/* The relist has been taken in whole, its deletes included: judge everything at now_ns. */
void fg_checker_state_relist_end(struct fg_checker_state *s, uint64_t now_ns);

void fg_checker_state_stats(const struct fg_checker_state *s, struct fg_checker_stats *out);

/* One GPU as the checker sees it now: its counting tenants and what they add up to (a "whole"
 * memory tenant counts the announced memory, 0 while none is announced). */
struct fg_checker_gpu {
    const char *node, *uuid;
    size_t tenants;
    int64_t compute_milli, memory_mib;
};
typedef void fg_checker_gpu_fn(void *ud, const struct fg_checker_gpu *g);
/* Calls fn for every GPU with a counting tenant (g borrowed for the call). */
void fg_checker_state_gpus(struct fg_checker_state *s, fg_checker_gpu_fn *fn, void *ud);
/* The i-th kept violation message (in the order found), or NULL past the kept ones. Borrowed until
 * the state is freed. */
const char *fg_checker_state_message(const struct fg_checker_state *s, size_t i);

#endif
