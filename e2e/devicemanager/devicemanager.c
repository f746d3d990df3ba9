/* The kubelet's device manager, played (devicemanager.h): registration, plugins, restarts. */
#include "e2e/devicemanager/devicemanager_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/mem.h"
#include "nodeagent/grpc/kubelet.h"

#define COMPONENT "devicemanager"

/* ---- plugins ---- */

static void devices_clear(struct fg__dm_plugin *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->ids[i]);
    free(p->ids);
    free(p->healthy);
    p->ids = NULL;
    p->healthy = NULL;
    p->n = 0;
}

static void plugin_free(struct fg__dm_plugin *p)
{
    if (!p)
        return;
    struct fg_grpc_client *c = p->client;
    p->client = NULL;
    p->gone = true;
    fg_grpc_client_free(c); /* the stream's done runs and finds the plugin gone */
    devices_clear(p);
    free(p);
}

struct fg__dm_plugin *fg__dm_plugin_of(const struct fg_dm *dm, const char *resource)
{
    for (size_t i = 0; i < dm->nplugins; i++)
        if (strcmp(dm->plugins[i]->resource, resource) == 0)
            return dm->plugins[i];
    return NULL;
}

static void on_devices(void *ud, const uint8_t *msg, size_t len)
{
    struct fg__dm_plugin *p = ud;
    V1beta1__ListAndWatchResponse *r = v1beta1__list_and_watch_response__unpack(NULL, len, msg);
    if (!r) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s: a ListAndWatch message that does not decode", p->resource);
        return;
    }
    devices_clear(p);
    p->ids = fg_calloc(r->n_devices ? r->n_devices : 1, sizeof(char *));
    p->healthy = fg_calloc(r->n_devices ? r->n_devices : 1, sizeof(bool));
    for (size_t i = 0; i < r->n_devices; i++) {
        p->ids[i] = fg_strdup(r->devices[i]->id);
        p->healthy[i] = strcmp(r->devices[i]->health, FG_DEVICE_HEALTHY) == 0;
    }
    p->n = r->n_devices;
    p->streaming = true;
    v1beta1__list_and_watch_response__free_unpacked(r, NULL);
}

static void watch_ended(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    (void)resp, (void)len;
    struct fg__dm_plugin *p = ud;
    if (p->gone)
        return;
    fg_log(FG_LOG_INFO, COMPONENT, "%s: ListAndWatch ended (%s%s%s): its devices are gone until it registers again",
           p->resource, fg_grpc_status_name(status), message[0] ? ": " : "", message);
    p->streaming = false;
    devices_clear(p);
}

static void got_options(void *ud, enum fg_grpc_status status, const char *message, const uint8_t *resp, size_t len)
{
    struct fg__dm_plugin *p = ud;
    if (p->gone)
        return;
    if (status != FG_GRPC_OK) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s: GetDevicePluginOptions failed: %s: %s", p->resource,
               fg_grpc_status_name(status), message);
        return;
    }
    V1beta1__DevicePluginOptions *o = v1beta1__device_plugin_options__unpack(NULL, len, resp);
    p->preferred = o && o->get_preferred_allocation_available;
    if (o)
        v1beta1__device_plugin_options__free_unpacked(o, NULL);
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    if (fg_grpc_client_stream(p->client, FG_DEVICE_PLUGIN_LIST_AND_WATCH, &empty.base, 0, on_devices, watch_ended, p,
                              NULL) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "%s: cannot start ListAndWatch", p->resource);
}

static void on_register(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud)
{
    struct fg_dm *dm = ud;
    V1beta1__RegisterRequest *r = v1beta1__register_request__unpack(NULL, len, req);
    const char *why = !r                                                  ? "not a RegisterRequest"
                      : strcmp(r->version, FG_DEVICE_PLUGIN_VERSION) != 0 ? "unsupported API version"
                      : !r->resource_name[0]                              ? "no resource name"
                      : !r->endpoint[0] || strchr(r->endpoint, '/')       ? "the endpoint must be a socket name in the "
                                                                            "device-plugin directory"
                                                                          : NULL;
    if (why) {
        fg_grpc_call_finish(call, FG_GRPC_INVALID_ARGUMENT, why);
        if (r)
            v1beta1__register_request__free_unpacked(r, NULL);
        return;
    }
    struct fg__dm_plugin *old = fg__dm_plugin_of(dm, r->resource_name);
    struct fg__dm_plugin *p = fg_calloc(1, sizeof(*p));
    snprintf(p->resource, sizeof(p->resource), "%s", r->resource_name);
    snprintf(p->endpoint, sizeof(p->endpoint), "%s/%s", dm->dir, r->endpoint);
    v1beta1__register_request__free_unpacked(r, NULL);
    if (old) {
        for (size_t i = 0; i < dm->nplugins; i++)
            if (dm->plugins[i] == old)
                dm->plugins[i] = p;
        plugin_free(old);
    } else {
        dm->plugins = fg_realloc(dm->plugins, (dm->nplugins + 1) * sizeof(*dm->plugins));
        dm->plugins[dm->nplugins++] = p;
    }
    dm->registrations++;
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    if (fg_grpc_call_reply(call, &empty.base) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "cannot answer a registration");
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_grpc_client_opts co = { .socket_path = p->endpoint };
    if (fg_grpc_client_new(dm->base, &co, &p->client, msg) != FG_OK ||
        fg_grpc_client_unary(p->client, FG_DEVICE_PLUGIN_GET_OPTIONS, &empty.base, 5000, got_options, p, NULL) != FG_OK)
        fg_log(FG_LOG_WARN, COMPONENT, "%s: cannot dial the plugin at %s: %s", p->resource, p->endpoint, msg);
}

/* ---- the manager ---- */

static enum fg_err serve_registration(struct fg_dm *dm, char *errmsg)
{
    const struct fg_grpc_method m = { FG_REGISTRATION_REGISTER, FG_GRPC_UNARY, on_register, NULL, dm };
    struct fg_grpc_server_opts so = { .socket_path = dm->kubelet_path, .methods = &m, .n_methods = 1 };
    return fg_grpc_server_new(dm->base, &so, &dm->registration, errmsg);
}

/* What a starting kubelet does to its device-plugin directory: every socket in it goes, so each
 * plugin sees its own vanish and registers again. */
static void remove_sockets(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[FG_DM_PATH_MAX + 300];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(path);
    }
    if (d)
        closedir(d);
}

enum fg_err fg_dm_new(struct event_base *base, const struct fg_dm_opts *opts, struct fg_dm **out, char *errmsg)
{
    struct fg_dm *dm = fg_calloc(1, sizeof(*dm));
    dm->base = base;
    snprintf(dm->dir, sizeof(dm->dir), "%s", opts->dir);
    snprintf(dm->kubelet_path, sizeof(dm->kubelet_path), "%s/" FG_KUBELET_SOCKET, opts->dir);
    remove_sockets(dm->dir);
    enum fg_err err = serve_registration(dm, errmsg);
    if (!err && opts->pod_resources_socket)
        err = fg__dm_serve_pod_resources(dm, opts->pod_resources_socket, errmsg);
    if (err) {
        fg_dm_free(dm);
        return err;
    }
    *out = dm;
    return FG_OK;
}

/* Frees every plugin. The table is emptied first: a call cancelled by a free ends in callbacks that
 * look plugins up by resource, and must find none of those being freed. */
static void plugins_free(struct fg_dm *dm)
{
    struct fg__dm_plugin **v = dm->plugins;
    size_t n = dm->nplugins;
    dm->plugins = NULL;
    dm->nplugins = 0;
    for (size_t i = 0; i < n; i++)
        plugin_free(v[i]);
    free(v);
}

void fg_dm_free(struct fg_dm *dm)
{
    if (!dm)
        return;
    fg_grpc_server_free(dm->registration);
    fg_grpc_server_free(dm->pod_resources);
    plugins_free(dm);
    fg__dm_holdings_cleanup(dm);
    free(dm);
}

enum fg_err fg_dm_restart(struct fg_dm *dm, char *errmsg)
{
    fg_grpc_server_free(dm->registration);
    dm->registration = NULL;
    plugins_free(dm);
    remove_sockets(dm->dir);
    return serve_registration(dm, errmsg);
}

unsigned fg_dm_registrations(const struct fg_dm *dm)
{
    return dm->registrations;
}

bool fg_dm_resource(const struct fg_dm *dm, const char *resource, size_t *devices, size_t *healthy)
{
    const struct fg__dm_plugin *p = fg__dm_plugin_of(dm, resource);
    size_t h = 0;
    for (size_t i = 0; p && i < p->n; i++)
        h += p->healthy[i];
    if (devices)
        *devices = p ? p->n : 0;
    if (healthy)
        *healthy = h;
    return p && p->streaming;
}
