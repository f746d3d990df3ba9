/*
 * devicemanager — the kubelet's device manager as the simulated kubelets (and the device plugin's
 * tests) play it, speaking the real device-plugin API v1beta1 over gRPC (nodeagent/grpc):
 *   - Registration: it serves /v1beta1.Registration/Register on <dir>/kubelet.sock. A plugin that
 *     registers (version v1beta1, a resource name, an endpoint socket in <dir>) is dialled back:
 *     GetDevicePluginOptions, then a ListAndWatch stream whose latest list is the resource's devices
 *     and their health. A second registration of a resource replaces the first (as after a plugin
 *     restart); a plugin whose stream ends loses its devices until it registers again.
 *   - Allocate, at pod admission: n free healthy devices of the resource for one container, chosen
 *     by the plugin's GetPreferredAllocation when it offers one (else the first free ones; an error
 *     from it fails the admission, as in kube's devicesToAllocate), then Allocate; on success the devices are the pod's until fg_dm_pod_gone, and the reply (env,
 *     mounts, CDI devices) is handed to the caller to apply to the container. A failed Allocate
 *     leaves nothing allocated: the kubelet fails such a pod with UnexpectedAdmissionError.
 *   - PodResources: /v1.PodResourcesLister/List on its own socket, every pod holding devices with
 *     its containers' device IDs per resource, as the kubelet's pod-resources endpoint answers.
 *   - Starting (fg_dm_new) and fg_dm_restart do what a starting kubelet does to the directory: every
 *     socket in it is removed and kubelet.sock is created afresh, so plugins must notice and register
 *     again; across fg_dm_restart allocations survive (the kubelet checkpoints them).
 *
 * Threading: everything on the thread running the event_base given to fg_dm_new; callers on other
 * threads go through that loop (e.g. fg_kube_loop_call_wait). Ownership: the manager owns its
 * servers, plugin connections and records.
 */
#ifndef FG_E2E_DEVICEMANAGER_H
#define FG_E2E_DEVICEMANAGER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "nodeagent/grpc/deviceplugin.pb-c.h"
#include "nodeagent/grpc/status.h"

struct fg_dm;

struct fg_dm_opts {
    const char *dir;                  /* the device-plugin directory (kubelet.sock and the plugins') */
    const char *pod_resources_socket; /* NULL: no PodResources service */
};

enum fg_err fg_dm_new(struct event_base *base, const struct fg_dm_opts *opts, struct fg_dm **out,
                      char *errmsg) FG_MUST_USE;
void fg_dm_free(struct fg_dm *dm);

/* The directory after a kubelet restart (see above). FG_E_IO (errmsg) when kubelet.sock cannot be made. */
enum fg_err fg_dm_restart(struct fg_dm *dm, char *errmsg) FG_MUST_USE;

/* How many Register calls were accepted so far (all resources). */
unsigned fg_dm_registrations(const struct fg_dm *dm);
/* Whether a plugin for resource is registered and streaming; *devices and *healthy (may be NULL) get
 * its device counts. */
bool fg_dm_resource(const struct fg_dm *dm, const char *resource, size_t *devices, size_t *healthy);

/* The end of an allocation: status OK with the container's reply (borrowed for the call) and the
 * device IDs chosen, or the plugin's (or the manager's own) error. */
typedef void fg_dm_done_fn(void *ud, enum fg_grpc_status status, const char *message,
                           const V1beta1__ContainerAllocateResponse *reply, const char *const *device_ids,
                           size_t n);

/* Allocates n devices of resource for container `container` of pod (ns, name, uid): done runs once,
 * never inside this call. FG_E_NOT_FOUND_LOCAL when no plugin serves the resource, FG_E_BUSY when
 * fewer than n healthy devices are free (nothing is started then; done does not run). */
enum fg_err fg_dm_allocate(struct fg_dm *dm, const char *ns, const char *name, const char *uid, const char *container,
                           const char *resource, size_t n, fg_dm_done_fn *done, void *ud) FG_MUST_USE;
/* Records that pod uid holds device_ids of resource in container, without asking the plugin (what
 * a real kubelet restores from its checkpoint; tests use it to stage what the kubelet reports). */
void fg_dm_record(struct fg_dm *dm, const char *ns, const char *name, const char *uid, const char *container,
                  const char *resource, const char *const *device_ids, size_t n);
/* The pod is gone: its devices are free again. */
void fg_dm_pod_gone(struct fg_dm *dm, const char *uid);

/* ---- from other threads: the manager runs on loop's thread ---- */

struct fg_kube_loop;

/* An allocation's outcome, for a caller that waited for it. */
struct fg_dm_result {
    enum fg_grpc_status status;
    char message[1024];
    V1beta1__ContainerAllocateResponse *reply; /* OK only; owned (fg_dm_result_cleanup) */
    char **device_ids;
    size_t n;
};

/* fg_dm_allocate through loop (whose base runs dm), waiting at most timeout_ms for the end: FG_OK with
 * *out filled (out->status says what the plugin answered), FG_E_NOT_FOUND_LOCAL / FG_E_BUSY as
 * fg_dm_allocate, FG_E_TIMEOUT. Not from loop's own thread. */
enum fg_err fg_dm_allocate_wait(struct fg_kube_loop *loop, struct fg_dm *dm, const char *ns, const char *name,
                                const char *uid, const char *container, const char *resource, size_t n,
                                unsigned timeout_ms, struct fg_dm_result *out) FG_MUST_USE;
void fg_dm_result_cleanup(struct fg_dm_result *r);
/* The value of env `name` in a reply, or NULL. */
const char *fg_dm_reply_env(const V1beta1__ContainerAllocateResponse *reply, const char *name);

#endif
