/*
 * fake_pods — realistic pods for tests and benchmarks.
 *
 * A pod as the API server returns it from a busy cluster: labels, a kubectl last-applied annotation,
 * ownerReferences, managedFields from three managers, two containers with env, probes, mounts and
 * resources (nvidia.com/gpu included), volumes, tolerations, affinity and a full status — at least
 * 4 KiB of compact JSON, about as much as a real Deployment pod. Deterministic in its arguments.
 */
#ifndef FG_CACHE_FAKE_PODS_H
#define FG_CACHE_FAKE_PODS_H

#include <json-c/json.h>

/* Pod "NAME-PREFIX-i" in namespace ns on node (NULL: unscheduled). The caller owns the result. */
json_object *fg_fake_pod_new(const char *ns, const char *name_prefix, unsigned i, const char *node);

#endif
