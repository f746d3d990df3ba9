/*
 * client — synchronous REST calls against the Kubernetes API.
 *
 * A `struct fg_kube_client` is shared by every thread of the process: calls may run concurrently,
 * each on its own libcurl easy handle from a small pool, sharing one connection cache and one TLS
 * session cache (curl share handle). Requests pass a client-side token bucket (QPS and burst, as
 * client-go's rest.Config) before they go out. Authentication is bearer token (re-reading
 * `token_file` when its mtime changes), a client certificate, or an exec credential plugin (below),
 * which may issue a token, a certificate or both. Replies are bounded by
 * `max_body_bytes`; a bigger one fails with FG_E_TOO_BIG. Every non-2xx reply becomes an
 * enum fg_err and, when the caller passes one, a filled `struct fg_kube_status` (status.h).
 *
 * Paths come from fg_kube_path (resource.h). Objects are sent and received as json-c objects that
 * belong to the caller. The asynchronous side (watches, lists on the loop thread) is in loop.h and
 * builds its handles with fg_kube_client_prepare_easy, so both sides authenticate identically.
 *
 * Exec credentials (config.h says what a plugin gets and must answer) are cached until their
 * expirationTimestamp, or without one until the server refuses them. The plugin runs on first use,
 * when the cached credential has expired, and when the server answers 401: the credential that was
 * refused is dropped and the request is retried once with a fresh one (a second 401 is returned as
 * FG_E_KUBE_UNAUTHORIZED). Runs happen one at a time on a thread the client owns, never on the
 * caller's: a synchronous verb that needs the credential waits for the run, the loop does not wait
 * at all — a watch or list that needs it is parked and started when the run ends, while every other
 * transfer on the loop goes on. A run is bounded by `exec_timeout_ms` (then the plugin and its
 * children are killed) and its output by 1 MiB. A run that fails fails the requests that waited for
 * it with a message naming the plugin's command and the cause (exit status and stderr, malformed
 * output, timeout); the next request runs the plugin again. Neither tokens nor the plugin's output
 * are ever logged.
 *
 * The first fg_kube_client_new sets SIGPIPE to ignored when it is still at its default (a closed
 * TLS connection would otherwise kill the process); a handler the program installed is kept.
 */
#ifndef FG_KUBE_CLIENT_H
#define FG_KUBE_CLIENT_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"
#include "operator/kube/status.h"

struct fg_kube_client_opts {
    double qps;              /* sustained requests per second; <= 0 disables the limiter */
    unsigned burst;          /* bucket size */
    unsigned timeout_ms;     /* per request, excluding watches; 0 = none */
    unsigned connect_timeout_ms;
    size_t max_body_bytes;   /* largest reply accepted */
    const char *user_agent;
    unsigned exec_timeout_ms;  /* longest run of an exec credential plugin; 0 = 30 s (never unbounded) */
};

#define FG_KUBE_CLIENT_OPTS_DEFAULT                                                     \
    { .qps = 50, .burst = 100, .timeout_ms = 30000, .connect_timeout_ms = 5000,         \
      .max_body_bytes = 64u << 20, .user_agent = "fracgpu/" FG_VERSION,                 \
      .exec_timeout_ms = 30000 }

struct fg_kube_client;

/* Copies what it needs from cfg and opts (opts NULL = defaults). */
enum fg_err fg_kube_client_new(const struct fg_kube_config *cfg, const struct fg_kube_client_opts *opts,
                               struct fg_kube_client **out, char *errmsg) FG_MUST_USE;
void fg_kube_client_free(struct fg_kube_client *c);
const struct fg_kube_config *fg_kube_client_config(const struct fg_kube_client *c);

enum fg_kube_patch_type { FG_KUBE_PATCH_MERGE, FG_KUBE_PATCH_STRATEGIC, FG_KUBE_PATCH_JSON };
/* "application/merge-patch+json" etc. */
const char *fg_kube_patch_content_type(enum fg_kube_patch_type t);

/*
 * The verbs. `path` is from fg_kube_path. On a 2xx reply they return FG_OK and, when `out` is not
 * NULL, the parsed reply. Otherwise they return the mapped error and fill `st` when it is not NULL
 * (the caller then calls fg_kube_status_cleanup). Transport failures: FG_E_CONNECT, FG_E_TLS,
 * FG_E_TIMEOUT, with st->http_code 0 and a message.
 */
enum fg_err fg_kube_get(struct fg_kube_client *c, const char *path, json_object **out,
                        struct fg_kube_status *st) FG_MUST_USE;
enum fg_err fg_kube_create(struct fg_kube_client *c, const char *path, json_object *obj,
                           json_object **out, struct fg_kube_status *st) FG_MUST_USE;
enum fg_err fg_kube_update(struct fg_kube_client *c, const char *path, json_object *obj,
                           json_object **out, struct fg_kube_status *st) FG_MUST_USE;
enum fg_err fg_kube_patch(struct fg_kube_client *c, const char *path, enum fg_kube_patch_type type,
                          const char *patch, json_object **out, struct fg_kube_status *st) FG_MUST_USE;
/* `options` (a DeleteOptions object) may be NULL. */
enum fg_err fg_kube_delete(struct fg_kube_client *c, const char *path, json_object *options,
                           json_object **out, struct fg_kube_status *st) FG_MUST_USE;

struct fg_kube_list_opts {
    const char *label_selector;
    const char *field_selector;
    const char *resource_version;   /* NULL = most recent */
    unsigned limit;                 /* page size; 0 = server default (no paging) */
};

/* Calls on_item for every item of every page (following `continue`), item borrowed for the call. */
typedef void fg_kube_item_fn(void *ud, json_object *item);

/* Lists a collection page by page; *resource_version (caller frees) is the list's revision: the first
 * page's, which kube-apiserver serves every page from (a consistent snapshot). A watch from it misses
 * nothing even where later pages were read from a newer state. An expired continue token (410)
 * restarts nothing: it returns FG_E_KUBE_GONE and the caller relists. */
enum fg_err fg_kube_list(struct fg_kube_client *c, const struct fg_kube_resource *res, const char *ns,
                         const struct fg_kube_list_opts *opts, fg_kube_item_fn *on_item, void *ud,
                         char **resource_version, struct fg_kube_status *st) FG_MUST_USE;

/* The raw call every verb is built on. `reply` receives the body. */
enum fg_err fg_kube_request(struct fg_kube_client *c, const char *method, const char *path,
                            const char *content_type, const char *body, size_t len, struct fg_buf *reply,
                            struct fg_kube_status *st) FG_MUST_USE;

/*
 * For loop.h: sets URL, TLS, authentication, user agent and Accept on `easy` for `path`, appending
 * the headers it needs to *headers (which the caller frees with curl_slist_free_all after the
 * transfer). Does not take a rate-limit token; see fg_kube_client_ratelimit_delay_ns. With an exec
 * plugin it waits for a run when the cached credential is missing or expired (the loop itself uses
 * a variant that does not wait).
 */
enum fg_err fg_kube_client_prepare_easy(struct fg_kube_client *c, CURL *easy, const char *path,
                                        struct curl_slist **headers, char *errmsg) FG_MUST_USE;

/* Non-blocking rate limiter: takes a token and returns 0, or returns how many ns until one is free
 * (taking nothing). */
unsigned long long fg_kube_client_ratelimit_delay_ns(struct fg_kube_client *c);

#endif
