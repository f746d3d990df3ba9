/* cmd_replay — the entry point of `fracgpu replay` (see cmd_replay.c; dispatched by operator/main.c). */
#ifndef FG_SCHEDULER_REPLAY_CMD_REPLAY_H
#define FG_SCHEDULER_REPLAY_CMD_REPLAY_H

int fg_cmd_replay(int argc, char **argv);

#endif
