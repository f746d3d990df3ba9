/*
 * sched_fixture — small clusters for the default scheduler's tests: Ready nodes and pods written as
 * JSON with single quotes (so tests read as the objects do), placed on a snapshot, and one cycle
 * run with a fixed random seed.
 *
 * Ownership: fixture_pod returns a reference the caller drops; everything else is the snapshot's.
 */
#ifndef FG_SIM_SCHED_FIXTURE_H
#define FG_SIM_SCHED_FIXTURE_H

#include <json-c/json.h>
#include <stdint.h>

#include "e2e/cluster/sched.h"

/* cmocka setup and teardown: *state is a new empty snapshot. */
int fixture_setup(void **state);
int fixture_teardown(void **state);
/* JSON from text in which ' stands for " (fails the test on a syntax error). */
json_object *fixture_json(const char *text);
/* Adds a Ready node with allocatable cpu, memory and pods, labelled kubernetes.io/hostname=name,
 * with `extra` (JSON text as above, may be NULL) merged into it. */
void fixture_node(struct fg_sim_sched_snapshot *s, const char *name, const char *cpu, const char *memory, int pods,
                  const char *extra);
/* A pod in namespace default whose one container requests cpu and memory (NULL: not set), with
 * spec.priority, and `extra` merged into it. */
struct fg_sim_sched_pod *fixture_pod(const char *name, const char *cpu, const char *memory, int64_t priority,
                                     const char *extra);
/* Places a new pod on node (and drops the caller's reference). */
void fixture_place(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node);
/* Nominates a new pod to node (and drops the caller's reference). */
void fixture_nominate(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node);
/* Runs one cycle for pod with seed 1; r is filled (the caller cleans it up). Returns the chosen
 * node's name or NULL. */
const char *fixture_schedule(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod,
                             struct fg_sim_sched_result *r);

#endif
