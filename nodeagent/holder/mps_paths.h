/*
 * mps_paths — where an MPS GPU's directories live on the node: the one path scheme the capacity
 * holder (which starts the MPS control daemon) and the device plugin (which hands tenants the same
 * directories in Allocate) share.
 *
 *   <root>/<GPU-UUID>/pipe    CUDA_MPS_PIPE_DIRECTORY: the control daemon's socket, which clients find
 *   <root>/<GPU-UUID>/log     CUDA_MPS_LOG_DIRECTORY: control.log and server.log
 *   <root>/<GPU-UUID>/shm     the shared memory the MPS server and its clients map (the tenants'
 *                             /dev/shm, mounted from here)
 *
 * root is the holder's --mps-root (default FG_MPS_ROOT_DEFAULT), a host directory both mount. One
 * directory per GPU UUID, so daemons of different GPUs on a node never meet, and a UUID names its
 * GPU on every node alike. The holder also keeps the GPU's compute mode from before it took the GPU
 * in <root>/<GPU-UUID>/previous-compute-mode (FG_MPS_PREVIOUS_MODE), so that a holder restarted
 * after a crash still restores the mode the GPU had before the first one.
 */
#ifndef FG_NODEAGENT_HOLDER_MPS_PATHS_H
#define FG_NODEAGENT_HOLDER_MPS_PATHS_H

#include <stddef.h>

#include "base/err.h"

#define FG_MPS_ROOT_DEFAULT "/run/fracgpu/mps"
#define FG_MPS_PREVIOUS_MODE "previous-compute-mode"

/* Writes <root>/<uuid>/<kind> into out (size bytes); kind is "pipe", "log", "shm", FG_MPS_PREVIOUS_MODE,
 * or NULL for the GPU's own directory. FG_E_INVAL (errmsg says why) for an empty root, a UUID that is
 * empty, ".", ".." or holds a '/', or another kind; FG_E_TOO_BIG when it does not fit. */
enum fg_err fg_mps_dir(const char *root, const char *uuid, const char *kind, char *out, size_t size,
                       char *errmsg) FG_MUST_USE;

#endif
