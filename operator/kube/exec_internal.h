/*
 * exec_internal — exec credential plugins inside the module: the ExecCredential protocol
 * (exec_proto.c), running a plugin (exec_run.c) and the client's credential cache with its
 * refresher thread (exec_cache.c). Nothing outside operator/kube includes it.
 *
 * Messages from exec_proto.c and exec_run.c say what went wrong without naming the plugin;
 * exec_cache.c, which runs it, prefixes every one with `exec plugin "<command>": `.
 */
#ifndef FG_KUBE_EXEC_INTERNAL_H
#define FG_KUBE_EXEC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "operator/kube/config.h"

/* Largest plugin output read; a plugin that writes more is killed. */
#define FG__KUBE_EXEC_OUTPUT_MAX (1u << 20)

/* What a plugin issued. Secrets: cleared before they are freed. */
struct fg__kube_cred {
    char *token;             /* bearer token, or NULL */
    char *cert_pem;          /* client certificate and key (PEM), both or neither */
    char *key_pem;
    int64_t expiry_ms;       /* wall clock, ms since the epoch; 0 = until the server refuses it */
};

void fg__kube_cred_cleanup(struct fg__kube_cred *cred);
/* A copy of src into *dst. */
void fg__kube_cred_copy(struct fg__kube_cred *dst, const struct fg__kube_cred *src);

/* The KUBERNETES_EXEC_INFO value for cfg->exec (caller frees): apiVersion, kind, spec.interactive
 * false and, with provide_cluster_info, spec.cluster from cfg. */
char *fg__kube_exec_info(const struct fg_kube_config *cfg);

/* Parses a plugin's stdout as an ExecCredential of `api_version`. FG_E_PARSE for anything else:
 * not JSON, another kind or apiVersion, no status, neither a token nor a certificate and key, a
 * certificate without its key, an expirationTimestamp that is not RFC 3339. The message never
 * quotes the output (it may hold a token). */
enum fg_err fg__kube_exec_parse(const char *api_version, const char *out, size_t len, struct fg__kube_cred *cred,
                                char *errmsg) FG_MUST_USE;

/* Runs the plugin once (argv, environment with `info` as KUBERNETES_EXEC_INFO, stdin /dev/null) in a
 * process group of its own and appends its stdout to `out` (at most FG__KUBE_EXEC_OUTPUT_MAX bytes).
 * FG_OK when it exits 0 within timeout_ms. Otherwise the whole group is killed and reaped, and:
 * FG_E_NOT_FOUND_LOCAL (command not found; the install hint follows), FG_E_IO (cannot start it, or
 * it exited non-zero or died of a signal; its stderr follows), FG_E_TIMEOUT, FG_E_TOO_BIG, or
 * FG_E_SHUTDOWN when `cancel_fd` (-1 = none) became readable. */
enum fg_err fg__kube_exec_run(const struct fg_kube_exec *x, const char *info, unsigned timeout_ms, int cancel_fd,
                              struct fg_buf *out, char *errmsg) FG_MUST_USE;

/*
 * The credential cache of a client whose user is an exec plugin. One refresher thread runs the
 * plugin, so one run serves every caller that needed it, and no caller's thread ever runs it.
 */
struct fg__kube_creds;

/* cfg (with cfg->exec) is borrowed and must outlive the cache. */
struct fg__kube_creds *fg__kube_creds_new(const struct fg_kube_config *cfg, unsigned timeout_ms);
/* Stops the refresher, killing a plugin that is running. */
void fg__kube_creds_free(struct fg__kube_creds *cr);

/*
 * The credential to send: a copy into *out and its generation into *gen (never 0). When none is
 * cached or the cached one has expired, a run is asked for: with `wait` the call blocks until it
 * ends; without, it returns FG_E_BUSY at once and the listeners hear when the run has ended, and the
 * caller asks again. *ticket (0 on the first call) keeps the caller's place: the run it waited for
 * answers it even when that run failed (its error and message are returned) or issued an already
 * expired credential (used once, as client-go does). FG_E_SHUTDOWN once the cache is being freed.
 */
enum fg_err fg__kube_creds_get(struct fg__kube_creds *cr, bool wait, uint64_t *ticket, struct fg__kube_cred *out,
                               uint64_t *gen, char *errmsg) FG_MUST_USE;

/* The server refused the credential of generation `gen` (401): drop it unless a newer one is cached. */
void fg__kube_creds_invalidate(struct fg__kube_creds *cr, uint64_t gen);

/* fn(ud) runs on the refresher thread, under the cache's lock, after every run: it must only hand
 * work over (fg_kube_loop_call) and never call back into the cache. */
void fg__kube_creds_listen(struct fg__kube_creds *cr, void (*fn)(void *ud), void *ud);
/* Removes the listener with this ud; once it returns, fn is not running and will not run again. */
void fg__kube_creds_unlisten(struct fg__kube_creds *cr, void *ud);

#endif
