/*
 * compute_mode — taking a GPU into EXCLUSIVE_PROCESS for MPS, and giving it back.
 *
 * MPS wants its GPU in EXCLUSIVE_PROCESS: then the MPS server is the one process with a context on
 * it, and every client's work goes through that server (in DEFAULT mode a CUDA program that missed
 * the pipe directory would open a context of its own beside the server's and escape its limits).
 * Setting the mode needs root and the GPU's device node, which is why the holder runs privileged.
 *
 * The mode the GPU had before is written to a small file first (FG_MPS_PREVIOUS_MODE in the GPU's
 * MPS directory, mps_paths.h) and given back from there: a holder that crashed after taking the GPU
 * left it in EXCLUSIVE_PROCESS, and the holder that replaces it must restore the mode from before the
 * first one, not the one it found. Restoring removes the file; a holder without MPS that finds one
 * restores it too, so a GPU an mps holder left exclusive does not stay so under timesliced tenants.
 */
#ifndef FG_NODEAGENT_HOLDER_COMPUTE_MODE_H
#define FG_NODEAGENT_HOLDER_COMPUTE_MODE_H

#include <stdbool.h>

#include "base/err.h"
#include "exporter/nvml.h"

/* Records the GPU's mode in saved_path unless a record is already there, then sets EXCLUSIVE_PROCESS;
 * *previous is the recorded mode (the one to restore). FG_E_UNSUPPORTED when the library lacks the
 * compute-mode calls, FG_E_IO when NVML refuses (errmsg names the call and the reason: for
 * "Insufficient Permissions" the holder is not privileged) or the record cannot be written. On
 * failure the GPU's mode is what it was. */
enum fg_err fg_holder_mode_take(const struct fg_nvml *nv, nvmlDevice_t dev, const char *saved_path,
                                nvmlComputeMode_t *previous, char *errmsg) FG_MUST_USE;

/* The mode recorded in saved_path: true and *mode set when a record is there. A record found by a
 * holder that does not run MPS was left by an mps holder that crashed on this GPU. */
bool fg_holder_mode_recorded(const char *saved_path, nvmlComputeMode_t *mode);

/* Sets `previous` back and removes saved_path. FG_E_IO / FG_E_UNSUPPORTED as above; the record stays
 * when the mode could not be set, so that the next holder tries again. */
enum fg_err fg_holder_mode_restore(const struct fg_nvml *nv, nvmlDevice_t dev, const char *saved_path,
                                   nvmlComputeMode_t previous, char *errmsg) FG_MUST_USE;

#endif
