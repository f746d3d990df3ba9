/* fixture — small clusters and pods for the scheduler's unit tests. */
#ifndef FG_SCHEDULER_TEST_FIXTURE_H
#define FG_SCHEDULER_TEST_FIXTURE_H

#include "scheduler/plugins/plugins.h"

/* Adds a node (asserting success) with cpu cores, mem GiB, n GPUs of model; returns its index. */
int fx_node(struct fg_sched_cluster *c, const char *name, int cores, int mem_gib, int n_gpus, const char *model);

/* A shared-isolation time-sliced pod asking for cores, n GPUs at milli each. */
struct fg_sched_pod fx_pod(const char *name, int cores, int n_gpus, int milli);

/* Runs the six filters on node i for pod; true when all pass (prefilters not run). */
bool fx_fits(const struct fg_sched_cluster *c, const struct fg_sched_pod *pod, int i);

/* Runs one filter plugin's filter on node i. */
enum fg_sched_code fx_filter(const struct fg_sched_filter_plugin *pl, const struct fg_sched_cluster *c,
                             const struct fg_sched_pod *pod, int i);

/* Asserts that c's cluster-wide counts and every live node's GPU summary equal those recomputed
 * from the live nodes as they stand. */
void fx_check_counts(const struct fg_sched_cluster *c);

#endif
