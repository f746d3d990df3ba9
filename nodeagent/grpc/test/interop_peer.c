/* The C half of the interoperability test (test_interop.py drives it against Python's grpcio).
 *
 *   fg_grpc_interop_peer serve SOCKET   serves Allocate, ListAndWatch (three updates, then the end)
 *                                       and three test methods; prints "ready" once listening and
 *                                       "gone PATH" whenever a call's peer goes away; exits when
 *                                       its stdin closes.
 *   fg_grpc_interop_peer call SOCKET    calls the Python server's Register, ListAndWatch, Allocate,
 *                                       a refusal, an unknown method and a slow method with a
 *                                       deadline; prints one line per call, in that order.
 *
 * It only reports what it sees; the script decides what is right. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "nodeagent/grpc/client.h"
#include "nodeagent/grpc/deviceplugin.pb-c.h"
#include "nodeagent/grpc/kubelet.h"
#include "nodeagent/grpc/server.h"

#define HOLD "/fracgpu.test.Interop/Hold"
#define NEVER "/fracgpu.test.Interop/Never"
#define REFUSE "/fracgpu.test.Interop/Refuse"
#define SLOW "/fracgpu.test.Interop/Slow"
#define REFUSAL "grant for ml/llm-0 is 100% forged (%41 is not A): \xc3\xbc"

/* ---- serve ---- */

static void allocate(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)ud;
    V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(NULL, len, req);
    if (!in) {
        fg_grpc_call_finish(call, FG_GRPC_INVALID_ARGUMENT, "not an AllocateRequest");
        return;
    }
    size_t n = in->n_container_requests < 8 ? in->n_container_requests : 8;
    V1beta1__ContainerAllocateResponse cr[8], *crs[8];
    V1beta1__ContainerAllocateResponse__EnvsEntry env[8], *envs[8];
    char values[8][256];
    for (size_t i = 0; i < n; i++) {
        v1beta1__container_allocate_response__init(&cr[i]);
        v1beta1__container_allocate_response__envs_entry__init(&env[i]);
        values[i][0] = 0;
        for (size_t d = 0; d < in->container_requests[i]->n_devices_ids; d++)
            snprintf(values[i] + strlen(values[i]), sizeof(values[i]) - strlen(values[i]), "%s%s", d ? "," : "",
                     in->container_requests[i]->devices_ids[d]);
        env[i].key = "FRACGPU_DEVICES";
        env[i].value = values[i];
        envs[i] = &env[i];
        cr[i].n_envs = 1;
        cr[i].envs = &envs[i];
        crs[i] = &cr[i];
    }
    V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
    out.n_container_responses = n;
    out.container_responses = crs;
    if (fg_grpc_call_reply(call, &out.base) != FG_OK)
        printf("reply failed\n");
    v1beta1__allocate_request__free_unpacked(in, NULL);
}

static void send_devices(struct fg_grpc_call *call, size_t n)
{
    V1beta1__Device dev[4], *devs[4];
    char ids[4][16];
    for (size_t i = 0; i < n; i++) {
        v1beta1__device__init(&dev[i]);
        snprintf(ids[i], sizeof(ids[i]), "GPU-%zu", i);
        dev[i].id = ids[i];
        dev[i].health = FG_DEVICE_HEALTHY;
        devs[i] = &dev[i];
    }
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    r.n_devices = n;
    r.devices = devs;
    if (fg_grpc_call_send(call, &r.base) != FG_OK)
        printf("send failed\n");
}

static void watch(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    (void)ud;
    for (size_t n = 1; n <= 3; n++)
        send_devices(call, n);
    fg_grpc_call_finish(call, FG_GRPC_OK, NULL);
}

static void hold(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    (void)ud;
    send_devices(call, 1);
}

static void never(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)call;
    (void)req;
    (void)len;
    (void)ud;
}

static void refuse(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    (void)ud;
    fg_grpc_call_finish(call, FG_GRPC_FAILED_PRECONDITION, REFUSAL);
}

static void gone(struct fg_grpc_call *call, void *ud)
{
    (void)ud;
    printf("gone %s\n", fg_grpc_call_method(call));
    fflush(stdout);
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[64];
    if (read(fd, buf, sizeof(buf)) <= 0)
        event_base_loopbreak(arg);
}

static int serve(struct event_base *base, const char *path)
{
    const struct fg_grpc_method methods[] = {
        { FG_DEVICE_PLUGIN_ALLOCATE, FG_GRPC_UNARY, allocate, NULL, NULL },
        { FG_DEVICE_PLUGIN_LIST_AND_WATCH, FG_GRPC_SERVER_STREAM, watch, gone, NULL },
        { HOLD, FG_GRPC_SERVER_STREAM, hold, gone, NULL },
        { NEVER, FG_GRPC_UNARY, never, gone, NULL },
        { REFUSE, FG_GRPC_UNARY, refuse, NULL, NULL },
    };
    struct fg_grpc_server_opts opts = { .socket_path = path, .methods = methods, .n_methods = 5 };
    struct fg_grpc_server *s = NULL;
    char why[FG_ERRMSG_MAX] = "";
    if (fg_grpc_server_new(base, &opts, &s, why) != FG_OK) {
        fprintf(stderr, "serve: %s\n", why);
        return 1;
    }
    struct event *in = event_new(base, 0, EV_READ | EV_PERSIST, on_stdin, base);
    event_add(in, NULL);
    printf("ready\n");
    fflush(stdout);
    event_base_dispatch(base);
    event_free(in);
    fg_grpc_server_free(s);
    return 0;
}

/* ---- call ---- */

enum { REGISTER, WATCH, ALLOCATE, REFUSED, UNKNOWN, SLOWLY, N_CALLS };

struct outcome {
    const char *name;
    bool done;
    enum fg_grpc_status status;
    char message[256];
    char detail[512];
};

static struct outcome outcomes[N_CALLS] = {
    [REGISTER] = { .name = "register" }, [WATCH] = { .name = "watch" },       [ALLOCATE] = { .name = "allocate" },
    [REFUSED] = { .name = "refuse" },    [UNKNOWN] = { .name = "unknown" }, [SLOWLY] = { .name = "slow" },
};

static void done(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct outcome *o = ud;
    o->done = true;
    o->status = status;
    snprintf(o->message, sizeof(o->message), "%s", message);
    if (o == &outcomes[ALLOCATE] && status == FG_GRPC_OK) {
        V1beta1__AllocateResponse *r = v1beta1__allocate_response__unpack(NULL, len, resp);
        for (size_t i = 0; r && i < r->n_container_responses; i++)
            for (size_t e = 0; e < r->container_responses[i]->n_envs; e++)
                snprintf(o->detail + strlen(o->detail), sizeof(o->detail) - strlen(o->detail), " %s=%s",
                         r->container_responses[i]->envs[e]->key, r->container_responses[i]->envs[e]->value);
        if (!r)
            snprintf(o->detail, sizeof(o->detail), " undecodable");
        v1beta1__allocate_response__free_unpacked(r, NULL);
    }
    if (o == &outcomes[REGISTER] && status == FG_GRPC_OK)
        snprintf(o->detail, sizeof(o->detail), " response-bytes=%zu", len);
}

static void device_update(void *ud, const uint8_t *msg, size_t len)
{
    struct outcome *o = ud;
    V1beta1__ListAndWatchResponse *r = v1beta1__list_and_watch_response__unpack(NULL, len, msg);
    if (!r) {
        snprintf(o->detail + strlen(o->detail), sizeof(o->detail) - strlen(o->detail), " undecodable");
        return;
    }
    snprintf(o->detail + strlen(o->detail), sizeof(o->detail) - strlen(o->detail), " [");
    for (size_t i = 0; i < r->n_devices; i++)
        snprintf(o->detail + strlen(o->detail), sizeof(o->detail) - strlen(o->detail), "%s%s:%s", i ? "," : "",
                 r->devices[i]->id, r->devices[i]->health);
    snprintf(o->detail + strlen(o->detail), sizeof(o->detail) - strlen(o->detail), "]");
    v1beta1__list_and_watch_response__free_unpacked(r, NULL);
}

static bool all_done(void)
{
    for (int i = 0; i < N_CALLS; i++)
        if (!outcomes[i].done)
            return false;
    return true;
}

static int call(struct event_base *base, const char *path)
{
    struct fg_grpc_client_opts opts = { .socket_path = path };
    struct fg_grpc_client *c = NULL;
    if (fg_grpc_client_new(base, &opts, &c, NULL) != FG_OK)
        return 1;
    V1beta1__DevicePluginOptions options = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    options.get_preferred_allocation_available = true;
    V1beta1__RegisterRequest reg = V1BETA1__REGISTER_REQUEST__INIT;
    reg.version = FG_DEVICE_PLUGIN_VERSION;
    reg.endpoint = "fracgpu.sock";
    reg.resource_name = "fracgpu.io/gpu-share";
    reg.options = &options;
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    char *ids[] = { "GPU-a", "GPU-b" };
    V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT, *creqs[] = { &creq };
    creq.devices_ids = ids;
    creq.n_devices_ids = 2;
    V1beta1__AllocateRequest alloc = V1BETA1__ALLOCATE_REQUEST__INIT;
    alloc.container_requests = creqs;
    alloc.n_container_requests = 1;
    bool started = fg_grpc_client_unary(c, FG_REGISTRATION_REGISTER, &reg.base, 10000, done, &outcomes[REGISTER], NULL) == FG_OK &&
                   fg_grpc_client_stream(c, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 10000, device_update, done,
                                         &outcomes[WATCH], NULL) == FG_OK &&
                   fg_grpc_client_unary(c, FG_DEVICE_PLUGIN_ALLOCATE, &alloc.base, 10000, done, &outcomes[ALLOCATE], NULL) == FG_OK &&
                   fg_grpc_client_unary(c, REFUSE, &empty.base, 10000, done, &outcomes[REFUSED], NULL) == FG_OK &&
                   fg_grpc_client_unary(c, "/v1beta1.DevicePlugin/Nope", &empty.base, 10000, done, &outcomes[UNKNOWN], NULL) == FG_OK &&
                   fg_grpc_client_unary(c, SLOW, &empty.base, 300, done, &outcomes[SLOWLY], NULL) == FG_OK;
    if (!started)
        return 1;
    struct timeval slice = { 0, 10000 };
    for (int i = 0; i < 2000 && !all_done(); i++) {
        event_base_loopexit(base, &slice);
        event_base_dispatch(base);
    }
    for (int i = 0; i < N_CALLS; i++) {
        struct outcome *o = &outcomes[i];
        printf("%s %s %s%s\n", o->name, o->done ? fg_grpc_status_name(o->status) : "NOT-DONE", o->message, o->detail);
    }
    fg_grpc_client_free(c);
    return all_done() ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "serve") && strcmp(argv[1], "call"))) {
        fprintf(stderr, "usage: %s serve|call SOCKET\n", argv[0]);
        return 2;
    }
    fg_log_set_level(FG_LOG_WARN);
    struct event_base *base = event_base_new();
    int rc = !strcmp(argv[1], "serve") ? serve(base, argv[2]) : call(base, argv[2]);
    event_base_free(base);
    return rc;
}
