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
 * kubectl.kubernetes.io/last-applied-configuration annotation; fg_transform_keep strips, then keeps
 * only the fields of a field set — the paths a consumer reads, compiled once into a tree and pruned
 * from each object in place, which spares the allocations of a second tree on the informer's hot
 * path. The manager's informer factory builds one field set per informer from the union of what its
 * consumers declare.
 */
#ifndef FG_CACHE_TRANSFORM_H
#define FG_CACHE_TRANSFORM_H

#include <json-c/json.h>

typedef json_object *fg_transform_fn(void *ud, json_object *obj);

/* Removes metadata.managedFields and the last-applied-configuration annotation; returns obj with a
 * new reference. ud is unused. */
json_object *fg_transform_strip(void *ud, json_object *obj);

/*
 * A compiled list of kept paths. A path is dot-separated keys; a key ending in "[]" walks every
 * element of an array, so "spec.containers[].resources" keeps each container's resources (arrays keep
 * their length and order; their elements keep only the listed keys, and elements that are not
 * objects become null). A path that ends where another continues keeps the whole sub-tree. Paths
 * absent from an object are skipped; empty segments and segments of 128 bytes or more are ignored.
 * `paths` is NULL-terminated and may be freed after the call.
 */
struct fg_fieldset;

struct fg_fieldset *fg_fieldset_new(const char *const *paths);
/* NULL is ignored. */
void fg_fieldset_free(struct fg_fieldset *fs);

/* A fg_transform_fn whose ud is a struct fg_fieldset: fg_transform_strip, then every member no path
 * reaches is deleted from obj in place; returns obj with a new reference, NULL when obj is not an
 * object. */
json_object *fg_transform_keep(void *ud, json_object *obj);

/* The pod fields the scheduling side of fracgpu reads, NULL-terminated. */
extern const char *const fg_transform_pod_paths[];

#endif
