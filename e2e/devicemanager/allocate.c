/* The device manager's allocations (devicemanager.h): devices chosen, Allocate, the records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "e2e/devicemanager/devicemanager_int.h"
#include "nodeagent/grpc/kubelet.h"

#define CALL_TIMEOUT_MS 10000

struct alloc {
    struct fg_dm *dm;
    char ns[64], name[254], uid[64], container[64], resource[128];
    size_t n;
    char **free_ids; /* the healthy free devices when the allocation began */
    size_t nfree;
    const char **chosen;
    fg_dm_done_fn *done;
    void *ud;
};

static void alloc_free(struct alloc *a)
{
    for (size_t i = 0; i < a->nfree; i++)
        free(a->free_ids[i]);
    free(a->free_ids);
    free(a->chosen);
    free(a);
}

static void finish(struct alloc *a, enum fg_grpc_status status, const char *message,
                   const V1beta1__ContainerAllocateResponse *reply)
{
    a->done(a->ud, status, message, reply, reply ? a->chosen : NULL, reply ? a->n : 0);
    alloc_free(a);
}

static bool held(const struct fg_dm *dm, const char *resource, const char *id)
{
    for (size_t i = 0; i < dm->nholdings; i++)
        if (strcmp(dm->holdings[i].resource, resource) == 0)
            for (size_t j = 0; j < dm->holdings[i].n; j++)
                if (strcmp(dm->holdings[i].ids[j], id) == 0)
                    return true;
    return false;
}

void fg_dm_record(struct fg_dm *dm, const char *ns, const char *name, const char *uid, const char *container,
                  const char *resource, const char *const *device_ids, size_t n)
{
    dm->holdings = fg_realloc(dm->holdings, (dm->nholdings + 1) * sizeof(*dm->holdings));
    struct fg__dm_holding *h = &dm->holdings[dm->nholdings++];
    memset(h, 0, sizeof(*h));
    snprintf(h->ns, sizeof(h->ns), "%s", ns);
    snprintf(h->name, sizeof(h->name), "%s", name);
    snprintf(h->uid, sizeof(h->uid), "%s", uid);
    snprintf(h->container, sizeof(h->container), "%s", container);
    snprintf(h->resource, sizeof(h->resource), "%s", resource);
    h->ids = fg_calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        h->ids[i] = fg_strdup(device_ids[i]);
    h->n = n;
}

static void holding_cleanup(struct fg__dm_holding *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->ids[i]);
    free(h->ids);
}

void fg_dm_pod_gone(struct fg_dm *dm, const char *uid)
{
    for (size_t i = 0; i < dm->nholdings;)
        if (strcmp(dm->holdings[i].uid, uid) == 0) {
            holding_cleanup(&dm->holdings[i]);
            dm->holdings[i] = dm->holdings[--dm->nholdings];
        } else {
            i++;
        }
}

void fg__dm_holdings_cleanup(struct fg_dm *dm)
{
    for (size_t i = 0; i < dm->nholdings; i++)
        holding_cleanup(&dm->holdings[i]);
    free(dm->holdings);
    dm->holdings = NULL;
    dm->nholdings = 0;
}

static void allocated(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct alloc *a = ud;
    if (status != FG_GRPC_OK) {
        finish(a, status, message, NULL);
        return;
    }
    V1beta1__AllocateResponse *r = v1beta1__allocate_response__unpack(NULL, len, resp);
    if (!r || r->n_container_responses != 1) {
        finish(a, FG_GRPC_INTERNAL, "the plugin's AllocateResponse does not answer for exactly one container", NULL);
        if (r)
            v1beta1__allocate_response__free_unpacked(r, NULL);
        return;
    }
    fg_dm_record(a->dm, a->ns, a->name, a->uid, a->container, a->resource, a->chosen, a->n);
    finish(a, FG_GRPC_OK, "", r->container_responses[0]);
    v1beta1__allocate_response__free_unpacked(r, NULL);
}

static void call_allocate(struct alloc *a)
{
    struct fg__dm_plugin *p = fg__dm_plugin_of(a->dm, a->resource);
    if (!p || !p->client) {
        finish(a, FG_GRPC_UNAVAILABLE, "the plugin went away", NULL);
        return;
    }
    V1beta1__ContainerAllocateRequest cr = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    cr.n_devices_ids = a->n;
    cr.devices_ids = (char **)a->chosen;
    V1beta1__ContainerAllocateRequest *crs[] = { &cr };
    V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
    req.n_container_requests = 1;
    req.container_requests = crs;
    if (fg_grpc_client_unary(p->client, FG_DEVICE_PLUGIN_ALLOCATE, &req.base, CALL_TIMEOUT_MS, allocated, a, NULL) !=
        FG_OK)
        finish(a, FG_GRPC_INTERNAL, "cannot call Allocate", NULL);
}

static void preferred(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct alloc *a = ud;
    if (status != FG_GRPC_OK) {   /* kube's devicesToAllocate returns the error: the admission fails */
        char why[600];
        snprintf(why, sizeof(why), "device plugin GetPreferredAllocation rpc failed with err: %s", message);
        finish(a, status, why, NULL);
        return;
    }
    V1beta1__PreferredAllocationResponse *r = v1beta1__preferred_allocation_response__unpack(NULL, len, resp);
    /* the plugin's choice when it is n of the free devices, else the first free ones (as the kubelet does) */
    bool ok = r && r->n_container_responses == 1 && r->container_responses[0]->n_device_ids == a->n;
    for (size_t i = 0; ok && i < a->n; i++) {
        ok = false;
        for (size_t j = 0; j < a->nfree && !ok; j++)
            if (strcmp(a->free_ids[j], r->container_responses[0]->device_ids[i]) == 0) {
                a->chosen[i] = a->free_ids[j];
                ok = true;
            }
    }
    if (!ok)
        for (size_t i = 0; i < a->n; i++)
            a->chosen[i] = a->free_ids[i];
    if (r)
        v1beta1__preferred_allocation_response__free_unpacked(r, NULL);
    call_allocate(a);
}

enum fg_err fg_dm_allocate(struct fg_dm *dm, const char *ns, const char *name, const char *uid, const char *container,
                           const char *resource, size_t n, fg_dm_done_fn *done, void *ud)
{
    struct fg__dm_plugin *p = fg__dm_plugin_of(dm, resource);
    if (!p || !p->streaming || !p->client)
        return FG_E_NOT_FOUND_LOCAL;
    struct alloc *a = fg_calloc(1, sizeof(*a));
    a->free_ids = fg_calloc(p->n ? p->n : 1, sizeof(char *));
    for (size_t i = 0; i < p->n; i++)
        if (p->healthy[i] && !held(dm, resource, p->ids[i]))
            a->free_ids[a->nfree++] = fg_strdup(p->ids[i]);
    if (n == 0 || a->nfree < n) {
        alloc_free(a);
        return FG_E_BUSY;
    }
    a->dm = dm;
    snprintf(a->ns, sizeof(a->ns), "%s", ns);
    snprintf(a->name, sizeof(a->name), "%s", name);
    snprintf(a->uid, sizeof(a->uid), "%s", uid);
    snprintf(a->container, sizeof(a->container), "%s", container);
    snprintf(a->resource, sizeof(a->resource), "%s", resource);
    a->n = n;
    a->chosen = fg_calloc(n, sizeof(char *));
    a->done = done;
    a->ud = ud;
    if (!p->preferred) {
        for (size_t i = 0; i < n; i++)
            a->chosen[i] = a->free_ids[i];
        call_allocate(a);
        return FG_OK;
    }
    V1beta1__ContainerPreferredAllocationRequest cr = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
    cr.n_available_device_ids = a->nfree;
    cr.available_device_ids = a->free_ids;
    cr.allocation_size = (int32_t)n;
    V1beta1__ContainerPreferredAllocationRequest *crs[] = { &cr };
    V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    req.n_container_requests = 1;
    req.container_requests = crs;
    if (fg_grpc_client_unary(p->client, FG_DEVICE_PLUGIN_GET_PREFERRED_ALLOCATION, &req.base, CALL_TIMEOUT_MS,
                             preferred, a, NULL) != FG_OK) {
        alloc_free(a);
        return FG_E_IO;
    }
    return FG_OK;
}
