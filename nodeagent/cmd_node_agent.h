/* cmd_node_agent — entry point of `fracgpu node-agent` (see operator/main.c). */
#ifndef FG_NODEAGENT_CMD_NODE_AGENT_H
#define FG_NODEAGENT_CMD_NODE_AGENT_H

/* argv[0] is "node-agent". Runs until SIGTERM or SIGINT; returns the exit status (0 after a clean
 * stop or --help, 1 when it cannot start, 2 for bad usage). */
int fg_cmd_node_agent(int argc, char **argv);

#endif
