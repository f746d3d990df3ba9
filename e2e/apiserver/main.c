/*
 * fracgpu-test-apiserver — the test API server as a process.
 *
 *   fracgpu-test-apiserver --listen 127.0.0.1:PORT --kubeconfig-out FILE [--history N]
 *                          [--state-file F] [--bookmark-ms MS] [--log-level LEVEL] [--tls] [--token T]
 *                          [--audit-log FILE]
 *
 * Port 0 picks a free port. Once listening it prints the address ("127.0.0.1:PORT") as one line on
 * stdout and writes the kubeconfig; it runs until SIGINT/SIGTERM and then writes the state file.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "e2e/apiserver/apiserver.h"

static void usage(FILE *to)
{
    fprintf(to, "usage: fracgpu-test-apiserver --listen HOST:PORT [--kubeconfig-out FILE] [--history N]\n"
                "                              [--state-file FILE] [--bookmark-ms MS] [--log-level LEVEL]\n"
                "                              [--tls] [--token TOKEN] [--audit-log FILE]\n");
}

static int parse_number(const char *s, unsigned long max, unsigned long *out)
{
    char *end = NULL;
    *out = strtoul(s, &end, 10);
    return *s && !*end && *s != '-' && *out <= max;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "listen", required_argument, NULL, 'l' },     { "kubeconfig-out", required_argument, NULL, 'k' },
        { "history", required_argument, NULL, 'H' },    { "state-file", required_argument, NULL, 's' },
        { "bookmark-ms", required_argument, NULL, 'b' }, { "log-level", required_argument, NULL, 'v' },
        { "tls", no_argument, NULL, 't' },              { "token", required_argument, NULL, 'T' },
        { "audit-log", required_argument, NULL, 'a' },  { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct fg_apiserver_opts opts = { 0 };
    const char *kubeconfig = NULL;
    char host[64] = "127.0.0.1";
    unsigned long n;
    enum fg_log_level level;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': {
            const char *colon = strrchr(optarg, ':');
            if (!colon || (size_t)(colon - optarg) >= sizeof(host) || !parse_number(colon + 1, 65535, &n)) {
                fprintf(stderr, "--listen wants HOST:PORT, got %s\n", optarg);
                return 2;
            }
            memcpy(host, optarg, (size_t)(colon - optarg));
            host[colon - optarg] = '\0';
            opts.port = (uint16_t)n;
            break;
        }
        case 'k': kubeconfig = optarg; break;
        case 't': opts.tls = true; break;
        case 'T': opts.token = optarg; break;
        case 'a': opts.audit_log = optarg; break;
        case 's': opts.state_file = optarg; break;
        case 'H':
            if (!parse_number(optarg, 10000000, &n) || n == 0) {
                fprintf(stderr, "--history wants a positive count, got %s\n", optarg);
                return 2;
            }
            opts.history = n;
            break;
        case 'b':
            if (!parse_number(optarg, 3600000, &n) || n == 0) {
                fprintf(stderr, "--bookmark-ms wants a positive number, got %s\n", optarg);
                return 2;
            }
            opts.bookmark_ms = (uint32_t)n;
            break;
        case 'v':
            if (!fg_log_parse_level(optarg, &level)) {
                fprintf(stderr, "unknown log level %s\n", optarg);
                return 2;
            }
            fg_log_set_level(level);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    opts.host = host;
    char msg[FG_ERRMSG_MAX];
    struct fg_apiserver *srv = NULL;
    if (fg_apiserver_new(&opts, &srv, msg) != FG_OK) {
        fprintf(stderr, "fracgpu-test-apiserver: %s\n", msg);
        return 1;
    }
    int rc = 0;
    if (kubeconfig && fg_apiserver_write_kubeconfig(srv, kubeconfig, msg) != FG_OK) {
        fprintf(stderr, "fracgpu-test-apiserver: %s\n", msg);
        rc = 1;
        goto out_free;
    }
    printf("%s:%u\n", host, fg_apiserver_port(srv));
    fflush(stdout);
    if (fg_apiserver_run(srv, 1, msg) != FG_OK) {
        fprintf(stderr, "fracgpu-test-apiserver: %s\n", msg);
        rc = 1;
    }
out_free:
    fg_apiserver_free(srv);
    return rc;
}
