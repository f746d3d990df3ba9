/*
 * holdings — what the kubelet says each pod holds (PodResources List) as the audit reads it
 * (admission.h): per pod, the IDs of its fracgpu.io/gpu-share devices over all its containers.
 */
#include <string.h>

#include "base/mem.h"
#include "nodeagent/deviceplugin/admission.h"
#include "reconcilers/podcontract.h"
#include "nodeagent/grpc/podresources.pb-c.h"

/* How many gpu-share device IDs pod pr holds, and, with ids, those IDs into it. */
static size_t share_devices(const V1__PodResources *pr, const char **ids)
{
    size_t n = 0;
    for (size_t c = 0; c < pr->n_containers; c++)
        for (size_t d = 0; d < pr->containers[c]->n_devices; d++) {
            const V1__ContainerDevices *dev = pr->containers[c]->devices[d];
            if (strcmp(dev->resource_name, FG_RES_GPU_SHARE) != 0)
                continue;
            for (size_t j = 0; j < dev->n_device_ids; j++, n++)
                if (ids)
                    ids[n] = dev->device_ids[j];
        }
    return n;
}

size_t fg_dp_holdings_of(const struct V1__ListPodResourcesResponse *r, struct fg_dp_holding **out)
{
    struct fg_dp_holding *h = fg_calloc(r->n_pod_resources ? r->n_pod_resources : 1, sizeof(*h));
    size_t nh = 0;
    for (size_t i = 0; i < r->n_pod_resources; i++) {
        const V1__PodResources *pr = r->pod_resources[i];
        size_t n = share_devices(pr, NULL);
        if (!n)
            continue;
        const char **ids = fg_calloc(n, sizeof(*ids));
        share_devices(pr, ids);
        h[nh++] = (struct fg_dp_holding){ pr->namespace_, pr->name, ids, n };
    }
    *out = h;
    return nh;
}

void fg_dp_holdings_free(struct fg_dp_holding *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((void *)h[i].device_ids);
    free(h);
}
