/* profile — the default profile: the built-in filters, cheap and selective first (see plugins.h). */
#include "scheduler/plugins/plugins.h"

static const struct fg_sched_filter_plugin *const default_filters[] = {
    &fg_sched_plugin_node_fit, &fg_sched_plugin_gpu_model, &fg_sched_plugin_taints,
    &fg_sched_plugin_node_affinity, &fg_sched_plugin_gpu_fit, &fg_sched_plugin_sharing,
};

const struct fg_sched_profile fg_sched_profile_default = {
    default_filters, sizeof default_filters / sizeof default_filters[0],
};
