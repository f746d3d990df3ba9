/*
 * hostdir — directories on this machine that stand for what the simulated cluster's hosts would
 * have on their own disks: the supervisor's working directory, each node's root and each pod's
 * files. One helper: make a directory and the ones above it, as `mkdir -p` does.
 */
#ifndef FG_SIM_HOSTDIR_H
#define FG_SIM_HOSTDIR_H

/* Makes path and every missing directory above it (mode 0755): 0, or -1 with errno set. A path
 * already there, as a directory, is success. The kubelet's callers leave a failure to whoever then
 * uses the directory, which says what went wrong with the file it wanted. */
int fg_sim_mkdir_p(const char *path);

#endif
