/*
 * resources — where fracgpu's custom resources live on the API server: their REST descriptors
 * (operator/kube/resource.h), made from the names crds/ declares. crds/ describes the objects and
 * knows nothing of the client; the code that reads and writes them through the client finds them here.
 */
#ifndef FG_RECONCILERS_RESOURCES_H
#define FG_RECONCILERS_RESOURCES_H

#include "operator/kube/resource.h"

/* GPUPolicies (cluster-scoped), GPUWorkloads and GPUCheckpoints (namespaced), fracgpu.io/v1alpha1. */
extern const struct fg_kube_resource fg_crd_gpupolicies, fg_crd_gpuworkloads, fg_crd_gpucheckpoints;

#endif
