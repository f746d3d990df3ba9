/* cmd_replay — entry point of `fracgpu replay`, the placement experiment (see operator/main.c). */
#ifndef FG_SCHEDULER_REPLAY_CMD_REPLAY_H
#define FG_SCHEDULER_REPLAY_CMD_REPLAY_H

/* argv[0] is "replay". Returns the exit status: 0, 1 for a failed run, 2 for bad usage. */
int fg_cmd_replay(int argc, char **argv);

#endif
