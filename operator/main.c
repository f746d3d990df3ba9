/*
 * fracgpu — the one binary of the product; every role is a subcommand, and this is the only file
 * that names them all.
 *
 * A role is an entry point `int fn(int argc, char **argv)` (argv[0] is the role's name) returning the
 * exit status: 0 after a clean run or --help, 1 when it could not start, 2 for bad usage. The roles
 * that run against a cluster are each a list of setup calls on a manager (operator/manager), in the
 * role's own file.
 */
#include <curl/curl.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <openssl/opensslv.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "nodeagent/cmd_capacity_holder.h"
#include "nodeagent/cmd_node_agent.h"
#include "operator/cmd_operator.h"
#include "rightsizing/simulate/cmd_simulate.h"
#include "scheduler/replay/cmd_replay.h"

static int cmd_version(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: fracgpu version\n\nPrints the release and the libraries it was built against.\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "fracgpu version: unexpected argument \"%s\"\n", argv[1]);
        return 2;
    }
    printf("fracgpu %s (libcurl %s, json-c %s, libyaml %s, %s, libevent %s)\n", FG_VERSION,
           curl_version_info(CURLVERSION_NOW)->version, json_c_version(), yaml_get_version_string(),
           OPENSSL_VERSION_TEXT, event_get_version());
    return 0;
}

struct role {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

static const struct role roles[] = {
    { "operator", "the control plane: GPU policies and workloads, leader-elected among replicas", fg_cmd_operator },
    { "node-agent", "one per GPU node: per-pod GPU metrics and the fracgpu.io/gpu-share device plugin", fg_cmd_node_agent },
    { "capacity-holder", "a capacity pod's process: reports its GPU, runs its MPS daemon", fg_cmd_capacity_holder },
    { "replay", "replay a GPU trace through the scheduler (placement experiment)", fg_cmd_replay },
    { "simulate", "replay per-pod GPU usage through the recommender and the scheduler (rightsizing experiment)", fg_cmd_simulate },
    { "version", "print the fracgpu version", cmd_version },
};

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu <command> [options]    (fracgpu <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        fprintf(out, "  %-16s %s\n", roles[i].name, roles[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (!strcmp(argv[1], roles[i].name))
            return roles[i].run(argc - 1, argv + 1);
    fprintf(stderr, "fracgpu: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
