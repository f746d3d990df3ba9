/*
 * checker — an independent judge of fracgpu's GPU sharing for end-to-end tests.
 *
 * A test that lets fracgpu's scheduler place tenants on shared GPUs starts a checker beside it: the
 * checker makes its own manager (operator/manager: its own kube client, loop thread and informer) from
 * the cluster's kubeconfig, watches every pod of every namespace, and after each event, and on a
 * timer of its own, judges the invariants that state.h lists — no GPU over 1000 milli or over its
 * announced memory, no Running tenant without its capacity pod past the grace, no tenant moving — on
 * nothing but what the API server says. It shares no code with the scheduler's bookkeeping, so a bug
 * there cannot hide itself here.
 *
 * The informer machinery keeps the watch alive: dropped watches are renewed, a 410 relists (and the
 * store's replace protocol turns what the relist no longer holds into deletes, so no stale tenant
 * lingers), 429 and 500 are retried with backoff. Each list is framed (relist.h) and judged once it
 * has been taken in whole, never half-way. Each violation is logged at error level as it is
 * found, and the first `keep` messages stay for the test to print.
 *
 * Threads: start, stop and free belong to the test's thread; the queries may be called from any
 * thread at any time between start and free, and answer the final figures after stop.
 */
#ifndef FG_CHECKER_CHECKER_H
#define FG_CHECKER_CHECKER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "e2e/checker/state.h"

struct fg_checker_opts {
    const char *capacity_ns;    /* where capacity pods live */
    unsigned grace_ms;          /* how long a Running tenant may outlive its capacity pod */
    unsigned tick_ms;           /* how often the grace is looked at when no event comes; > 0 */
    size_t keep;                /* violation messages kept */
};

#define FG_CHECKER_OPTS_DEFAULT { .capacity_ns = "fracgpu-system", .grace_ms = 10000, .tick_ms = 100, .keep = 64 }

struct fg_checker;

/* Starts watching the cluster of `kubeconfig` (opts NULL: the defaults). Returns once the watch is
 * under way, not once it has listed: see fg_checker_wait_synced. errmsg says what failed. */
enum fg_err fg_checker_start(const char *kubeconfig, const struct fg_checker_opts *opts, struct fg_checker **out,
                             char *errmsg) FG_MUST_USE;
/* Waits, at most timeout_ms, for the first list of pods to have been judged. */
bool fg_checker_wait_synced(struct fg_checker *c, unsigned timeout_ms);
/* Stops watching; the figures stay. Idempotent. */
void fg_checker_stop(struct fg_checker *c);
/* Stops if needed, then frees. NULL is ignored. */
void fg_checker_free(struct fg_checker *c);

/* The figures so far (state.h): events, violations, GPUs seen, the largest sums. */
void fg_checker_stats(struct fg_checker *c, struct fg_checker_stats *out);
/* Calls fn, under the checker's lock, for every GPU with a counting tenant (state.h). */
void fg_checker_gpus(struct fg_checker *c, fg_checker_gpu_fn *fn, void *ud);
/* A copy of the i-th kept violation message (the caller frees), or NULL past the kept ones. */
char *fg_checker_message(struct fg_checker *c, size_t i);
/* One line for a test's log: "checker: 812 events, 4 GPUs, 0 violations, max 900/1000 milli, max
 * 30000/40000 MiB" (the caller frees). */
char *fg_checker_summary(struct fg_checker *c);

#endif
