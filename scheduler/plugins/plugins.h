/*
 * plugins — the built-in Filter plugins and the default profile that runs them.
 *
 * Each filter answers one question about one node from that node alone (core/framework.h's filter
 * interface): resources and cordon, the GPU model, taints against tolerations, node selector plus
 * required node affinity, free GPU compute, and whether the GPUs' sharing mode and dedicated owners
 * admit the pod. The default profile runs them cheap and selective first.
 */
#ifndef FG_SCHEDULER_PLUGINS_PLUGINS_H
#define FG_SCHEDULER_PLUGINS_PLUGINS_H

#include "scheduler/core/framework.h"

extern const struct fg_sched_filter_plugin fg_sched_plugin_node_fit;
extern const struct fg_sched_filter_plugin fg_sched_plugin_gpu_model;
extern const struct fg_sched_filter_plugin fg_sched_plugin_taints;
extern const struct fg_sched_filter_plugin fg_sched_plugin_node_affinity;
extern const struct fg_sched_filter_plugin fg_sched_plugin_gpu_fit;
extern const struct fg_sched_filter_plugin fg_sched_plugin_sharing;

/* All six filters in the order above. */
extern const struct fg_sched_profile fg_sched_profile_default;

#endif
