/*
 * args — the positional arguments of a benchmark program, read strictly: `PROGRAM --help` prints
 * its usage and exits 0; a value that is not a number, or is out of its range, is refused with the
 * usage and exit status 2, instead of being read as 0 and running a benchmark nobody asked for.
 */
#ifndef FG_BENCH_ARGS_H
#define FG_BENCH_ARGS_H

/* Exits with the usage when argv holds -h or --help, or more than max_args arguments. */
void bench_args_check(int argc, char **argv, int max_args, const char *usage);
/* argv[i] as a whole number in [min, max]; def when absent. */
long bench_arg_long(int argc, char **argv, int i, long def, long min, long max, const char *usage);
/* argv[i] as a number in [min, max]; def when absent. */
double bench_arg_double(int argc, char **argv, int i, double def, double min, double max, const char *usage);

#endif
