/*
 * selfpath — where this program's own files are: the test API server, fracgpu and the libraries
 * pods load are built beside fracgpu-sim-cluster.
 */
#ifndef FG_SIM_SELFPATH_H
#define FG_SIM_SELFPATH_H

#include <stddef.h>

/* This executable's path (name NULL), or name beside it ("fracgpu", "../lib"), into out. */
void fg_sim_self_path(char *out, size_t size, const char *name);

#endif
