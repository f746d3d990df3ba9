/* resources — the REST descriptors of fracgpu's custom resources; see resources.h. */
#include "reconcilers/resources.h"

#include "crds/gpupolicy.h"

const struct fg_kube_resource fg_crd_gpupolicies = {
    .group = FG_GROUP, .version = FG_CRD_VERSION, .plural = FG_GPUPOLICY_PLURAL, .kind = FG_GPUPOLICY_KIND,
    .namespaced = false,
};
const struct fg_kube_resource fg_crd_gpuworkloads = {
    .group = FG_GROUP, .version = FG_CRD_VERSION, .plural = FG_GPUWORKLOAD_PLURAL, .kind = FG_GPUWORKLOAD_KIND,
    .namespaced = true,
};
const struct fg_kube_resource fg_crd_gpucheckpoints = {
    .group = FG_GROUP, .version = FG_CRD_VERSION, .plural = FG_GPUCHECKPOINT_PLURAL, .kind = FG_GPUCHECKPOINT_KIND,
    .namespaced = true,
};
