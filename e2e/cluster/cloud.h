/*
 * cloud — the simulated cloud's instances: what the autoscaler asks for and the kubelets boot.
 *
 * On a real cluster the autoscaler calls a cloud API to add or remove a VM, and the VM's kubelet
 * registers its Node. Here an instance is a ConfigMap in kube-system labelled
 * sim.fracgpu.io/instance=true and sim.fracgpu.io/node-group=<group>, named sim-instance-<node>,
 * with data {group, node}; node names are `<group>-<5 random characters>`, as cloud node names are
 * opaque. The kubelets component boots a kubelet for every instance (after the configuration's
 * provisionDelay from its creation) and shuts it down, deleting its Node, when the instance is
 * deleted. `kubectl get configmaps -n kube-system -l sim.fracgpu.io/instance` lists the fleet.
 */
#ifndef FG_SIM_CLOUD_H
#define FG_SIM_CLOUD_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"
#include "e2e/cluster/config.h"
#include "operator/kube/client.h"

#define FG_SIM_CLOUD_NAMESPACE "kube-system"
#define FG_SIM_CLOUD_SELECTOR "sim.fracgpu.io/instance=true"
#define FG_SIM_LABEL_GROUP "sim.fracgpu.io/node-group"
#define FG_SIM_NODE_NAME_MAX 96

/* Launches an instance of group; its node's name goes to node (FG_SIM_NODE_NAME_MAX bytes). */
enum fg_err fg_sim_cloud_launch(struct fg_kube_client *c, const char *group, char *node, char *errmsg) FG_MUST_USE;
/* Terminates the instance of node; one already gone is fine. */
enum fg_err fg_sim_cloud_terminate(struct fg_kube_client *c, const char *node, char *errmsg) FG_MUST_USE;
/* The node and group an instance object names (borrowed), or NULL when it is not one. */
const char *fg_sim_cloud_node(json_object *instance);
const char *fg_sim_cloud_group(json_object *instance);
/* The labels a node of group registers with: the group's and the well-known ones
 * (kubernetes.io/hostname, os, arch, node.kubernetes.io/instance-type, the node group); a new object.
 * The autoscaler judges a group's template node by the same labels. */
json_object *fg_sim_cloud_node_labels(const struct fg_sim_group *g, const char *node);
/* A node of group g called name as scheduling reads it: its name, labels and taints (a new object;
 * the autoscaler's template node, the kubelet's view of its own node at admission). */
json_object *fg_sim_cloud_node_shape(const struct fg_sim_group *g, const char *name);
/* How many instances of group exist (a live list); -1 on failure. */
long fg_sim_cloud_count(struct fg_kube_client *c, const char *group);

#endif
