/* commands — entry points of the fracgpu subcommands (see operator/main.c). */
#ifndef FG_OPERATOR_COMMANDS_H
#define FG_OPERATOR_COMMANDS_H

#include "exporter/cmd_exporter.h"
#include "operator/run/cmd_operator.h"


int fg_cmd_version(int argc, char **argv);
int fg_cmd_replay(int argc, char **argv);  /* scheduler/cmd_replay.c */

#endif
