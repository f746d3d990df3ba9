/* cmd_operator — entry point of `fracgpu operator` (see operator/main.c). */
#ifndef FG_OPERATOR_CMD_OPERATOR_H
#define FG_OPERATOR_CMD_OPERATOR_H

/* argv[0] is "operator". Runs until SIGTERM or SIGINT; returns the exit status (0 after a clean stop
 * or --help, 1 when it cannot start, 2 for bad usage). */
int fg_cmd_operator(int argc, char **argv);

#endif
