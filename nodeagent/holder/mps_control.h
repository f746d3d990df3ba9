/*
 * mps_control — running nvidia-cuda-mps-control: the daemon's start (`-d`) and the client mode,
 * which relays the commands on its standard input to the daemon and prints the replies.
 *
 * Every run gets the same environment, the holder's own with CUDA_MPS_PIPE_DIRECTORY,
 * CUDA_MPS_LOG_DIRECTORY and CUDA_VISIBLE_DEVICES (the GPU's UUID) put in: the daemon is found only
 * through its pipe directory, so a client run with another environment would talk to another daemon
 * or to none. Children start with no signal blocked and SIGPIPE, SIGTERM and SIGINT at their
 * defaults, whatever the holder's threads block or ignore (a daemon that inherited a blocked SIGTERM
 * would outlive every polite stop).
 *
 * Each run is bounded: past its timeout the child is killed and reaped. With `-d` the program
 * forks the daemon and exits; the daemon may keep the output pipe open, so a run ends when the
 * program itself exits, taking whatever output has arrived by then, not at end of file.
 */
#ifndef FG_NODEAGENT_HOLDER_MPS_CONTROL_H
#define FG_NODEAGENT_HOLDER_MPS_CONTROL_H

#include "base/buf.h"
#include "base/err.h"

struct fg_mps_control {
    char *bin;      /* a path, or a name looked up in PATH */
    char **envp;    /* NULL-terminated; owned */
};

/* Builds the environment for runs of bin (copied) against the daemon of pipe_dir and log_dir, for the
 * GPU named `visible` (NULL: CUDA_VISIBLE_DEVICES left as it is). */
void fg_mps_control_init(struct fg_mps_control *c, const char *bin, const char *pipe_dir, const char *log_dir,
                         const char *visible);
void fg_mps_control_cleanup(struct fg_mps_control *c);

/* Runs `bin [arg]` with `input` (may be NULL) on its standard input; its standard output and error,
 * up to 64 KiB, go to out (replacing its content). *status is the exit status, or 128 + the signal
 * that ended it. FG_E_IO when it cannot be started (errmsg says why: "not found" for a missing
 * binary), FG_E_TIMEOUT when it was still running after timeout_ms (then killed). */
enum fg_err fg_mps_control_run(const struct fg_mps_control *c, const char *arg, const char *input,
                               unsigned timeout_ms, struct fg_buf *out, int *status, char *errmsg) FG_MUST_USE;

/* One command through the client: FG_OK when the client exited 0, its reply in `reply` (may be NULL);
 * FG_E_CONNECT when it exited otherwise (the daemon is not there or refused: errmsg quotes the
 * output); FG_E_IO, FG_E_TIMEOUT as for fg_mps_control_run. */
enum fg_err fg_mps_control_command(const struct fg_mps_control *c, const char *command, unsigned timeout_ms,
                                   struct fg_buf *reply, char *errmsg) FG_MUST_USE;

#endif
