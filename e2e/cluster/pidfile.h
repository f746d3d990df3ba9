/*
 * pidfile — how the processes of simulated pods are found again: by a kubelet that restarted
 * (a real container outlives its kubelet) and by the supervisor sweeping up after a kubelet that
 * did not stop them.
 *
 * A pid file holds "PID STARTTIME\n", STARTTIME being field 22 of /proc/PID/stat (clock ticks since
 * boot), so a recycled PID is never taken for the process it once was. Each process leads its own
 * process group (the kubelet starts it with setsid), and is signalled as a group.
 */
#ifndef FG_SIM_PIDFILE_H
#define FG_SIM_PIDFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What /proc/PID/stat says of a process that the simulation and its benchmarks read. */
struct fg_sim_proc_stat {
    pid_t ppid;
    uint64_t utime, stime;        /* CPU time in clock ticks (sysconf(_SC_CLK_TCK) a second) */
    uint64_t starttime;           /* field 22: clock ticks after boot */
};

/* Reads pid's stat; false when the process does not exist. */
bool fg_sim_proc_stat(pid_t pid, struct fg_sim_proc_stat *out);
/* Field 22 of /proc/pid/stat; 0 when the process does not exist. */
uint64_t fg_sim_proc_starttime(pid_t pid);
/* Writes path for pid (atomically: a temporary file renamed). False when it cannot. */
bool fg_sim_pidfile_write(const char *path, pid_t pid);
/* The live process path names in *pid; false when the file is absent or malformed, or the process
 * it names is gone (or its PID now belongs to another). */
bool fg_sim_pidfile_alive(const char *path, pid_t *pid);
/* SIGKILLs the process group of every live pid file under dir/nodes/ * /pods/ * and removes the files. */
void fg_sim_pidfile_sweep(const char *dir);

#endif
