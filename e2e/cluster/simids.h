/*
 * simids — the identities a simulated node's hardware and runtime give out, derived from what they
 * belong to so that every process of the simulation, and every run of it, agrees on them without
 * keeping them anywhere:
 *   - a GPU's UUID, from its node's name and index, in NVIDIA's form
 *     "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex, as nvidia-smi prints it);
 *   - a container's ID, 64 hex digits as containerd and CRI-O make them, from the pod UID, the
 *     container's name and its restart count (each restart is a new container);
 *   - the host PID of a simulated container's GPU process, from the same three, in Linux's PID
 *     range (a real container's process has its own PID; a simulated one has none).
 * Each is the start of a SHA-256 over its owner's names, so two owners share one only by a collision
 * of that hash (a PID, from 22 bits, may collide: the node that shows processes moves one on, see
 * kubelet_gpus.c).
 */
#ifndef FG_SIM_SIMIDS_H
#define FG_SIM_SIMIDS_H

#define FG_SIM_GPU_UUID_LEN 40        /* "GPU-" and 36 characters */
#define FG_SIM_CONTAINER_ID_LEN 64
#define FG_SIM_PID_MIN 1000u          /* below: the host's own daemons */
#define FG_SIM_PID_MAX 4194304u       /* Linux's pid_max on 64-bit machines */

/* The UUID of GPU index of node into out (FG_SIM_GPU_UUID_LEN + 1 bytes). */
void fg_sim_gpu_uuid(const char *node, unsigned index, char *out);
/* The ID of the container called name in pod uid after restarts restarts into out
 * (FG_SIM_CONTAINER_ID_LEN + 1 bytes). */
void fg_sim_container_id(const char *pod_uid, const char *name, unsigned restarts, char *out);
/* The PID of that container's simulated GPU process, in [FG_SIM_PID_MIN, FG_SIM_PID_MAX). */
unsigned fg_sim_container_pid(const char *pod_uid, const char *name, unsigned restarts);

#endif
