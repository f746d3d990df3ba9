/*
 * flags — the command-line options every role built on a manager shares, parsed one way.
 *
 * A role describes its command line (struct fg_role_cli: its own options, a handler for them, its
 * usage) and fg_manager_flags_parse does the rest: the shared options below (the leader-election ones
 * only for roles that elect), --help and -h, unknown options and stray arguments, the cross-checks.
 * The names are those of kube-controller-manager and controller-runtime, so operators of Kubernetes
 * recognise them:
 *
 *   --kubeconfig FILE                      default: $KUBECONFIG, in-cluster, then ~/.kube/config
 *   --listen HOST:PORT                     /healthz, /readyz and /metrics (":PORT": every address)
 *   --log-level debug|info|warn|error|off
 *   --leader-elect[=BOOL]                  Go's boolean forms (fg_parse_bool)
 *   --leader-elect-lease-duration D        durations as base/duration.h reads them ("15s")
 *   --leader-elect-renew-deadline D
 *   --leader-elect-retry-period D
 *   --leader-elect-resource-name NAME
 *   --leader-elect-resource-namespace NS
 *
 * Values are checked as they are parsed (a bad one is a usage error, exit status 2, with a message
 * naming the option), and the leader-election durations together once all are read.
 */
#ifndef FG_MANAGER_FLAGS_H
#define FG_MANAGER_FLAGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"
#include "operator/manager/manager.h"

enum fg_manager_flag {
    FG_FLAG_KUBECONFIG = 0x1000,
    FG_FLAG_LISTEN,
    FG_FLAG_LOG_LEVEL,
    FG_FLAG_KUBE_API_QPS,
    FG_FLAG_KUBE_API_BURST,
    FG_FLAG_LEADER_ELECT,
    FG_FLAG_LEASE_DURATION,
    FG_FLAG_RENEW_DEADLINE,
    FG_FLAG_RETRY_PERIOD,
    FG_FLAG_LEASE_NAME,
    FG_FLAG_LEASE_NAMESPACE,
};

/* A role's command line. Its option codes must stay below FG_FLAG_KUBECONFIG and not be 'h'. */
struct fg_role_cli {
    const char *name;                   /* "operator": messages start "fracgpu operator: " */
    const struct option *options;       /* the role's own, terminated by a zero entry; may be NULL */
    bool leader;                        /* also the leader-election options */
    void (*usage)(FILE *out);           /* the whole usage text (fg_manager_flags_usage included) */
    /* One of the role's options: FG_OK, or FG_E_INVAL with errmsg saying what is wrong. */
    enum fg_err (*option)(void *ud, int c, const char *arg, char *errmsg);
    void *ud;
};

/* Parses argv into opts and the role's own state. Returns 0 to go on, -1 after --help (usage printed
 * on stdout: the caller exits 0), 2 after a usage error (message and usage on stderr). The
 * --log-level option takes effect at once. */
int fg_manager_flags_parse(const struct fg_role_cli *cli, struct fg_manager_opts *opts, int argc, char **argv);

/* The usage lines of the shared options (leader: with the leader-election ones). */
void fg_manager_flags_usage(FILE *out, const char *default_listen, bool leader);

#endif
