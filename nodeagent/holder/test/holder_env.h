/*
 * holder_env — what the capacity holder's process tests share: a cluster of one (the harness's test
 * API server), a fake NVML state and an MPS root in one scratch directory, capacity pods, and
 * `fracgpu capacity-holder` processes started, watched through their logs and stopped with a signal.
 */
#ifndef FG_NODEAGENT_HOLDER_TEST_HOLDER_ENV_H
#define FG_NODEAGENT_HOLDER_TEST_HOLDER_ENV_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "e2e/tests/harness.h"

#define HOLDER_NS "fracgpu-system"

struct holder_env {
    struct fg_harness h;
    char dir[64];          /* the fake NVML's state.json, the MPS root, the logs */
    char mps_root[96];
};

struct holder_proc {
    pid_t pid;
    char log[160];
};

void holder_env_start(struct holder_env *e);
void holder_env_stop(struct holder_env *e);

/* Creates capacity pod `name` in HOLDER_NS with the annotations (a JSON object's members, may be ""). */
void holder_pod_create(struct holder_env *e, const char *name, const char *annotations);
/* The pod's annotation `key` (caller frees), NULL when absent or the pod is not there. */
char *holder_pod_annotation(struct holder_env *e, const char *name, const char *key);

/* Starts `fracgpu capacity-holder` for pod `name` with the extra arguments (NULL-terminated), logging
 * to <dir>/<name>-<n>.log; --mps-health-interval 200ms and --listen 127.0.0.1:0 unless given. */
void holder_spawn(struct holder_env *e, struct holder_proc *p, const char *name, ...) __attribute__((sentinel));
/* Waits (at most timeout_ms) for the process to exit on its own; its exit status, -1 on timeout. */
int holder_wait_exit(struct holder_proc *p, unsigned timeout_ms);
/* SIGTERM, then the exit status; *elapsed_ms how long the exit took. SIGKILL and -1 after 10 s. */
int holder_term(struct holder_proc *p, unsigned *elapsed_ms);
/* Polls the log until it holds `text` (timeout_ms at most). */
bool holder_log_has(struct holder_proc *p, const char *text, unsigned timeout_ms);
/* The whole log (caller frees), for failure messages. */
char *holder_log(struct holder_proc *p);
/* The port of /readyz from the log (0 when it never appeared). */
unsigned holder_port(struct holder_proc *p);

/* The fake NVML's compute mode of GPU `uuid` as a process of the node sees it. */
int holder_compute_mode(const char *uuid);
/* The stand-in daemon's limits file for GPU uuid (NULL when no daemon runs). */
json_object *holder_mps_limits(struct holder_env *e, const char *uuid);

void holder_sleep_ms(unsigned ms);

#endif
