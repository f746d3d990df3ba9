/*
 * chaos_agents — the fault run's hands on fracgpu's node agents (the DaemonSet's pods, one per GPU
 * node): killing one's process as a crash would, and reading what their device plugins decided.
 *
 * A kill is a SIGKILL to the process the kubelet started for the pod's container, found through the
 * pid file the kubelet keeps in the pod's directory on its node; the kubelet sees a crash and starts
 * it again (restart count, backoff), as it would a node agent that died.
 *
 * The device plugin's counters (fracgpu_device_plugin_allocations_total by outcome,
 * fracgpu_device_plugin_evictions_total; docs/device-plugin.md) live in each agent's process and start
 * from zero when it restarts. The scrape reads every agent's /metrics on its pod's address and adds
 * what each series grew since the last scrape of that pod; a value below the last one is a process
 * that restarted, counted from zero. What an agent counted between its last scrape and its death is
 * lost, so the totals are lower bounds unless the caller spares an agent until it has been read.
 */
#ifndef FG_E2E_CHAOS_AGENTS_H
#define FG_E2E_CHAOS_AGENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2e/tests/simcluster.h"

#define CHAOS_AGENT_SELECTOR "app.kubernetes.io/component=node-agent"
#define CHAOS_AGENT_PORT 9402
#define CHAOS_NODE_MAX 96

/* The device plugins' decisions, summed over every agent and restart. */
struct chaos_grants {
    double granted;    /* Allocate served: a grant verified */
    double refused;    /* Allocate refused: no waiting pod had a valid grant */
    double invalid;    /* unknown slots, bad requests */
    double evictions;  /* impostors removed */
};

struct chaos_agents;

struct chaos_agents *chaos_agents_new(void);
void chaos_agents_free(struct chaos_agents *a);

/* Reads every running agent's /metrics and adds what grew; returns how many agents answered. */
size_t chaos_agents_scrape(struct chaos_agents *a, struct fg_simcluster *c);
void chaos_agents_totals(const struct chaos_agents *a, struct chaos_grants *out);
/* Whether the agent on node answered a scrape that began at t_ns (fg_clock_mono_ns) or later. */
bool chaos_agents_read_since(const struct chaos_agents *a, const char *node, uint64_t t_ns);

/* Whether the agent on node must be spared now. */
typedef bool chaos_spare_fn(void *ud, const char *node);

/* SIGKILLs the process of one agent, drawn with *rng among the running ones whose node spare does not
 * spare (spare may be NULL); its node goes to node (CHAOS_NODE_MAX bytes). False when there was none
 * or the API could not say. */
bool chaos_agents_kill(struct fg_simcluster *c, unsigned *rng, chaos_spare_fn *spare, void *ud, char *node);

/* Restarts of the containers of the agents' pods that exist now, as their statuses count them. */
unsigned chaos_agents_restarts(struct fg_simcluster *c);

#endif
