/*
 * args — strict positional arguments for benchmark programs (args.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/args.h"

static void refuse(char **argv, const char *usage, const char *fmt, const char *value)
{
    fprintf(stderr, "%s: ", argv[0]);
    fprintf(stderr, fmt, value);
    fprintf(stderr, "\nusage: %s %s\n", argv[0], usage);
    exit(2);
}

void bench_args_check(int argc, char **argv, int max_args, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: %s %s\n", argv[0], usage);
            exit(0);
        }
    }
    if (argc - 1 > max_args)
        refuse(argv, usage, "unexpected argument \"%s\"", argv[max_args + 1]);
}

long bench_arg_long(int argc, char **argv, int i, long def, long min, long max, const char *usage)
{
    if (i >= argc)
        return def;
    char *end;
    errno = 0;
    long v = strtol(argv[i], &end, 10);
    if (!*argv[i] || *end || errno || v < min || v > max) {
        char what[96];
        snprintf(what, sizeof what, "argument %d wants a whole number from %ld to %ld, got \"%%s\"", i, min, max);
        refuse(argv, usage, what, argv[i]);
    }
    return v;
}

double bench_arg_double(int argc, char **argv, int i, double def, double min, double max, const char *usage)
{
    if (i >= argc)
        return def;
    char *end;
    errno = 0;
    double v = strtod(argv[i], &end);
    if (!*argv[i] || *end || errno || !isfinite(v) || v < min || v > max) {
        char what[96];
        snprintf(what, sizeof what, "argument %d wants a number from %g to %g, got \"%%s\"", i, min, max);
        refuse(argv, usage, what, argv[i]);
    }
    return v;
}
