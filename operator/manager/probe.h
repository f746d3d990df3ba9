/*
 * probe — a leader-only diagnostic: while this replica leads, append "<identity> <monotonic ns>\n"
 * to a file every PROBE period, each line one write(2) with O_APPEND.
 *
 * Replicas on one machine (CLOCK_MONOTONIC is machine-wide) that share the file leave a record in
 * which any two leaders at once would show as interleaved identities; `fracgpu operator
 * --leader-probe FILE` turns it on to check leader election on a machine, and the end-to-end tests
 * read the file after freezing, killing and stopping leaders. Each line is written only after
 * fg_manager_is_leader said yes at the time the line carries.
 */
#ifndef FG_MANAGER_PROBE_H
#define FG_MANAGER_PROBE_H

#include "base/err.h"
#include "operator/manager/manager.h"

/* Declares the probe on m (a leader-only runnable writing to path, which is copied). */
enum fg_err fg_leader_probe_setup(struct fg_manager *m, const char *path, char *errmsg) FG_MUST_USE;

#endif
