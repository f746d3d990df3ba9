/*
 * resources — amounts of named resources (a Kubernetes ResourceList) and what a pod requests.
 *
 * A `struct fg_resources` is a small fixed array of (name, milli-units) pairs (quantity.h): cpu in
 * millicores, memory in thousandths of a byte, and every other resource — pods, ephemeral-storage,
 * nvidia.com/gpu, fracgpu.io/gpu-share — in thousandths of a unit, so that one arithmetic adds,
 * compares and fits them all. It lives on the stack or inside another struct; nothing to free.
 *
 * fg_pod_requests computes what the scheduler and the kubelet charge a pod, as kube's PodRequests
 * does: the sum over the containers, restartable init containers (sidecars) added to it, the
 * largest of that and each ordinary init container's request (plus the sidecars started before
 * it), plus the pod's overhead. A container that sets a limit but no request for a resource
 * requests its limit, as kube-apiserver's defaulting makes it.
 */
#ifndef FG_KUBE_RESOURCES_H
#define FG_KUBE_RESOURCES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define FG_RESOURCES_MAX 16
#define FG_RESOURCE_NAME_MAX 64

struct fg_resource_amount {
    char name[FG_RESOURCE_NAME_MAX];
    int64_t milli;
};

struct fg_resources {
    size_t n;
    struct fg_resource_amount v[FG_RESOURCES_MAX];
};

/* The amount of `name` (0 when absent). */
int64_t fg_resources_get(const struct fg_resources *r, const char *name);
/* r[name] += milli. FG_E_TOO_BIG when a new name finds the array full, the name is longer than
 * FG_RESOURCE_NAME_MAX - 1, or the sum overflows; r is unchanged then. */
enum fg_err fg_resources_add(struct fg_resources *r, const char *name, int64_t milli) FG_MUST_USE;
/* r[name] = milli, with add's errors. */
enum fg_err fg_resources_set(struct fg_resources *r, const char *name, int64_t milli) FG_MUST_USE;
/* acc += x for every resource of x (saturating at INT64_MAX; names beyond the array are dropped). */
void fg_resources_sum(struct fg_resources *acc, const struct fg_resources *x);
/* acc -= x for every resource of x. */
void fg_resources_sub(struct fg_resources *acc, const struct fg_resources *x);

/* A ResourceList object ({"cpu": "500m", "memory": "1Gi"}) into *out (overwritten); NULL is the empty
 * list. FG_E_PARSE naming the resource for a value that is not a quantity. */
enum fg_err fg_resources_from_json(json_object *list, struct fg_resources *out, char *errmsg) FG_MUST_USE;
/* A new ResourceList object with every amount written as fg_quantity_format does. */
json_object *fg_resources_to_json(const struct fg_resources *r);

/* What `pod` requests (see the essay) into *out. FG_E_PARSE naming the container and resource for a
 * malformed quantity. */
enum fg_err fg_pod_requests(json_object *pod, struct fg_resources *out, char *errmsg) FG_MUST_USE;

/* fg_pod_requests as kube-scheduler's scoring counts it (its NonMissingContainerRequests): every
 * container, init containers included, that requests no cpu counts 100m and no memory 200Mi. */
enum fg_err fg_pod_requests_nonzero(json_object *pod, struct fg_resources *out, char *errmsg) FG_MUST_USE;

/* The first resource that `request` asks for (a positive amount) beyond what `available` holds:
 * its name, borrowed from request, or NULL when everything fits. */
const char *fg_resources_exceeds(const struct fg_resources *request, const struct fg_resources *available);

#endif
