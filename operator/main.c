/*
 * fracgpu — the one binary of the product; every role is a subcommand.
 *
 * The table below is the whole dispatch: a subcommand is a name, a one-line summary and an entry
 * point `int fn(int argc, char **argv)` (argv[0] is the subcommand's name) returning the exit status.
 * Roles live in their own modules and only their entry points are named here.
 */
#include <stdio.h>
#include <string.h>

#include "operator/commands.h"
#include "scheduler/replay/cmd_replay.h"

struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    { "version", "print the fracgpu version", fg_cmd_version },
    { "exporter", "serve per-pod GPU compute and memory as Prometheus metrics (node agent)", fg_cmd_exporter },
    { "operator", "run the operator: informers, policy reconciler, health and metrics", fg_cmd_operator },
    { "replay", "replay a GPU trace through the scheduler (placement experiment)", fg_cmd_replay },
};

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "fracgpu: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
