/*
 * rewrite — the two rewrites a container's command, args and env values go through before a
 * simulated kubelet runs them (kubelet_proc.c): kube's dependent-variable expansion, and the
 * simulated cluster's own mapping of mounted paths onto the node's host directories.
 *
 * Expansion follows kube: $(VAR) becomes the value of a variable defined before (the lookup says
 * which), $$ is a literal $, and a reference to an unknown variable, or an unterminated one, stays as
 * written. Path mapping replaces every mount's path where it stands as a path of its own — at the
 * start of the string or after '=', ':', ',' or a space, and followed by '/', ':', ',', '=' or the
 * end — by the mount's host path; the longest matching mount path wins, a trailing '/' on a mount
 * path does not count, and a mount of "/" holds every absolute path. Both return a new string.
 */
#ifndef FG_SIM_REWRITE_H
#define FG_SIM_REWRITE_H

#include <stddef.h>

struct fg_sim_mount {
    const char *container_path;
    const char *host_path;
};

/* The value of variable name defined so far, or NULL. */
typedef const char *fg_sim_lookup_fn(void *ud, const char *name);

char *fg_sim_expand(const char *in, fg_sim_lookup_fn *lookup, void *ud);
char *fg_sim_map_paths(const struct fg_sim_mount *mounts, size_t n, const char *in);

#endif
