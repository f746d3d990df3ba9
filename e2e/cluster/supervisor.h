/*
 * supervisor — the state of `fracgpu-sim-cluster`'s supervisor, shared by its two files:
 * supervisor.c (the children it runs and keeps running, readiness, the main loop) and
 * supervisor_options.c (the command line and the working directory). Internal to the supervisor.
 */
#ifndef FG_SIM_SUPERVISOR_H
#define FG_SIM_SUPERVISOR_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "e2e/cluster/config.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/client.h"

#define FG_SIM_MAX_CHILDREN (FG_SIM_NCOMPONENTS + 1)

struct fg_sim_child {
    char name[32];
    char *argv[16];
    pid_t pid;
    uint64_t restart_at_ns;     /* when to start again (0: running or not wanted) */
    uint64_t backoff_ns;
    uint64_t started_ns;        /* when it was last started */
    unsigned restarts;
};

struct fg_sim_supervisor {
    struct fg_sim_config cfg;
    char dir[1024], kubeconfig[PATH_MAX], config_path[PATH_MAX];
    char apiserver_bin[PATH_MAX], self[PATH_MAX];
    const char *log_level;
    struct fg_sim_child children[FG_SIM_MAX_CHILDREN];
    size_t nchildren;
    unsigned port;
    int apiserver_out;          /* the API server's stdout, kept open (it prints one line) */
    struct fg_kube_client *client;
    uint64_t ready_timeout_ns;
};

/* Reads the command line into s (the config loaded, the working directory made): 0 to go on, -1
 * after --help, else the exit status, with the reason on stderr. */
int fg_sim_supervisor_parse(struct fg_sim_supervisor *s, int argc, char **argv);
/* Writes the config every part reads (config.json) and makes logs/ in the working directory. */
enum fg_err fg_sim_supervisor_write_config(struct fg_sim_supervisor *s, char *errmsg) FG_MUST_USE;

#endif
