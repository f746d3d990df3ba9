/*
 * cgroup — which pod and container a host process belongs to, from /proc/<pid>/cgroup.
 *
 * The kubelet puts every container in a cgroup whose path names the pod UID and the container ID,
 * and the exporter reads that path back. The path's shape depends on the cgroup version (v1 lines
 * "N:controllers:/path", v2 "0::/path", or both in hybrid mode), the cgroup driver (cgroupfs:
 * ".../kubepods/burstable/pod<uid>/<id>"; systemd: ".../kubepods-burstable-pod<uid_with_underscores>.slice/
 * cri-containerd-<id>.scope"), the runtime (containerd "cri-containerd-<id>.scope" and
 * "...slice:cri-containerd:<id>", CRI-O "crio-<id>.scope" — never its conmon "crio-conmon-<id>.scope" —,
 * docker "docker-<id>.scope" or a bare ID), and where the reader sits: kind nests the node's own
 * hierarchy under another one, and a reader in a cgroup namespace sees paths relative to its root
 * ("/../../kubepods..."). So the parser does not anchor on a prefix: it looks in each path for the
 * component that carries the pod UID and takes the container ID from the component after it.
 *
 * Only the text is trusted as far as it validates: a UID must be 32 hex digits or a dashed UUID, an
 * ID 12 to 128 hex digits. Files are read with a size cap. Ownership: results are copied into the
 * caller's struct.
 */
#ifndef FG_EXPORTER_CGROUP_H
#define FG_EXPORTER_CGROUP_H

#include <stddef.h>

#include "base/err.h"

struct fg_cgroup_ident {
    char pod_uid[40];         /* dashed, as in metadata.uid */
    char container_id[132];   /* bare ID, as after "containerd://" in containerStatuses; "" if unknown */
};

/* Parses a cgroup file's text. FG_OK with the pod UID (and the container ID where the path has
 * one); FG_E_NOT_FOUND_LOCAL for well-formed text naming no pod (a host process); FG_E_PARSE with
 * the offending line when no line has the cgroup format. */
enum fg_err fg_cgroup_parse(const char *text, size_t len, struct fg_cgroup_ident *out, char *errmsg) FG_MUST_USE;

/* Reads <proc_root>/<pid>/cgroup and parses it. FG_E_IO with the reason when the file cannot be read
 * (a process that exited, a permission error); otherwise as fg_cgroup_parse. */
enum fg_err fg_cgroup_read_pid(const char *proc_root, unsigned pid, struct fg_cgroup_ident *out,
                               char *errmsg) FG_MUST_USE;

#endif
