/*
 * mps — the MPS control daemon of one GPU: started, given the workload's limits, watched, stopped.
 *
 * What MPS does with what the holder sets (NVIDIA's MPS documentation, "nvidia-cuda-mps-control"):
 *   - The control daemon (`nvidia-cuda-mps-control -d`) listens in CUDA_MPS_PIPE_DIRECTORY and starts
 *     an MPS server (nvidia-cuda-mps-server) for the UID of the first client; the server holds the
 *     GPU's one context and runs every client's work in it. A server serves one UID at a time, which
 *     is why an mps GPU carries one workload.
 *   - `set_default_active_thread_percentage N` caps the share of the GPU's threads (SMs) each client
 *     may use; `set_default_device_pinned_mem_limit <dev> <value>` (an integer with M or G) caps the
 *     device memory each client may allocate. Both are defaults for the next server the daemon
 *     starts — a server already running keeps what it had — and both are lost when the daemon quits.
 *     A client can only lower them (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
 *     CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), never raise them, so they bound what a tenant gets.
 *     The holder names the device by UUID, as NVIDIA's DRA driver does, and the daemon sees only
 *     that GPU (CUDA_VISIBLE_DEVICES=<UUID>).
 *   - `get_server_list` prints the PIDs of the running servers (none before the first client); the
 *     client exits non-zero when no daemon answers in the pipe directory, which makes it the health
 *     check. `quit` ends the daemon and its servers.
 * What the daemon answers to an unknown command is not documented; the holder never reads meaning
 * into the reply to a set command and reads the thread percentage back with
 * `get_default_active_thread_percentage` instead.
 *
 * The percentage is the workload's compute-milli / 10 (a tenth of a percent per milli), at least 1,
 * at most 100; the memory limit is its memory-mib, in MiB ("<N>M").
 *
 * Start is idempotent: a daemon that already answers in the GPU's pipe directory (a holder that
 * restarted while its daemon lived on) is adopted and given the limits again, not started twice.
 * The directories (mps_paths.h) are created as needed, shm included. Calls belong to one thread.
 */
#ifndef FG_NODEAGENT_HOLDER_MPS_H
#define FG_NODEAGENT_HOLDER_MPS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "nodeagent/holder/mps_control.h"

struct fg_mps_limits {
    unsigned thread_percentage;   /* 1..100 */
    uint64_t pinned_mem_mib;      /* > 0 */
};

/* compute-milli → active thread percentage: milli/10, at least 1, at most 100. */
unsigned fg_mps_thread_percentage(uint64_t compute_milli);

struct fg_holder_mps {
    struct fg_mps_control ctl;
    char uuid[96];
    char pipe_dir[4096], log_dir[4096], shm_dir[4096];
    struct fg_mps_limits limits;
    unsigned timeout_ms;          /* one control run */
};

/* Fills m for the GPU uuid under root, daemon binary bin; creates the pipe, log and shm directories.
 * FG_E_INVAL for a bad root or UUID, FG_E_IO when a directory cannot be made (errmsg says which). */
enum fg_err fg_holder_mps_init(struct fg_holder_mps *m, const char *root, const char *bin, const char *uuid,
                               const struct fg_mps_limits *limits, char *errmsg) FG_MUST_USE;
void fg_holder_mps_cleanup(struct fg_holder_mps *m);

/* Starts the daemon (or adopts the one answering: *adopted), sets the limits and checks the thread
 * percentage it reports back. FG_E_IO when the daemon cannot be started (errmsg quotes its output),
 * FG_E_CONNECT / FG_E_TIMEOUT when it does not answer, FG_E_INTERNAL when it holds another percentage
 * than the one set. */
enum fg_err fg_holder_mps_start(struct fg_holder_mps *m, bool *adopted, char *errmsg) FG_MUST_USE;

/* FG_OK while the daemon answers `get_server_list`; FG_E_CONNECT / FG_E_TIMEOUT / FG_E_IO otherwise. */
enum fg_err fg_holder_mps_check(struct fg_holder_mps *m, char *errmsg) FG_MUST_USE;

/* Sends `quit` and waits, at most timeout_ms in all, until the daemon no longer answers. FG_OK also
 * when none was running; FG_E_TIMEOUT when it still answers. */
enum fg_err fg_holder_mps_quit(struct fg_holder_mps *m, unsigned timeout_ms, char *errmsg) FG_MUST_USE;

#endif
