/*
 * flags — the command-line options every role built on a manager shares, parsed one way.
 *
 * A role's getopt_long table includes FG_MANAGER_LONGOPTS (and FG_MANAGER_LEADER_LONGOPTS when it
 * elects a leader) and hands every option it does not know itself to fg_manager_flag. The names are
 * those of kube-controller-manager and controller-runtime, so operators of Kubernetes recognise them:
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
 * naming the option); fg_manager_flags_check then checks what only the whole set can tell.
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
    FG_FLAG_LEADER_ELECT,
    FG_FLAG_LEASE_DURATION,
    FG_FLAG_RENEW_DEADLINE,
    FG_FLAG_RETRY_PERIOD,
    FG_FLAG_LEASE_NAME,
    FG_FLAG_LEASE_NAMESPACE,
};

#define FG_MANAGER_LONGOPTS                                                                        \
    { "kubeconfig", required_argument, NULL, FG_FLAG_KUBECONFIG },                                 \
    { "listen", required_argument, NULL, FG_FLAG_LISTEN },                                         \
    { "log-level", required_argument, NULL, FG_FLAG_LOG_LEVEL }

#define FG_MANAGER_LEADER_LONGOPTS                                                                 \
    { "leader-elect", optional_argument, NULL, FG_FLAG_LEADER_ELECT },                             \
    { "leader-elect-lease-duration", required_argument, NULL, FG_FLAG_LEASE_DURATION },            \
    { "leader-elect-renew-deadline", required_argument, NULL, FG_FLAG_RENEW_DEADLINE },            \
    { "leader-elect-retry-period", required_argument, NULL, FG_FLAG_RETRY_PERIOD },                \
    { "leader-elect-resource-name", required_argument, NULL, FG_FLAG_LEASE_NAME },                 \
    { "leader-elect-resource-namespace", required_argument, NULL, FG_FLAG_LEASE_NAMESPACE }

/* Applies option c (with its argument) to opts: FG_OK; FG_E_NOT_FOUND_LOCAL when c is not a manager
 * option; FG_E_INVAL with errmsg for a bad value. The --log-level option takes effect at once. */
enum fg_err fg_manager_flag(struct fg_manager_opts *opts, int c, const char *arg, char *errmsg) FG_MUST_USE;
/* What only the whole set can tell: the listen address, the leader-election durations. */
enum fg_err fg_manager_flags_check(const struct fg_manager_opts *opts, char *errmsg) FG_MUST_USE;
/* The usage lines of the shared options (leader: with the leader-election ones). */
void fg_manager_flags_usage(FILE *out, const char *default_listen, bool leader);

#endif
