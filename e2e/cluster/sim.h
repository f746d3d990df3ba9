/*
 * sim — the parts of `fracgpu-sim-cluster` and how they are started.
 *
 * The supervisor (supervisor.c) is the command a person runs: it starts the test API server as a
 * process of its own, then one process per component, each an API client of that server exactly
 * as kube's components are of kube-apiserver, and keeps them running until SIGTERM. A component is
 * the same binary run as `fracgpu-sim-cluster component NAME ...` (component.c), built on fracgpu's
 * own manager (operator/manager): a list of setup calls, as every fracgpu role is.
 *
 * The components:
 *   controllers  kube-controller-manager's controllers (cm.h)
 *   scheduler    the default scheduler, for every pod not addressed to another scheduler
 *   kubelets     one kubelet per node of the simulated cloud: registration, leases, pods run (real
 *                processes for fracgpu's own image), probes, eviction and deletion
 *   autoscaler   cluster-autoscaler's node-group behaviour: scale-up for unschedulable pods,
 *                scale-down of empty nodes
 * Nodes are instances of a simulated cloud (cloud.h): the autoscaler and the kubelets agree on them
 * through the API, as a cloud provider's API and the nodes that boot from it would.
 */
#ifndef FG_SIM_SIM_H
#define FG_SIM_SIM_H

#include "base/err.h"
#include "e2e/cluster/config.h"
#include "operator/manager/manager.h"

/* The components' names, in start order. */
#define FG_SIM_NCOMPONENTS 4
extern const char *const fg_sim_component_names[FG_SIM_NCOMPONENTS];

/* The switch in cfg of the component called name (cfg->controllers, ...), or NULL for no such
 * component. */
bool *fg_sim_component_switch(struct fg_sim_config *cfg, const char *name);

/* `fracgpu-sim-cluster component NAME ...`: runs one component until SIGTERM; returns the exit status. */
int fg_sim_component_main(int argc, char **argv);
/* `fracgpu-sim-cluster [options]`: the supervisor; returns the exit status. */
int fg_sim_supervisor_main(int argc, char **argv);

/* Each component's setup on its manager. dir is the cluster's working directory. */
enum fg_err fg_sim_scheduler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_kubelets_setup(struct fg_manager *m, const struct fg_sim_config *cfg, const char *dir,
                                  char *errmsg) FG_MUST_USE;
enum fg_err fg_sim_autoscaler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg) FG_MUST_USE;

#endif
