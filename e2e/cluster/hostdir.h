/*
 * hostdir — paths on this machine: directories that stand for what the simulated cluster's hosts
 * would have on their own disks (the supervisor's working directory, each node's root and each
 * pod's files), made as `mkdir -p` makes them; and where this program's own files are (the test
 * API server, fracgpu and the libraries pods load are built beside it).
 */
#ifndef FG_SIM_HOSTDIR_H
#define FG_SIM_HOSTDIR_H

#include <stddef.h>

/* Makes path and every missing directory above it (mode 0755): 0, or -1 with errno set. A path
 * already there, as a directory, is success. The kubelet's callers leave a failure to whoever then
 * uses the directory, which says what went wrong with the file it wanted. */
int fg_sim_mkdir_p(const char *path);

/* This executable's path (name NULL), or name beside it ("fracgpu", "../lib"), into out. */
void fg_sim_self_path(char *out, size_t size, const char *name);

#endif
