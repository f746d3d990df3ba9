/* cmd_exporter — `fracgpu exporter`: the node's GPU exporter as a subcommand (see cmd_exporter.c). */
#ifndef FG_EXPORTER_CMD_EXPORTER_H
#define FG_EXPORTER_CMD_EXPORTER_H

/* argv[0] is "exporter". Runs until SIGINT/SIGTERM; returns the process exit status (2: bad usage). */
int fg_cmd_exporter(int argc, char **argv);

#endif
