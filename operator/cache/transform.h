/*
 * transform — trimming objects before they are cached (client-go's SetTransform).
 *
 * An informer applies its transform to every object it receives, before the object becomes a
 * `struct fg_kobj`, so the cache holds only what the operator reads. A transform is handed an object
 * it may modify in place (the informer owns it for the call) and returns a reference to what should
 * be stored: the same object (json_object_get) or a new one. Returning NULL rejects the object; the
 * informer counts it as an error and skips it. The caller always drops its own reference to the input
 * afterwards, so a transform never frees its input and a rejecting transform leaks nothing.
 *
 * Ready-made: fg_transform_strip drops metadata.managedFields and the
 * kubectl.kubernetes.io/last-applied-configuration annotation; fg_transform_pod keeps only the pod
 * fields fracgpu reads; fg_transform_keep builds such field-keeping transforms from path lists.
 */
#ifndef FG_CACHE_TRANSFORM_H
#define FG_CACHE_TRANSFORM_H

#include <json-c/json.h>

typedef json_object *fg_transform_fn(void *ud, json_object *obj);

/* Removes metadata.managedFields and the last-applied-configuration annotation; returns obj with a
 * new reference. ud is unused. */
json_object *fg_transform_strip(void *ud, json_object *obj);

/*
 * Returns a new object holding only the listed paths of obj (sub-trees are shared with obj by
 * reference, which is fine on one thread). A path is dot-separated keys; a key ending in "[]" walks
 * every element of an array, so "spec.containers[].resources" keeps each container's resources
 * (arrays keep their length and order, elements become objects with only the kept keys). Paths that
 * are absent are skipped. `paths` is NULL-terminated. Returns NULL when obj is not an object.
 */
json_object *fg_transform_keep(json_object *obj, const char *const *paths);

/* fg_transform_strip, then keeps only fg_transform_pod_paths — the result fg_transform_keep gives,
 * but pruned from obj in place (returned with a new reference) rather than built anew, which spares
 * the allocations of a second tree on the informer's hot path. ud is unused. */
json_object *fg_transform_pod(void *ud, json_object *obj);

/* The paths fg_transform_pod keeps, NULL-terminated. */
extern const char *const fg_transform_pod_paths[];

#endif
