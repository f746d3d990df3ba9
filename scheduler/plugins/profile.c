/* profile — the default profile: the built-in filters, cheap and selective first (see plugins.h). */
#include "scheduler/plugins/plugins.h"

static const struct fg_sched_filter_plugin *const default_filters[] = {
    &fg_sched_plugin_node_fit, &fg_sched_plugin_gpu_model, &fg_sched_plugin_taints,
    &fg_sched_plugin_node_affinity, &fg_sched_plugin_gpu_fit, &fg_sched_plugin_sharing,
};

/* No PostFilter or Bind: the framework's no-op defaults (a live scheduler's profile names its own). */
const struct fg_sched_profile fg_sched_profile_default = {
    .filters = default_filters,
    .n_filters = sizeof default_filters / sizeof default_filters[0],
};
