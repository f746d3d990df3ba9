/* devicemanager_int — the device manager's state, shared by devicemanager.c (registration, plugins),
 * allocate.c (allocations) and podresources.c (the List service). Loop thread only. */
#ifndef FG_E2E_DEVICEMANAGER_INT_H
#define FG_E2E_DEVICEMANAGER_INT_H

#include "e2e/devicemanager/devicemanager.h"
#include "nodeagent/grpc/client.h"
#include "nodeagent/grpc/server.h"

#define FG_DM_PATH_MAX 300

struct fg__dm_plugin {
    char resource[128];
    char endpoint[FG_DM_PATH_MAX + 128];
    struct fg_grpc_client *client;
    bool preferred; /* offers GetPreferredAllocation */
    bool streaming;
    bool gone;      /* being freed: callbacks do nothing */
    char **ids;     /* the latest ListAndWatch list */
    bool *healthy;
    size_t n;
};

/* What one container of one pod holds of one resource. */
struct fg__dm_holding {
    char ns[64], name[254], uid[64], container[64], resource[128];
    char **ids;
    size_t n;
};

struct fg_dm {
    struct event_base *base;
    char dir[FG_DM_PATH_MAX];
    char kubelet_path[FG_DM_PATH_MAX + 16];
    struct fg_grpc_server *registration, *pod_resources;
    struct fg__dm_plugin **plugins;
    size_t nplugins;
    unsigned registrations;
    struct fg__dm_holding *holdings;
    size_t nholdings;
};

struct fg__dm_plugin *fg__dm_plugin_of(const struct fg_dm *dm, const char *resource);
void fg__dm_holdings_cleanup(struct fg_dm *dm);
enum fg_err fg__dm_serve_pod_resources(struct fg_dm *dm, const char *socket_path, char *errmsg);

#endif
