/*
 * store_int — helpers shared by the store's write-semantics files (store_write.c, store_delete.c,
 * store_bind.c, store_evict.c, store_resize.c) and nothing else.
 */
#ifndef FG_E2E_APISERVER_STORE_INT_H
#define FG_E2E_APISERVER_STORE_INT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "e2e/apiserver/store.h"

/* Sets *out to a Status for err with the formatted message; details default to {name, group,
 * kind: plural} when type is given. Returns err. */
enum fg_err fg__write_fail(json_object **out, enum fg_err err, const struct fg__type *type, const char *name,
                           json_object *details, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A 422 Invalid Status with one cause. */
enum fg_err fg__write_invalid(json_object **out, const struct fg__type *type, const char *name, const char *field,
                              const char *cause_reason, const char *detail);
/* A 404 NotFound Status for type/name. */
enum fg_err fg__write_not_found(json_object **out, const struct fg__type *type, const char *name);
/* Sets meta[field] to the current time, RFC 3339 in UTC (base/timefmt.h). */
void fg__write_set_now(json_object *meta, const char *field);
/* Sets meta[field] to wall_ms (milliseconds since the epoch), RFC 3339 in UTC to the second. */
void fg__write_set_time(json_object *meta, const char *field, int64_t wall_ms);
/* Does obj have a non-empty metadata.finalizers? */
bool fg__write_has_finalizers(json_object *obj);
const struct fg__type *fg__write_namespaces_type(const struct fg__store *st);
/* store_resize.c: replaces *obj (taken) by cur with only the containers' resources and resizePolicy
 * of *obj; FG_E_KUBE_INVALID with the Status in *out (and *obj NULL) when the change is refused. */
enum fg_err fg__write_resize(const struct fg__type *pods, json_object *cur, json_object **obj,
                             json_object **out) FG_MUST_USE;
/* Stores obj (taken) as the successor of cur within scope: preconditions, carried identity,
 * generation, finalizer completion. */
enum fg_err fg__write_commit(struct fg__store *st, const struct fg__type *type, json_object *cur, json_object *obj,
                             enum fg__write_scope scope, json_object **out) FG_MUST_USE;

#endif
