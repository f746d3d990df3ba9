/*
 * patch — the three PATCH bodies kube-apiserver accepts, applied to stored objects.
 *
 * - fg__patch_merge: JSON merge patch, RFC 7386 (objects merge, null deletes, anything else replaces).
 * - fg__patch_json: JSON patch, RFC 6902 (add, remove, replace, move, copy, test; JSON pointers with
 *   ~0/~1 escapes and "-" for the end of an array).
 * - fg__patch_strategic: Kubernetes strategic merge patch. Which lists merge, and by which key, comes
 *   from the OpenAPI-shaped definitions in the registry (x-kubernetes-patch-strategy and
 *   x-kubernetes-patch-merge-key), walked alongside the object from the type's root definition;
 *   lists without a strategy are replaced whole. Directives: $patch (replace / delete, on maps and
 *   in lists), $retainKeys, $setElementOrder/<list>, $deleteFromPrimitiveList/<list>.
 * Every function leaves `orig` and `patch` untouched and returns a new object in *out; the merge and
 * JSON patch results share the subtrees the patch did not touch with `orig` (and values with the
 * patch), so stored objects must stay immutable (they do: the store replaces, never edits). FG_E_PARSE
 * means the patch document itself is malformed (HTTP 400); FG_E_INVAL means it is well formed but
 * cannot be applied, e.g. a failed "test" or a missing path (HTTP 422). errmsg says which and where.
 */
#ifndef FG_E2E_APISERVER_PATCH_H
#define FG_E2E_APISERVER_PATCH_H

#include <json-c/json.h>

#include "base/err.h"
#include "e2e/apiserver/registry.h"

/* A deep copy of o (NULL for NULL). */
json_object *fg__json_dup(json_object *o);
/* A new object (array) holding references to the members (elements) of o, an object or an array. */
json_object *fg__json_shallow_dup(json_object *o);

enum fg_err fg__patch_merge(json_object *orig, json_object *patch, json_object **out, char *errmsg) FG_MUST_USE;
enum fg_err fg__patch_json(json_object *orig, json_object *ops, json_object **out, char *errmsg) FG_MUST_USE;
/* definition: the root definition name of the object's type (NULL: every list is replaced). */
enum fg_err fg__patch_strategic(const struct fg__registry *reg, const char *definition, json_object *orig,
                                json_object *patch, json_object **out, char *errmsg) FG_MUST_USE;

#endif
