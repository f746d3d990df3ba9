/*
 * apicall — one API request from the holder's thread that a stop cuts short.
 *
 * A synchronous verb (client.h) would hold the holder's thread until the server answered or the
 * request timed out, and a stop would wait for it. So the request runs on the manager's loop thread
 * (loop.h) and the holder's thread waits for its reply on the stop's condition variable: a stop
 * cancels the request on the loop, after which nothing calls back, and returns at once.
 */
#ifndef FG_NODEAGENT_HOLDER_APICALL_H
#define FG_NODEAGENT_HOLDER_APICALL_H

#include <json-c/json.h>

#include "base/err.h"
#include "nodeagent/holder/stop.h"
#include "operator/kube/loop.h"
#include "operator/kube/status.h"

/* Sends `method path` with body (NULL: none) of content_type and waits. On a 2xx reply FG_OK and,
 * when out is not NULL, the reply parsed (the caller puts it). Otherwise the mapped error with st
 * filled (reason, message, HTTP code; the caller cleans it up), or FG_E_SHUTDOWN when a stop came
 * first. Not from the loop thread. */
enum fg_err fg_holder_api_call(struct fg_kube_loop *loop, struct fg_holder_stop *stop, const char *method,
                               const char *path, const char *content_type, const char *body, json_object **out,
                               struct fg_kube_status *st) FG_MUST_USE;

#endif
