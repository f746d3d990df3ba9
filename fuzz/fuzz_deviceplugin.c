/*
 * fuzz_deviceplugin — what the kubelet sends fracgpu's device plugin, from the gRPC stream to the
 * decision.
 *
 * The first byte says which message the stream carries, as the request's :path tells the server:
 * an AllocateRequest or a PreferredAllocationRequest (the kubelet calling the plugin), or a
 * ListPodResourcesResponse (the kubelet answering the plugin's audit). The other bytes are the
 * HTTP/2 DATA payload: gRPC's length-prefixed messages, fed to the message reader
 * (fg__grpc_reader_feed, module-internal) in chunks of changing sizes, as DATA frames cut them. Each
 * whole message is unpacked with the generated protobuf-c code and taken where the plugin takes it,
 * on a node with two GPUs (one unhealthy), three pods (two with grants signed by the node's key, one
 * without) and a ledger that already holds two entries: an Allocate's device IDs are checked as slots
 * of the node's GPUs (fg_dp_slot_gpu), the pod it serves is picked (fg_dp_pick_pod) and the devices
 * recorded in the ledger; a preferred allocation's IDs are read as slots; a PodResources list becomes
 * holdings, as the plugin collects them, and is audited against the ledger (fg_dp_ledger_audit).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "fuzz/fuzz.h"
#include "nodeagent/deviceplugin/admission.h"
#include "nodeagent/grpc/deviceplugin.pb-c.h"
#include "nodeagent/grpc/message_int.h"
#include "nodeagent/grpc/podresources.pb-c.h"
#include "reconcilers/podcontract.h"

#define NODE "gpu-node-1"
#define GPU1 "GPU-00000000-0000-4000-8000-000000000001"
#define GPU2 "GPU-00000000-0000-4000-8000-000000000002"
#define MAX_MESSAGE (4u << 20) /* the server's and the client's default */

static const unsigned char key[32] = "the node key of the fuzz target!";

enum stream { ALLOCATE, PREFERRED, POD_RESOURCES, STREAMS };

static struct {
    struct fg_grant_keys keys;
    struct fg_dp_gpu gpus[2];
    json_object *pods[3];
} node;

/* A pod of this node asking for a share on gpu; signed with the node's key when `signed_`. */
static json_object *make_pod(const char *name, const char *uid, int created, const char *gpu, bool signed_)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"%s\",\"creationTimestamp\":"
             "\"2026-11-26T10:00:%02dZ\",\"annotations\":{\"" FG_ANN_GPU_UUID "\":\"%s\",\"" FG_ANN_COMPUTE_MILLI
             "\":\"300\",\"" FG_ANN_MEMORY_MIB "\":\"8192\"}},\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":"
             "[{\"name\":\"main\",\"resources\":{\"limits\":{\"" FG_RES_GPU_SHARE "\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"Pending\"}}",
             name, uid, created, gpu);
    json_object *p = NULL;
    if (fg_json_parse(text, strlen(text), 0, &p, NULL) != FG_OK)
        abort();
    if (signed_) {
        struct fg_grant g = { uid, NODE, gpu, 300, 8192 };
        char v[FG_GRANT_MAX];
        if (fg_grant_sign(&g, key, sizeof key, v) != FG_OK)
            abort();
        fg_json_set_str(fg_json_get(p, "metadata", "annotations", NULL), FG_ANN_GRANT, v);
    }
    return p;
}

static void make_node(void)
{
    memcpy(node.keys.current, key, sizeof key);
    node.keys.current_len = sizeof key;
    node.gpus[0] = (struct fg_dp_gpu){ GPU1, 0, true };
    node.gpus[1] = (struct fg_dp_gpu){ GPU2, 1, false };
    node.pods[0] = make_pod("a", "uid-a", 5, GPU1, true);
    node.pods[1] = make_pod("b", "uid-b", 7, GPU2, true);
    node.pods[2] = make_pod("c", "uid-c", 3, GPU1, false);
}

struct run {
    enum stream kind;
    struct fg_dp_ledger ledger;
    struct fg_dp_node_view view;
};

/* Whether id is a slot of a GPU of this node. */
static bool known_slot(const char *id)
{
    char uuid[FG_DP_UUID_MAX];
    return fg_dp_slot_gpu(id, FG_DP_SLOTS_DEFAULT, uuid) && fg_dp_gpus_find(node.gpus, 2, uuid);
}

static void allocate(struct run *r, const uint8_t *msg, size_t len)
{
    V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(NULL, len, msg);
    if (!in)
        return;
    bool known = in->n_container_requests > 0;
    size_t nids = 0;
    for (size_t c = 0; c < in->n_container_requests && known; c++) {
        const V1beta1__ContainerAllocateRequest *cr = in->container_requests[c];
        known = cr->n_devices_ids > 0;
        for (size_t d = 0; d < cr->n_devices_ids && known; d++)
            known = known_slot(cr->devices_ids[d]);
        nids += cr->n_devices_ids;
    }
    struct fg_dp_pick pick;
    fg_dp_pick_pod(&r->view, &r->ledger, &pick);
    if (known && pick.outcome == FG_DP_PICK_GRANTED) {
        const char **ids = fg_calloc(nids ? nids : 1, sizeof *ids);
        size_t k = 0;
        for (size_t c = 0; c < in->n_container_requests; c++)
            for (size_t d = 0; d < in->container_requests[c]->n_devices_ids; d++)
                ids[k++] = in->container_requests[c]->devices_ids[d];
        fg_dp_ledger_put(&r->ledger, fg_json_get_str(pick.pod, "metadata", "namespace", NULL),
                         fg_json_get_str(pick.pod, "metadata", "name", NULL), &pick.grant, pick.mps, ids, nids);
        free(ids);
    }
    v1beta1__allocate_request__free_unpacked(in, NULL);
}

static void preferred(struct run *r, const uint8_t *msg, size_t len)
{
    V1beta1__PreferredAllocationRequest *in = v1beta1__preferred_allocation_request__unpack(NULL, len, msg);
    if (!in)
        return;
    struct fg_dp_pick pick;
    fg_dp_pick_pod(&r->view, &r->ledger, &pick);
    for (size_t c = 0; c < in->n_container_requests; c++) {
        const V1beta1__ContainerPreferredAllocationRequest *cr = in->container_requests[c];
        for (size_t i = 0; i < cr->n_available_device_ids; i++)
            (void)known_slot(cr->available_device_ids[i]);
        for (size_t i = 0; i < cr->n_must_include_device_ids; i++)
            (void)known_slot(cr->must_include_device_ids[i]);
    }
    v1beta1__preferred_allocation_request__free_unpacked(in, NULL);
}

static void audit(struct run *r, const uint8_t *msg, size_t len)
{
    V1__ListPodResourcesResponse *resp = v1__list_pod_resources_response__unpack(NULL, len, msg);
    if (!resp)
        return;
    /* every pod's fracgpu.io/gpu-share devices, as the plugin's audit reads them */
    struct fg_dp_holding *h = NULL;
    size_t nh = fg_dp_holdings_of(resp, &h);
    struct fg_dp_audit a;
    fg_dp_ledger_audit(&r->ledger, &r->view, h, nh, &a);
    fg_dp_holdings_free(h, nh);
    v1__list_pod_resources_response__free_unpacked(resp, NULL);
}

static bool on_message(void *ud, const uint8_t *msg, size_t len)
{
    struct run *r = ud;
    switch (r->kind) {
    case ALLOCATE:
        allocate(r, msg, len);
        break;
    case PREFERRED:
        preferred(r, msg, len);
        break;
    default:
        audit(r, msg, len);
        break;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!node.pods[0])
        make_node();
    if (size < 1)
        return 0;
    struct run r = { .kind = (enum stream)(data[0] % STREAMS) };
    r.view = (struct fg_dp_node_view){ NODE, node.pods, 3, &node.keys, node.gpus, 2, NULL, NULL };
    /* what the plugin already allocated: pod a on GPU1, and a pod since gone on GPU2 */
    struct fg_grant ga = { "uid-a", NODE, GPU1, 300, 8192 }, gx = { "uid-x", NODE, GPU2, 500, 1024 };
    const char *a_ids[] = { GPU1 "::0", GPU1 "::1" }, *x_ids[] = { GPU2 "::5" };
    fg_dp_ledger_put(&r.ledger, "ml", "a", &ga, false, a_ids, 2);
    fg_dp_ledger_put(&r.ledger, "ml", "x", &gx, true, x_ids, 1);

    struct fg__grpc_reader reader;
    fg__grpc_reader_init(&reader, MAX_MESSAGE);
    char why[FG_ERRMSG_MAX];
    unsigned seed = (unsigned)size * 2654435761u;
    for (size_t off = 1; off < size;) {
        seed = seed * 1103515245u + 12345u;
        size_t n = size - off, want = 1 + (seed >> 8) % 64;
        n = n < want ? n : want;
        if (fg__grpc_reader_feed(&reader, data + off, n, on_message, &r, why) != FG_GRPC_OK)
            break;
        off += n;
    }
    (void)fg__grpc_reader_end(&reader, why);
    fg__grpc_reader_cleanup(&reader);
    fg_dp_ledger_cleanup(&r.ledger);
    return 0;
}
