/*
 * cmd_operator — `fracgpu operator`: parses the command line, starts the operator and waits for
 * SIGTERM or SIGINT.
 *
 * The signals are blocked before any thread starts, so every thread inherits the mask and only this
 * one receives them, through sigtimedwait; between signals it ticks the operator every 100 ms.
 */
#include "operator/run/cmd_operator.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "operator/run/operator.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fracgpu operator [--kubeconfig FILE] [--listen HOST:PORT] [--workers N] [--log-level LEVEL]\n"
            "\n"
            "  --kubeconfig FILE    kubeconfig to use (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
            "  --listen HOST:PORT   address of /healthz, /readyz and /metrics (default 0.0.0.0:8080; port 0 picks one)\n"
            "  --workers N          policy reconcile workers, 1-64 (default 2)\n"
            "  --log-level LEVEL    debug, info, warn, error or off (default info)\n");
}

/* Splits "host:port" (host may be empty: all addresses). */
static bool parse_listen(const char *s, char *host, size_t size, unsigned *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= size)
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p > 65535)
        return false;
    snprintf(host, size, "%.*s", (int)(colon - s), s);
    if (!host[0])
        snprintf(host, size, "0.0.0.0");
    *port = (unsigned)p;
    return true;
}

int fg_cmd_operator(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "kubeconfig", required_argument, NULL, 'k' }, { "listen", required_argument, NULL, 'l' },
        { "workers", required_argument, NULL, 'w' },    { "log-level", required_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },             { NULL, 0, NULL, 0 },
    };
    char host[256] = "0.0.0.0";
    struct fg_operator_opts opts = { .listen_host = host, .listen_port = 8080, .workers = 2 };
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1;) {
        char *end = NULL;
        enum fg_log_level lvl;
        switch (c) {
        case 'k':
            opts.kubeconfig = optarg;
            break;
        case 'l':
            if (!parse_listen(optarg, host, sizeof host, &opts.listen_port)) {
                fprintf(stderr, "fracgpu operator: --listen wants HOST:PORT, got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case 'w':
            opts.workers = (unsigned)strtoul(optarg, &end, 10);
            if (!*optarg || *end || opts.workers < 1 || opts.workers > 64) {
                fprintf(stderr, "fracgpu operator: --workers wants 1 to 64, got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case 'v':
            if (!fg_log_parse_level(optarg, &lvl)) {
                fprintf(stderr, "fracgpu operator: unknown log level \"%s\"\n", optarg);
                return 2;
            }
            fg_log_set_level(lvl);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fracgpu operator: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    struct fg_operator op;
    char errmsg[FG_ERRMSG_MAX] = "";
    if (fg_operator_start(&op, &opts, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "operator", "cannot start: %s", errmsg);
        return 1;
    }
    const struct timespec tick = { 0, 100 * 1000 * 1000 };
    int sig;
    do {
        fg_operator_tick(&op);
        sig = sigtimedwait(&sigs, NULL, &tick);
    } while (sig < 0);
    fg_log(FG_LOG_INFO, "operator", "stopping on %s", strsignal(sig));
    fg_operator_stop(&op);
    return 0;
}
