/*
 * cmd_exporter — `fracgpu exporter --node-name N [--kubeconfig FILE] [--nvml-lib PATH]
 * [--proc-root DIR] [--listen ADDR:PORT] [--interval DURATION] [--dcgm-aliases] [--log-level L]`.
 *
 * Wiring only: the kube client and loop (operator/kube) feed the watch of this node's pods
 * (pods.c); the exporter samples in the background (exporter.c); the main thread runs the HTTP
 * server (http.c) until SIGINT or SIGTERM, then everything is undone in reverse order.
 */
#include "exporter/cmd_exporter.h"

#include <event2/event.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "exporter/exporter.h"
#include "exporter/http.h"
#include "exporter/pods.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/loop.h"

#define FG_EXPORTER_DEFAULT_LISTEN "0.0.0.0:9402"

static void usage(FILE *f)
{
    fprintf(f, "usage: fracgpu exporter --node-name N [--kubeconfig FILE] [--nvml-lib PATH] [--proc-root DIR]\n"
               "                        [--listen ADDR:PORT] [--interval DURATION] [--dcgm-aliases]\n"
               "                        [--log-level debug|info|warn|error]\n"
               "  --listen     default " FG_EXPORTER_DEFAULT_LISTEN "\n"
               "  --interval   sampling period, e.g. 500ms, 10s (default 10s)\n"
               "  --nvml-lib   default libnvidia-ml.so.1;  --proc-root  default /proc\n");
}

static void on_signal(evutil_socket_t sig, short what, void *ud)
{
    (void)what;
    fg_log(FG_LOG_INFO, "exporter", "signal %d: shutting down", (int)sig);
    event_base_loopexit(ud, NULL);
}

struct cmd_opts {
    struct fg_exporter_opts exp;
    const char *kubeconfig;
    const char *listen;
};

/* 0 to go on, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct cmd_opts *o)
{
    static const struct option longopts[] = {
        { "node-name", required_argument, NULL, 'n' }, { "kubeconfig", required_argument, NULL, 'k' },
        { "nvml-lib", required_argument, NULL, 'l' },  { "proc-root", required_argument, NULL, 'p' },
        { "listen", required_argument, NULL, 'a' },    { "interval", required_argument, NULL, 'i' },
        { "dcgm-aliases", no_argument, NULL, 'd' },    { "log-level", required_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },            { NULL, 0, NULL, 0 },
    };
    memset(o, 0, sizeof *o);
    o->listen = FG_EXPORTER_DEFAULT_LISTEN;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        enum fg_log_level lvl;
        switch (c) {
        case 'n': o->exp.node = optarg; break;
        case 'k': o->kubeconfig = optarg; break;
        case 'l': o->exp.nvml_lib = optarg; break;
        case 'p': o->exp.proc_root = optarg; break;
        case 'a': o->listen = optarg; break;
        case 'd': o->exp.dcgm_aliases = true; break;
        case 'i':
            if (fg_exporter_parse_duration(optarg, &o->exp.interval_ns) != FG_OK) {
                fprintf(stderr, "fracgpu exporter: --interval %s: want a duration like 500ms, 10s, 1m\n", optarg);
                return 2;
            }
            break;
        case 'v':
            if (!fg_log_parse_level(optarg, &lvl)) {
                fprintf(stderr, "fracgpu exporter: --log-level %s: want debug, info, warn or error\n", optarg);
                return 2;
            }
            fg_log_set_level(lvl);
            break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || !o->exp.node || !o->exp.node[0]) {
        fprintf(stderr, "fracgpu exporter: %s\n", optind < argc ? "unexpected argument" : "--node-name is required");
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Serves until a signal; returns the exit status. */
static int serve(const struct cmd_opts *o, struct fg_pods *pods)
{
    int status = 1;
    char msg[FG_ERRMSG_MAX] = "";
    struct event_base *base = event_base_new();
    if (!base) {
        fg_log(FG_LOG_ERROR, "exporter", "cannot create an event base");
        return 1;
    }
    struct fg_exporter *e = fg_exporter_new(&o->exp, pods);
    struct fg_exporter_http *http;
    if (fg_exporter_http_new(base, o->listen, e, &http, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "%s", msg);
        goto out_free_exporter;
    }
    if (fg_exporter_start(e, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "%s", msg);
        goto out_free_http;
    }
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    event_add(sigint, NULL);
    event_add(sigterm, NULL);
    int hl = (int)(strrchr(o->listen, ':') - o->listen);
    fg_log(FG_LOG_INFO, "exporter", "listening on %.*s:%u for node %s", hl ? hl : 7, hl ? o->listen : "0.0.0.0",
           fg_exporter_http_port(http), o->exp.node);
    status = event_base_dispatch(base) < 0 ? 1 : 0;
    event_free(sigterm);
    event_free(sigint);
out_free_http:
    fg_exporter_http_free(http);
out_free_exporter:
    fg_exporter_free(e);
    event_base_free(base);
    return status;
}

int fg_cmd_exporter(int argc, char **argv)
{
    struct cmd_opts o;
    int status = parse_args(argc, argv, &o);
    if (status)
        return status < 0 ? 0 : status;

    /* three threads that seldom allocate at once: one malloc arena saves ~1.5 MiB of RSS */
    mallopt(M_ARENA_MAX, 1);
    char msg[FG_ERRMSG_MAX] = "";
    status = 1;
    struct fg_kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (fg_kube_config_load_default(o.kubeconfig, &cfg, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "kube config: %s", msg);
        return 1;
    }
    struct fg_kube_client_opts copts = FG_KUBE_CLIENT_OPTS_DEFAULT;
    struct fg_kube_client *client;
    if (fg_kube_client_new(&cfg, &copts, &client, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "kube client: %s", msg);
        goto out_config;
    }
    struct fg_kube_loop *loop;
    if (fg_kube_loop_new(client, &loop, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "kube loop: %s", msg);
        goto out_client;
    }
    if (fg_kube_loop_start(loop) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "cannot start the kube loop");
        goto out_loop;
    }
    struct fg_pods *pods;
    if (fg_pods_start(loop, o.exp.node, &pods, msg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "exporter", "%s", msg);
        goto out_stop_loop;
    }
    status = serve(&o, pods);
    fg_pods_stop(pods);
out_stop_loop:
    fg_kube_loop_stop(loop);
out_loop:
    fg_kube_loop_free(loop);
out_client:
    fg_kube_client_free(client);
out_config:
    fg_kube_config_cleanup(&cfg);
    return status;
}
