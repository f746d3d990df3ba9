/* cmd_capacity_holder — entry point of `fracgpu capacity-holder` (see operator/main.c). */
#ifndef FG_NODEAGENT_CMD_CAPACITY_HOLDER_H
#define FG_NODEAGENT_CMD_CAPACITY_HOLDER_H

/* argv[0] is "capacity-holder". Runs until SIGTERM or SIGINT; returns the exit status (0 after a clean
 * stop or --help, 1 when it cannot start or gave up, 2 for bad usage). */
int fg_cmd_capacity_holder(int argc, char **argv);

#endif
