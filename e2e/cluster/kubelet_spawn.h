/*
 * kubelet_spawn — what the kubelet builds before it starts a container's process: the plan
 * (argv, env, mounts, working directory, log), filled by three files with one job each:
 * kubelet_env.c (the environment), kubelet_volumes.c (volumes and the paths they map) and
 * kubelet_proc.c (the command line and the process itself). Internal to the simulated kubelet.
 */
#ifndef FG_E2E_CLUSTER_KUBELET_SPAWN_H
#define FG_E2E_CLUSTER_KUBELET_SPAWN_H

#include <limits.h>
#include <stddef.h>

#include <json-c/json.h>

#include "base/err.h"
#include "e2e/cluster/kubelet.h"

#define FG_SIM_MAX_ENV 256
#define FG_SIM_MAX_ARGS 128
#define FG_SIM_MAX_MOUNTS 32

struct fg_sim_spawn_mount {
    const char *container_path;   /* borrowed from the pod */
    char host[PATH_MAX];
};

struct fg_sim_spawn {
    const struct fg_sim_pod *p;
    size_t container;                /* index in p->containers */
    const struct fg_sim_node *node;  /* the pod's node, as it was when the start began */
    char *argv[FG_SIM_MAX_ARGS + 1];
    size_t argc;
    char *env[FG_SIM_MAX_ENV + 1];   /* "NAME=value" */
    size_t nenv;
    struct fg_sim_spawn_mount mounts[FG_SIM_MAX_MOUNTS];
    size_t nmounts;
    char workdir[PATH_MAX];
    char log[PATH_MAX];
    char *errmsg;
};

/* The container's environment, in the order kube builds it (kubelet_env.c). */
enum fg_err fg_sim_spawn_env(struct fg_sim_kubelets *k, json_object *pod, json_object *spec, struct fg_sim_spawn *s);

/* in with its $(VAR) references expanded from the environment built so far; caller frees. */
char *fg_sim_spawn_expand(struct fg_sim_spawn *s, const char *in);

/* A downward-API field of the pod (metadata.name, metadata.labels['k'], status.podIP, ...), or NULL. */
const char *fg_sim_pod_field(json_object *pod, const char *path, const struct fg_sim_spawn *s);

/* A ConfigMap's or Secret's data (a Secret's values decoded) as a new object, or NULL with errmsg set. */
json_object *fg_sim_read_data(struct fg_sim_kubelets *k, bool secret, const char *ns, const char *name,
                              char *errmsg);

/* The container's volume mounts, each volume filled at its host path (kubelet_volumes.c). */
enum fg_err fg_sim_spawn_volumes(struct fg_sim_kubelets *k, json_object *pod, json_object *spec,
                                 struct fg_sim_spawn *s);

/* The bearer token the pod's processes present: the cluster's own when it has one; else one naming
 * the pod's ServiceAccount, system:serviceaccount:NS:NAME, which the test API server takes as that
 * identity in its audit log (it authenticates nothing). Into out (size > 0). */
void fg_sim_pod_token(const struct fg_sim_kubelets *k, json_object *pod, char *out, size_t size);

/* in with every mount path in it rewritten to its host path; caller frees. */
char *fg_sim_spawn_map_paths(const struct fg_sim_spawn *s, const char *in);

#endif
