/*
 * fake_mps — `fracgpu-sim-mps-control`, a stand-in for nvidia-cuda-mps-control on machines without a
 * GPU: the capacity holder's tests and the simulated cluster run it where the real one would run.
 *
 * It behaves as the real program does towards its callers (NVIDIA's MPS documentation):
 *   fracgpu-sim-mps-control -d   starts the control daemon in the background and exits 0 once it
 *                                listens (1, with a message, when one already runs on that pipe
 *                                directory or it cannot listen);
 *   fracgpu-sim-mps-control -f   the same daemon in the foreground (tests that want its PID);
 *   fracgpu-sim-mps-control      client mode: each line of standard input is one command, relayed to
 *                                the daemon; the replies go to standard output. It exits 1 when no
 *                                daemon answers in the pipe directory, 0 otherwise.
 * Both find each other through $CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps), where the daemon
 * listens on the unix socket `control` and holds an flock on `control_lock` (a daemon that died
 * leaves the socket behind; the next one takes the lock and replaces it). It logs to
 * $CUDA_MPS_LOG_DIRECTORY/control.log (default /var/log/nvidia-mps) in the real daemon's words:
 * "Starting control daemon using socket ...", then per command "Accepting connection...", "NEW UI",
 * "Cmd:<command>", "UI closed".
 *
 * Commands, with the real semantics where the stand-in can have them (it starts no MPS server, so it
 * has none to list or configure):
 *   get_server_list                              prints nothing (no server runs)
 *   set_default_active_thread_percentage P       P in (0, 100]; default 100
 *   get_default_active_thread_percentage         "P.0" (one decimal)
 *   set_default_device_pinned_mem_limit D V      V an integer with M or G ("4096M", "10G"); D a device
 *                                                index or UUID
 *   get_default_device_pinned_mem_limit D        the value set for D, as given; nothing when none
 *   quit [-t T]                                  the daemon ends (the limits are lost, as the real one's)
 * A malformed argument is answered with one line saying what is wrong and changes nothing. For an
 * unknown command NVIDIA documents no reply; the stand-in answers nothing and logs it.
 *
 * So that tests can read what a daemon holds without talking to it, it keeps a file in its pipe
 * directory, FAKE_MPS_LIMITS_FILE, rewritten atomically after every change and removed when it ends:
 *   { "pid": N, "visible_devices": "<CUDA_VISIBLE_DEVICES>" | null, "log_directory": "...",
 *     "default_active_thread_percentage": P,
 *     "default_device_pinned_mem_limit": { "<D>": "<V>", ... }, "commands": N }
 *
 * Failure injection: with $FG_SIM_MPS_START_ERROR set, `-d` and `-f` print its value and exit 1
 * without starting (a daemon that cannot start: no GPU, wrong driver).
 */
#ifndef FG_E2E_FAKE_MPS_H
#define FG_E2E_FAKE_MPS_H

#include <stdbool.h>

#define FAKE_MPS_LIMITS_FILE "fracgpu-sim-limits.json"

/* The pipe and log directories from the environment (or the real program's defaults). */
const char *fake_mps_pipe_dir(void);
const char *fake_mps_log_dir(void);

/* The daemon: foreground, or in the background with the caller exiting once it listens. Returns the
 * exit status. */
int fake_mps_daemon(bool foreground);

/* Client mode over stdin/stdout. Returns the exit status. */
int fake_mps_client(void);

#endif
