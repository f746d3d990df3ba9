/* The gRPC server and client against each other on one loop, over a unix socket in a temporary
 * directory, with the device plugin's messages: a unary Allocate answered at once or later, a
 * ListAndWatch stream sent to later and finished, a stream whose peer stops reading (send refuses
 * past the cap), streams whose client cancels or disconnects — also from inside its own message
 * callback — (the server hears it), a server
 * that goes away under an open stream, unknown methods, error statuses with text that needs
 * escaping, deadlines kept by the client and by the server, requests over the size limit either
 * way, a peer that does not speak HTTP/2, hand-built requests that are cut short, compressed, carry
 * two messages or the wrong content-type, a peer that hangs up mid-response, a socket nobody
 * listens on, and the socket file's mode and stale-file handling. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/log.h"
#include "nodeagent/grpc/client.h"
#include "nodeagent/grpc/deviceplugin.pb-c.h"
#include "nodeagent/grpc/kubelet.h"
#include "nodeagent/grpc/server.h"
#include "raw_h2.h"

#define NEVER "/test.Slow/Never"
#define REFUSE "/test.Grant/Refuse"
#define HUGE_REPLY "/test.Big/Reply"
#define HOLD_STREAM "/test.Big/Stream"
#define REFUSAL "grant for ml/llm-0 is 100% forged: \xc3\xbc\nsee events"
#define BIG (5u * 1024 * 1024)

struct fixture {
    char dir[64];
    char sock[128];
    struct event_base *base;
    struct fg_grpc_server *server;
    struct fg_grpc_call *watcher;      /* the open ListAndWatch */
    struct fg_grpc_call *never;        /* the call Never holds */
    struct fg_grpc_call *held_stream;  /* the call Stream holds */
    int gone;
    struct fg_grpc_call *last_gone;
};

struct result {
    bool done;
    enum fg_grpc_status status;
    char message[600];
    V1beta1__AllocateResponse *allocated;
    size_t resp_len;
    int messages;
    size_t last_devices;
    char last_health[16];
};

/* Runs the loop in short slices until cond holds or ms pass; the caller then asserts cond. */
#define RUN_UNTIL(f, cond, ms)                                                                                  \
    for (uint64_t end_ = fg_clock_real_ns() + (uint64_t)(ms) * FG_NS_PER_MS; !(cond) && fg_clock_real_ns() < end_;) \
    run_slice((f)->base)

static void run_slice(struct event_base *base)
{
    struct timeval slice = { 0, 5000 };
    event_base_loopexit(base, &slice);
    event_base_dispatch(base);
}

/* ---- the server's methods ---- */

static char *joined(char **ids, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(ids[i]) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, ",");
        strcat(s, ids[i]);
    }
    return s;
}

/* Allocate: for each container, its devices in an env and as CDI names. */
static void allocate(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)ud;
    V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(NULL, len, req);
    if (!in) {
        fg_grpc_call_finish(call, FG_GRPC_INVALID_ARGUMENT, "not an AllocateRequest");
        return;
    }
    size_t n = in->n_container_requests;
    V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
    V1beta1__ContainerAllocateResponse cr[4], *crs[4];
    V1beta1__ContainerAllocateResponse__EnvsEntry env[4], *envs[4];
    V1beta1__CDIDevice cdi[4][4], *cdis[4][4];
    char names[4][4][64];
    assert_true(n <= 4);
    for (size_t i = 0; i < n; i++) {
        V1beta1__ContainerAllocateRequest *r = in->container_requests[i];
        v1beta1__container_allocate_response__init(&cr[i]);
        v1beta1__container_allocate_response__envs_entry__init(&env[i]);
        env[i].key = "FRACGPU_DEVICES";
        env[i].value = joined(r->devices_ids, r->n_devices_ids);
        envs[i] = &env[i];
        cr[i].n_envs = 1;
        cr[i].envs = &envs[i];
        assert_true(r->n_devices_ids <= 4);
        for (size_t d = 0; d < r->n_devices_ids; d++) {
            v1beta1__cdidevice__init(&cdi[i][d]);
            snprintf(names[i][d], sizeof(names[i][d]), "nvidia.com/gpu=%s", r->devices_ids[d]);
            cdi[i][d].name = names[i][d];
            cdis[i][d] = &cdi[i][d];
        }
        cr[i].n_cdi_devices = r->n_devices_ids;
        cr[i].cdi_devices = cdis[i];
        crs[i] = &cr[i];
    }
    out.n_container_responses = n;
    out.container_responses = crs;
    assert_int_equal(fg_grpc_call_reply(call, &out.base), FG_OK);
    for (size_t i = 0; i < n; i++)
        free(env[i].value);
    v1beta1__allocate_request__free_unpacked(in, NULL);
}

static void send_devices(struct fg_grpc_call *call, size_t n, const char *health)
{
    V1beta1__Device dev[4], *devs[4];
    char ids[4][16];
    for (size_t i = 0; i < n; i++) {
        v1beta1__device__init(&dev[i]);
        snprintf(ids[i], sizeof(ids[i]), "GPU-%zu", i);
        dev[i].id = ids[i];
        dev[i].health = (char *)health;
        devs[i] = &dev[i];
    }
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    r.n_devices = n;
    r.devices = devs;
    assert_int_equal(fg_grpc_call_send(call, &r.base), FG_OK);
}

/* ListAndWatch: the devices at once, then whatever the test sends later. */
static void watch(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    struct fixture *f = ud;
    V1beta1__Empty *empty = v1beta1__empty__unpack(NULL, len, req);
    assert_non_null(empty);
    v1beta1__empty__free_unpacked(empty, NULL);
    assert_string_equal(fg_grpc_call_method(call), FG_DEVICE_PLUGIN_LIST_AND_WATCH);
    f->watcher = call;
    send_devices(call, 1, FG_DEVICE_HEALTHY);
}

static void never(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    ((struct fixture *)ud)->never = call;
}

static void refuse(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    (void)ud;
    fg_grpc_call_finish(call, FG_GRPC_FAILED_PRECONDITION, REFUSAL);
}

static void huge_reply(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    (void)ud;
    V1beta1__CDIDevice big = V1BETA1__CDIDEVICE__INIT;
    big.name = malloc(BIG + 1);
    memset(big.name, 'x', BIG);
    big.name[BIG] = 0;
    assert_int_equal(fg_grpc_call_reply(call, &big.base), FG_OK);
    free(big.name);
}

static void hold_stream(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    (void)req;
    (void)len;
    ((struct fixture *)ud)->held_stream = call;
}

static void gone(struct fg_grpc_call *call, void *ud)
{
    struct fixture *f = ud;
    f->gone++;
    f->last_gone = call;
    if (call == f->watcher)
        f->watcher = NULL;
    if (call == f->never)
        f->never = NULL;
    if (call == f->held_stream)
        f->held_stream = NULL;
}

static enum fg_err start_server(struct fixture *f, unsigned mode)
{
    const struct fg_grpc_method methods[] = {
        { FG_DEVICE_PLUGIN_ALLOCATE, FG_GRPC_UNARY, allocate, NULL, f },
        { FG_DEVICE_PLUGIN_LIST_AND_WATCH, FG_GRPC_SERVER_STREAM, watch, gone, f },
        { NEVER, FG_GRPC_UNARY, never, gone, f },
        { REFUSE, FG_GRPC_UNARY, refuse, NULL, f },
        { HUGE_REPLY, FG_GRPC_UNARY, huge_reply, NULL, f },
        { HOLD_STREAM, FG_GRPC_SERVER_STREAM, hold_stream, gone, f },
    };
    struct fg_grpc_server_opts opts = { .socket_path = f->sock, .mode = mode, .methods = methods, .n_methods = 6 };
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_grpc_server_new(f->base, &opts, &f->server, why);
    if (err != FG_OK)
        print_message("server: %s\n", why);
    return err;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/fg-grpc-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->sock, sizeof(f->sock), "%s/plugin.sock", f->dir);
    f->base = event_base_new();
    assert_int_equal(start_server(f, 0), FG_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fg_grpc_server_free(f->server);
    event_base_free(f->base);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* ---- the client's side ---- */

static void on_done(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct result *r = ud;
    assert_false(r->done);
    r->done = true;
    r->status = status;
    snprintf(r->message, sizeof(r->message), "%s", message);
    r->resp_len = len;
    if (status == FG_GRPC_OK && resp) {
        r->allocated = v1beta1__allocate_response__unpack(NULL, len, resp);
    }
}

static void on_devices(void *ud, const uint8_t *msg, size_t len)
{
    struct result *r = ud;
    V1beta1__ListAndWatchResponse *w = v1beta1__list_and_watch_response__unpack(NULL, len, msg);
    assert_non_null(w);
    r->messages++;
    r->last_devices = w->n_devices;
    snprintf(r->last_health, sizeof(r->last_health), "%s", w->n_devices ? w->devices[0]->health : "");
    v1beta1__list_and_watch_response__free_unpacked(w, NULL);
}

static struct fg_grpc_client *dial(struct fixture *f, const char *path)
{
    struct fg_grpc_client_opts opts = { .socket_path = path };
    struct fg_grpc_client *c = NULL;
    assert_int_equal(fg_grpc_client_new(f->base, &opts, &c, NULL), FG_OK);
    return c;
}

static void allocate_call(struct fg_grpc_client *c, char *const *ids, size_t n, struct result *r)
{
    V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT, *creqs[1] = { &creq };
    creq.devices_ids = (char **)ids;
    creq.n_devices_ids = n;
    V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
    req.container_requests = creqs;
    req.n_container_requests = 1;
    assert_int_equal(fg_grpc_client_unary(c, FG_DEVICE_PLUGIN_ALLOCATE, &req.base, 5000, on_done, r, NULL), FG_OK);
    assert_false(r->done); /* never inside the call that starts it */
}

static void empty_call(struct fg_grpc_client *c, const char *path, uint64_t timeout_ms, struct result *r)
{
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    assert_int_equal(fg_grpc_client_unary(c, path, &empty.base, timeout_ms, on_done, r, NULL), FG_OK);
    assert_false(r->done);
}

static int count_done(const struct result *r, int n)
{
    int done = 0;
    for (int i = 0; i < n; i++)
        done += r[i].done;
    return done;
}

/* ---- the tests ---- */

static void unary_round_trip(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    char *const ids[] = { "GPU-a", "GPU-b" };
    struct result r = { 0 };
    allocate_call(c, ids, 2, &r);
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_OK);
    assert_non_null(r.allocated);
    assert_int_equal(r.allocated->n_container_responses, 1);
    V1beta1__ContainerAllocateResponse *cr = r.allocated->container_responses[0];
    assert_int_equal(cr->n_envs, 1);
    assert_string_equal(cr->envs[0]->key, "FRACGPU_DEVICES");
    assert_string_equal(cr->envs[0]->value, "GPU-a,GPU-b");
    assert_int_equal(cr->n_cdi_devices, 2);
    assert_string_equal(cr->cdi_devices[1]->name, "nvidia.com/gpu=GPU-b");
    v1beta1__allocate_response__free_unpacked(r.allocated, NULL);

    /* many calls at once on the one connection, each answered with its own devices */
    enum { N = 40 };
    struct result many[N];
    char idbuf[N][16];
    memset(many, 0, sizeof(many));
    for (int i = 0; i < N; i++) {
        snprintf(idbuf[i], sizeof(idbuf[i]), "GPU-%d", i);
        char *const one[] = { idbuf[i] };
        allocate_call(c, one, 1, &many[i]);
    }
    RUN_UNTIL(f, count_done(many, N) == N, 10000);
    assert_int_equal(count_done(many, N), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(many[i].status, FG_GRPC_OK);
        assert_string_equal(many[i].allocated->container_responses[0]->envs[0]->value, idbuf[i]);
        v1beta1__allocate_response__free_unpacked(many[i].allocated, NULL);
    }
    fg_grpc_client_free(c);
}

static void stream_sends_then_finishes(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    assert_int_equal(fg_grpc_client_stream(c, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 0, on_devices, on_done,
                                           &r, NULL),
                     FG_OK);
    RUN_UNTIL(f, r.messages == 1, 5000);
    assert_true(r.messages == 1);
    assert_int_equal(r.last_devices, 1);
    assert_string_equal(r.last_health, FG_DEVICE_HEALTHY);
    /* later, from outside any handler: the GPUs change */
    send_devices(f->watcher, 1, FG_DEVICE_UNHEALTHY);
    RUN_UNTIL(f, r.messages == 2, 5000);
    assert_true(r.messages == 2);
    assert_string_equal(r.last_health, FG_DEVICE_UNHEALTHY);
    send_devices(f->watcher, 3, FG_DEVICE_HEALTHY);
    send_devices(f->watcher, 2, FG_DEVICE_HEALTHY);
    RUN_UNTIL(f, r.messages == 4, 5000);
    assert_true(r.messages == 4);
    assert_int_equal(r.last_devices, 2); /* in order */
    assert_false(r.done);
    fg_grpc_call_finish(f->watcher, FG_GRPC_OK, NULL);
    f->watcher = NULL;
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_OK);
    assert_int_equal(r.resp_len, 0);
    assert_int_equal(f->gone, 0); /* finished, not gone */
    fg_grpc_client_free(c);
}

static void unary_answered_later(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    empty_call(c, NEVER, 5000, &r);
    RUN_UNTIL(f, f->never != NULL, 5000);
    assert_non_null(f->never);
    RUN_UNTIL(f, false, 50);
    assert_false(r.done);
    /* answered from outside the handler, as after a PodResources check */
    V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
    assert_int_equal(fg_grpc_call_reply(f->never, &out.base), FG_OK);
    f->never = NULL;
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_OK);
    assert_non_null(r.allocated);
    assert_int_equal(r.allocated->n_container_responses, 0);
    v1beta1__allocate_response__free_unpacked(r.allocated, NULL);
    assert_int_equal(f->gone, 0);
    fg_grpc_client_free(c);
}

static void count_message(void *ud, const uint8_t *msg, size_t len)
{
    (void)msg;
    (void)len;
    ((struct result *)ud)->messages++;
}

static void stream_refuses_what_a_stalled_peer_would_pile_up(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    assert_int_equal(fg_grpc_client_stream(c, HOLD_STREAM, &empty.base, 0, count_message, on_done, &r, NULL), FG_OK);
    RUN_UNTIL(f, f->held_stream != NULL, 5000);
    assert_non_null(f->held_stream);
    V1beta1__CDIDevice mib = V1BETA1__CDIDEVICE__INIT;
    mib.name = malloc(1u << 20);
    memset(mib.name, 'm', (1u << 20) - 1);
    mib.name[(1u << 20) - 1] = 0;
    /* the loop does not run, so nothing leaves: 15 MiB and a bit wait, the 16th MiB would pass the cap */
    for (int i = 0; i < 15; i++)
        assert_int_equal(fg_grpc_call_send(f->held_stream, &mib.base), FG_OK);
    assert_int_equal(fg_grpc_call_send(f->held_stream, &mib.base), FG_E_BUSY);
    RUN_UNTIL(f, r.messages == 15, 10000);
    assert_int_equal(r.messages, 15); /* nothing was lost or duplicated */
    assert_int_equal(fg_grpc_call_send(f->held_stream, &mib.base), FG_OK); /* drained: room again */
    fg_grpc_call_finish(f->held_stream, FG_GRPC_OK, NULL);
    f->held_stream = NULL;
    RUN_UNTIL(f, r.done, 10000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_OK);
    assert_int_equal(r.messages, 16);
    free(mib.name);
    fg_grpc_client_free(c);
}

struct inside {
    struct fg_grpc_client *client;
    struct fg_grpc_client_call *call;
    bool free_client; /* else cancel the call */
    int messages;
    bool done;
    enum fg_grpc_status status;
};

static void drop_inside_message(void *ud, const uint8_t *msg, size_t len)
{
    (void)msg;
    (void)len;
    struct inside *in = ud;
    in->messages++;
    if (in->free_client) {
        fg_grpc_client_free(in->client);
        in->client = NULL;
    } else {
        fg_grpc_client_call_cancel(in->call);
    }
}

static void inside_done(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    (void)message;
    (void)resp;
    (void)len;
    struct inside *in = ud;
    assert_false(in->done);
    in->done = true;
    in->status = status;
}

static void dropped_from_inside_a_message_callback(void **state)
{
    struct fixture *f = *state;
    for (int free_client = 0; free_client <= 1; free_client++) {
        struct inside in = { .client = dial(f, f->sock), .free_client = free_client };
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        assert_int_equal(fg_grpc_client_stream(in.client, HOLD_STREAM, &empty.base, 0, drop_inside_message,
                                               inside_done, &in, &in.call),
                         FG_OK);
        RUN_UNTIL(f, f->held_stream != NULL, 5000);
        assert_non_null(f->held_stream);
        /* two messages queued together, so they arrive together: the second must not reach a call
         * that the first one's callback dropped */
        V1beta1__CDIDevice dev = V1BETA1__CDIDEVICE__INIT;
        dev.name = "nvidia.com/gpu=GPU-0";
        assert_int_equal(fg_grpc_call_send(f->held_stream, &dev.base), FG_OK);
        assert_int_equal(fg_grpc_call_send(f->held_stream, &dev.base), FG_OK);
        RUN_UNTIL(f, f->gone == free_client + 1, 5000);
        assert_int_equal(f->gone, free_client + 1);
        assert_int_equal(in.messages, 1);
        if (free_client) {
            assert_true(in.done); /* freeing the client ends its calls: CANCELLED */
            assert_int_equal(in.status, FG_GRPC_CANCELLED);
            assert_null(in.client);
        } else {
            assert_false(in.done); /* a cancelled call calls nothing back */
            fg_grpc_client_free(in.client);
        }
    }
}

static void stream_cancelled_by_client_is_gone(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    struct fg_grpc_client_call *call = NULL;
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    assert_int_equal(fg_grpc_client_stream(c, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 0, on_devices, on_done,
                                           &r, &call),
                     FG_OK);
    RUN_UNTIL(f, r.messages == 1, 5000);
    assert_true(r.messages == 1);
    struct fg_grpc_call *held = f->watcher;
    fg_grpc_client_call_cancel(call);
    RUN_UNTIL(f, f->gone == 1, 5000);
    assert_true(f->gone == 1);
    assert_ptr_equal(f->last_gone, held);
    assert_null(f->watcher);
    assert_false(r.done); /* a cancelled call calls nothing back */
    /* the connection still serves */
    char *const ids[] = { "GPU-z" };
    struct result a = { 0 };
    allocate_call(c, ids, 1, &a);
    RUN_UNTIL(f, a.done, 5000);
    assert_true(a.done);
    assert_int_equal(a.status, FG_GRPC_OK);
    v1beta1__allocate_response__free_unpacked(a.allocated, NULL);
    fg_grpc_client_free(c);
}

static void stream_whose_client_disconnects_is_gone(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    assert_int_equal(fg_grpc_client_stream(c, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 0, on_devices, on_done,
                                           &r, NULL),
                     FG_OK);
    RUN_UNTIL(f, r.messages == 1, 5000);
    assert_true(r.messages == 1);
    fg_grpc_client_free(c);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_CANCELLED);
    RUN_UNTIL(f, f->gone == 1, 5000);
    assert_true(f->gone == 1);
    assert_null(f->watcher);
}

static void server_going_away_ends_open_streams(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    assert_int_equal(fg_grpc_client_stream(c, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 0, on_devices, on_done,
                                           &r, NULL),
                     FG_OK);
    RUN_UNTIL(f, r.messages == 1, 5000);
    assert_true(r.messages == 1);
    fg_grpc_server_free(f->server);
    f->server = NULL;
    assert_int_equal(f->gone, 1); /* the handler heard it before free returned */
    struct stat st;
    assert_int_not_equal(lstat(f->sock, &st), 0); /* the socket file went with it */
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_UNAVAILABLE);
    assert_non_null(strstr(r.message, "closed by the server"));
    /* and a call made afterwards on that client fails the same way, later */
    struct result late = { 0 };
    empty_call(c, NEVER, 0, &late);
    RUN_UNTIL(f, late.done, 5000);
    assert_true(late.done);
    assert_int_equal(late.status, FG_GRPC_UNAVAILABLE);
    fg_grpc_client_free(c);
}

static void unknown_method_is_unimplemented(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    empty_call(c, "/v1beta1.DevicePlugin/NoSuchThing", 0, &r);
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_UNIMPLEMENTED);
    assert_non_null(strstr(r.message, "/v1beta1.DevicePlugin/NoSuchThing"));
    fg_grpc_client_free(c);
}

static void error_status_carries_its_text(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    empty_call(c, REFUSE, 0, &r);
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_FAILED_PRECONDITION);
    assert_string_equal(r.message, REFUSAL);
    assert_null(r.allocated);
    fg_grpc_client_free(c);
}

static void deadline_on_a_handler_that_never_answers(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    uint64_t start = fg_clock_real_ns();
    empty_call(c, NEVER, 300, &r);
    RUN_UNTIL(f, f->never != NULL, 5000);
    assert_true(f->never != NULL);
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    uint64_t took_ms = (fg_clock_real_ns() - start) / FG_NS_PER_MS;
    assert_int_equal(r.status, FG_GRPC_DEADLINE_EXCEEDED);
    assert_in_range(took_ms, 290, 3000);
    RUN_UNTIL(f, f->gone == 1, 5000);
    assert_true(f->gone == 1);
    assert_null(f->never);
    fg_grpc_client_free(c);
}

static void server_keeps_grpc_timeout_itself(void **state)
{
    struct fixture *f = *state;
    /* a peer that states a deadline but never cancels: the server ends the call on its own */
    static const uint8_t empty_msg[] = { 0, 0, 0, 0, 0 };
    struct raw_exchange x = { .socket_path = f->sock, .path = NEVER, .content_type = "application/grpc",
                              .extra_name = "grpc-timeout", .extra_value = "200m",
                              .body = empty_msg, .body_len = sizeof(empty_msg) };
    raw_start(&x);
    RUN_UNTIL(f, atomic_load(&x.done), 8000);
    assert_true(atomic_load(&x.done));
    raw_join(&x);
    assert_string_equal(x.error, "");
    assert_int_equal(x.grpc_status, FG_GRPC_DEADLINE_EXCEEDED);
    assert_int_equal(f->gone, 1);
    assert_null(f->never);
}

static void oversized_request_is_resource_exhausted(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    char *big = malloc(BIG + 1);
    memset(big, 'g', BIG);
    big[BIG] = 0;
    char *const ids[] = { big };
    struct result r = { 0 };
    allocate_call(c, ids, 1, &r);
    RUN_UNTIL(f, r.done, 10000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(r.message, "exceeds the limit of 4194304 bytes"));
    free(big);
    /* the connection is fine afterwards */
    char *const small[] = { "GPU-0" };
    struct result ok = { 0 };
    allocate_call(c, small, 1, &ok);
    RUN_UNTIL(f, ok.done, 5000);
    assert_true(ok.done);
    assert_int_equal(ok.status, FG_GRPC_OK);
    v1beta1__allocate_response__free_unpacked(ok.allocated, NULL);
    fg_grpc_client_free(c);
}

static void oversized_response_is_resource_exhausted(void **state)
{
    struct fixture *f = *state;
    struct fg_grpc_client *c = dial(f, f->sock);
    struct result r = { 0 };
    empty_call(c, HUGE_REPLY, 0, &r);
    RUN_UNTIL(f, r.done, 10000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_RESOURCE_EXHAUSTED);
    fg_grpc_client_free(c);
}

struct log_capture {
    char text[8192];
};

static void capture(void *ud, const char *line, unsigned long len)
{
    struct log_capture *l = ud;
    size_t have = strlen(l->text);
    if (have + len < sizeof(l->text))
        memcpy(l->text + have, line, len + 1);
}

static void garbage_peer_is_dropped_and_others_served(void **state)
{
    struct fixture *f = *state;
    struct log_capture log = { "" };
    fg_log_set_level(FG_LOG_WARN);
    fg_log_set_sink(capture, &log);
    struct raw_exchange x = { .socket_path = f->sock,
                              .garbage = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n" };
    raw_start(&x);
    RUN_UNTIL(f, atomic_load(&x.done), 8000);
    bool done = atomic_load(&x.done);
    fg_log_set_sink(NULL, NULL);
    fg_log_set_level(FG_LOG_ERROR);
    assert_true(done);
    raw_join(&x);
    assert_string_equal(x.error, "");
    assert_true(x.closed_by_server);
    assert_non_null(strstr(log.text, "does not speak HTTP/2"));
    /* the next client is served */
    struct fg_grpc_client *c = dial(f, f->sock);
    char *const ids[] = { "GPU-1" };
    struct result r = { 0 };
    allocate_call(c, ids, 1, &r);
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_OK);
    v1beta1__allocate_response__free_unpacked(r.allocated, NULL);
    fg_grpc_client_free(c);
}

static struct raw_exchange raw_request(struct fixture *f, const char *content_type, const uint8_t *body, size_t len)
{
    struct raw_exchange x = { .socket_path = f->sock, .path = FG_DEVICE_PLUGIN_ALLOCATE,
                              .content_type = content_type, .body = body, .body_len = len };
    raw_start(&x);
    RUN_UNTIL(f, atomic_load(&x.done), 8000);
    assert_true(atomic_load(&x.done));
    raw_join(&x);
    assert_string_equal(x.error, "");
    return x;
}

static void truncated_request_is_internal(void **state)
{
    struct fixture *f = *state;
    static const uint8_t cut[] = { 0, 0, 0, 0, 16, 0x0a, 3, 0x0a }; /* 16 bytes declared, 3 sent, then END_STREAM */
    struct raw_exchange x = raw_request(f, "application/grpc", cut, sizeof(cut));
    assert_int_equal(x.http_status, 200);
    assert_int_equal(x.grpc_status, FG_GRPC_INTERNAL);
    assert_non_null(strstr(x.grpc_message, "ended inside a message: 3 of its 16 bytes"));
}

static void compressed_request_is_unimplemented(void **state)
{
    struct fixture *f = *state;
    static const uint8_t zipped[] = { 1, 0, 0, 0, 2, 0x1f, 0x8b };
    struct raw_exchange x = raw_request(f, "application/grpc", zipped, sizeof(zipped));
    assert_int_equal(x.grpc_status, FG_GRPC_UNIMPLEMENTED);
    assert_non_null(strstr(x.grpc_message, "compress"));
}

static void two_request_messages_are_internal(void **state)
{
    struct fixture *f = *state;
    static const uint8_t two[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    struct raw_exchange x = raw_request(f, "application/grpc+proto", two, sizeof(two));
    assert_int_equal(x.grpc_status, FG_GRPC_INTERNAL);
    assert_non_null(strstr(x.grpc_message, "carried 2"));
    static const uint8_t none[] = { 0 };
    x = raw_request(f, "application/grpc", none, 0);
    assert_int_equal(x.grpc_status, FG_GRPC_INTERNAL);
    assert_non_null(strstr(x.grpc_message, "carried 0"));
}

static void wrong_content_type_is_415(void **state)
{
    struct fixture *f = *state;
    static const uint8_t msg[] = { 0, 0, 0, 0, 0 };
    struct raw_exchange x = raw_request(f, "application/json", msg, sizeof(msg));
    assert_int_equal(x.http_status, 415);
    assert_non_null(strstr(x.grpc_message, "application/json"));
}

struct dialed {
    struct result r;
    struct fg_grpc_client *c;
};

static void peer_hanging_up_mid_response_is_survived(void **state)
{
    struct fixture *f = *state;
    struct sigaction sa;
    assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
    assert_ptr_equal(sa.sa_handler, SIG_IGN); /* set by the first server: a write to a gone peer is EPIPE */
    /* asks for a 5 MiB answer and hangs up at once, several times over */
    static const uint8_t empty_msg[] = { 0, 0, 0, 0, 0 };
    for (int i = 0; i < 5; i++) {
        struct raw_exchange x = { .socket_path = f->sock, .path = HUGE_REPLY, .content_type = "application/grpc",
                                  .body = empty_msg, .body_len = sizeof(empty_msg), .hang_up = true };
        raw_start(&x);
        RUN_UNTIL(f, atomic_load(&x.done), 8000);
        raw_join(&x);
        RUN_UNTIL(f, false, 50); /* the server writes into the closed socket */
    }
    struct fg_grpc_client *c = dial(f, f->sock);
    char *const ids[] = { "GPU-1" };
    struct result r = { 0 };
    allocate_call(c, ids, 1, &r);
    RUN_UNTIL(f, r.done, 5000);
    assert_true(r.done);
    assert_int_equal(r.status, FG_GRPC_OK);
    v1beta1__allocate_response__free_unpacked(r.allocated, NULL);
    fg_grpc_client_free(c);
}

static void free_in_callback(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct dialed *d = ud;
    on_done(&d->r, status, message, resp, len);
    fg_grpc_client_free(d->c); /* the documented way to drop a dead connection */
    d->c = NULL;
}

static void nobody_listening_is_unavailable(void **state)
{
    struct fixture *f = *state;
    /* a socket file that is bound but not listening, and a path with no file at all */
    char dead[100], missing[100];
    snprintf(dead, sizeof(dead), "%.60s/dead.sock", f->dir);
    snprintf(missing, sizeof(missing), "%.60s/missing.sock", f->dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dead);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    const char *paths[] = { dead, missing };
    const char *why[] = { "Connection refused", "No such file or directory" };
    for (int i = 0; i < 2; i++) {
        struct dialed slot = { { 0 }, dial(f, paths[i]) };
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        assert_int_equal(fg_grpc_client_unary(slot.c, REFUSE, &empty.base, 1000, free_in_callback, &slot, NULL), FG_OK);
        assert_false(slot.r.done);
        RUN_UNTIL(f, slot.r.done, 5000);
        assert_true(slot.r.done);
        assert_int_equal(slot.r.status, FG_GRPC_UNAVAILABLE);
        assert_non_null(strstr(slot.r.message, why[i]));
        assert_null(slot.c);
    }
    close(fd);
}

static void socket_file_mode_and_stale_files(void **state)
{
    struct fixture *f = *state;
    struct stat st;
    assert_int_equal(lstat(f->sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    /* a new server over the file of one that is gone (the kubelet restarting a plugin) */
    char stale[100];
    snprintf(stale, sizeof(stale), "%.60s/stale.sock", f->dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", stale);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    struct fg_grpc_server *s = NULL;
    const struct fg_grpc_method m = { NEVER, FG_GRPC_UNARY, never, gone, f };
    struct fg_grpc_server_opts opts = { .socket_path = stale, .mode = 0660, .methods = &m, .n_methods = 1 };
    char why[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_grpc_server_new(f->base, &opts, &s, why), FG_OK);
    assert_int_equal(lstat(stale, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0660);
    fg_grpc_server_free(s);
    assert_int_not_equal(lstat(stale, &st), 0);
    /* a regular file is never removed */
    char plain[160];
    snprintf(plain, sizeof(plain), "%s/not-a-socket", f->dir);
    FILE *fp = fopen(plain, "w");
    fputs("keep me", fp);
    fclose(fp);
    opts.socket_path = plain;
    assert_int_equal(fg_grpc_server_new(f->base, &opts, &s, why), FG_E_IO);
    assert_null(s);
    assert_non_null(strstr(why, "not a socket"));
    assert_int_equal(lstat(plain, &st), 0);
    /* bad method tables */
    const struct fg_grpc_method twice[] = { m, m };
    opts.socket_path = stale;
    opts.methods = twice;
    opts.n_methods = 2;
    assert_int_equal(fg_grpc_server_new(f->base, &opts, &s, why), FG_E_INVAL);
    assert_non_null(strstr(why, "twice"));
}

int main(void)
{
    fg_log_set_level(FG_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(unary_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(stream_sends_then_finishes, setup, teardown),
        cmocka_unit_test_setup_teardown(unary_answered_later, setup, teardown),
        cmocka_unit_test_setup_teardown(stream_refuses_what_a_stalled_peer_would_pile_up, setup, teardown),
        cmocka_unit_test_setup_teardown(dropped_from_inside_a_message_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(stream_cancelled_by_client_is_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(stream_whose_client_disconnects_is_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(server_going_away_ends_open_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_method_is_unimplemented, setup, teardown),
        cmocka_unit_test_setup_teardown(error_status_carries_its_text, setup, teardown),
        cmocka_unit_test_setup_teardown(deadline_on_a_handler_that_never_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(server_keeps_grpc_timeout_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(oversized_request_is_resource_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(oversized_response_is_resource_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(garbage_peer_is_dropped_and_others_served, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_request_is_internal, setup, teardown),
        cmocka_unit_test_setup_teardown(compressed_request_is_unimplemented, setup, teardown),
        cmocka_unit_test_setup_teardown(two_request_messages_are_internal, setup, teardown),
        cmocka_unit_test_setup_teardown(wrong_content_type_is_415, setup, teardown),
        cmocka_unit_test_setup_teardown(peer_hanging_up_mid_response_is_survived, setup, teardown),
        cmocka_unit_test_setup_teardown(nobody_listening_is_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(socket_file_mode_and_stale_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
