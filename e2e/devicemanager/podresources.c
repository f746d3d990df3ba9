/* The device manager's PodResources List service (devicemanager.h). */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "e2e/devicemanager/devicemanager_int.h"
#include "nodeagent/grpc/kubelet.h"
#include "nodeagent/grpc/podresources.pb-c.h"

static void list(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req, (void)len;
    struct fg_dm *dm = ud;
    size_t n = dm->nholdings;
    /* one PodResources per pod, one ContainerResources per (pod, container), one ContainerDevices per holding */
    V1__PodResources *pods = fg_calloc(n ? n : 1, sizeof(*pods));
    V1__PodResources **podp = fg_calloc(n ? n : 1, sizeof(*podp));
    V1__ContainerResources *ctrs = fg_calloc(n ? n : 1, sizeof(*ctrs));
    V1__ContainerResources **ctrp = fg_calloc(n ? n : 1, sizeof(*ctrp));
    V1__ContainerDevices *devs = fg_calloc(n ? n : 1, sizeof(*devs));
    size_t npods = 0, nctrs = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fg__dm_holding *h = &dm->holdings[i];
        v1__container_devices__init(&devs[i]);
        devs[i].resource_name = (char *)h->resource;
        devs[i].n_device_ids = h->n;
        devs[i].device_ids = h->ids;
    }
    /* holdings grouped: pods in first-seen order, their containers, each container's devices */
    for (size_t i = 0; i < n; i++) {
        const struct fg__dm_holding *h = &dm->holdings[i];
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(dm->holdings[j].uid, h->uid) == 0;
        if (seen)
            continue;
        V1__PodResources *pr = &pods[npods];
        v1__pod_resources__init(pr);
        pr->name = (char *)h->name;
        pr->namespace_ = (char *)h->ns;
        pr->containers = &ctrp[nctrs];
        for (size_t j = i; j < n; j++) {
            const struct fg__dm_holding *c = &dm->holdings[j];
            if (strcmp(c->uid, h->uid) != 0)
                continue;
            bool ctr_seen = false;
            for (size_t k = i; k < j && !ctr_seen; k++)
                ctr_seen = strcmp(dm->holdings[k].uid, h->uid) == 0 && strcmp(dm->holdings[k].container, c->container) == 0;
            if (ctr_seen)
                continue;
            V1__ContainerResources *cr = &ctrs[nctrs];
            v1__container_resources__init(cr);
            cr->name = (char *)c->container;
            size_t nd = 0; /* this container's holdings, wherever they are in the records */
            V1__ContainerDevices **gathered = fg_calloc(n, sizeof(*gathered));
            for (size_t k = j; k < n; k++)
                if (strcmp(dm->holdings[k].uid, h->uid) == 0 && strcmp(dm->holdings[k].container, c->container) == 0)
                    gathered[nd++] = &devs[k];
            cr->devices = gathered;
            cr->n_devices = nd;
            ctrp[nctrs++] = cr;
            pr->n_containers++;
        }
        podp[npods++] = pr;
    }
    V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
    resp.n_pod_resources = npods;
    resp.pod_resources = podp;
    if (fg_grpc_call_reply(call, &resp.base) != FG_OK)
        fg_log(FG_LOG_WARN, "devicemanager", "cannot answer a PodResources List");
    for (size_t i = 0; i < nctrs; i++)
        free(ctrs[i].devices);
    free(pods), free(podp), free(ctrs), free(ctrp), free(devs);
}

enum fg_err fg__dm_serve_pod_resources(struct fg_dm *dm, const char *socket_path, char *errmsg)
{
    const struct fg_grpc_method m = { FG_POD_RESOURCES_LIST, FG_GRPC_UNARY, list, NULL, dm };
    struct fg_grpc_server_opts so = { .socket_path = socket_path, .methods = &m, .n_methods = 1 };
    return fg_grpc_server_new(dm->base, &so, &dm->pod_resources, errmsg);
}
