/*
 * kubelet — the simulated kubelets: one per instance of the simulated cloud, all in one process
 * (`component kubelets`), sharing one cache of every bound pod, as KWOK-style simulators do.
 *
 * kubelet_nodes.c  boots a node per instance: registers the Node (capacity, allocatable, labels,
 *                  taints, addresses, Ready), renews its Lease in kube-node-lease, reports status,
 *                  and removes the Node when the instance goes;
 * kubelet_pods.c   runs the pods bound to its nodes, one reconcile per pod: taken on, moved forward,
 *                  stopped within the grace period and deleted for good, its status written;
 * kubelet_admit.c  admission (OutOfcpu, OutOfmemory, OutOfpods, node affinity) and adoption;
 * kubelet_devices.c  the device manager: devices of extended resources given to containers, and
 *                  the device plugins that answer for them (kubelet_devices.h);
 * kubelet_nvidia.c the NVIDIA device plugin and container runtime of a GPU node: its GPUs'
 *                  UUIDs, nvidia.com/gpu, NVIDIA_VISIBLE_DEVICES, the NVML library;
 * kubelet_gpus.c   what the pods do on the GPUs: each container's GPUs and usage profile, and per
 *                  node the fake NVML state and proc tree (files) or a snapshot on demand (memory);
 * kubelet_containers.c  containers started, run, restarted with CrashLoopBackOff, completed, probed;
 * kubelet_proc.c   containers of fracgpu's own image as real processes of the built binary, with
 *                  their environment (kubelet_env.c) and volumes (kubelet_volumes.c);
 * kubelet_probe.c  HTTP and TCP probes against the pod's IP;
 * kubelet.c        the setup and the ticker that reaps processes and wakes pods whose timers fall due.
 *
 * Each node has a directory (<dir>/nodes/<node>/) standing for its host: its `proc`, kubelet
 * directories and NVIDIA libraries, which hostPath volumes map to, and on a GPU node `nvml/state.json`
 * (the fake NVML's state: its GPUs and their processes) — unless kubelet.gpuState is memory, where
 * nothing of the GPUs is written and a node's GPU use is a snapshot taken on demand; and pods/<namespace>_<name>_<uid>/
 * holding each pod's volumes, logs, kubeconfig and pid files. Each node owns a loopback network
 * 127.X.Y.0/24 (its own IP ends in .1), claimed machine-wide so that clusters running side by side
 * never share one; its pods get the other addresses, and a preloaded library
 * (podnet.c) makes a pod's process bind its own IP, so pods on one machine listen on the same port as
 * they would on a cluster.
 *
 * Locking: `mu` guards the node and pod tables; API calls, probes and the start of a real process
 * run outside it. A pod's state is changed only by the reconcile of its key (the work queue never
 * runs one key twice at once) and by the ticker's reaping, both under mu.
 */
#ifndef FG_SIM_KUBELET_H
#define FG_SIM_KUBELET_H

#include <json-c/json.h>
#include <json-c/linkhash.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2e/cluster/cloud.h"
#include "e2e/cluster/config.h"
#include "e2e/cluster/gpuusage.h"
#include "e2e/cluster/kubelet_devices.h"
#include "e2e/cluster/nvmlstate.h"
#include "e2e/cluster/runtime.h"
#include "e2e/cluster/simids.h"
#include "operator/cache/informer.h"
#include "operator/kube/client.h"
#include "operator/kube/resources.h"
#include "operator/manager/controllers.h"
#include "operator/manager/manager.h"
#include "reconcilers/podcontract.h"   /* FG_ANN_GPU_UUID: the GPU fracgpu's scheduler bound a pod to */

#define FG_SIM_MAX_CONTAINERS 16
#define FG_SIM_DIR_MAX 1024   /* the longest working directory path the kubelets take */
/* The kubelets' pod cache is indexed by spec.nodeName under this name. */
#define FG_SIM_INDEX_NODE "node"
#define FG_SIM_ANN_RUN_SECONDS "sim.fracgpu.io/run-seconds"
#define FG_SIM_ANN_EXIT_CODE "sim.fracgpu.io/exit-code"
/* "OOMKilled": a run that ends with a non-zero code is reported as the kernel's OOM killer ending it */
#define FG_SIM_ANN_EXIT_REASON "sim.fracgpu.io/exit-reason"
#define FG_SIM_ANN_GPU_UUID "sim.fracgpu.io/gpu-uuid"       /* a pod with no GPU request uses this GPU */

struct fg_sim_node {
    char name[FG_SIM_NODE_NAME_MAX];
    const struct fg_sim_group *group;
    char root[1280];              /* <dir>/nodes/<name> */
    char ip[16];                  /* 127.X.Y.1 */
    unsigned net;                 /* (X - 1) * 256 + Y */
    int claim_fd;                 /* holds net machine-wide (kubelet_nodes.c) */
    uint64_t boot_at_ns;          /* when the instance has booted (its kubelet registers) */
    bool registered, gone;
    char uid[64];                 /* the Node's uid, once registered */
    char since[40];               /* when it registered: its conditions' transition time */
    uint64_t next_lease_ns, next_status_ns;
    bool ip_used[256];            /* pod addresses handed out */
    struct fg_resources used;     /* what the pods admitted here request */
    bool adopted;                 /* the pods a previous run of the kubelets ran here are taken back */
    bool admitting;               /* a pod's device plugins are being asked (mu released meanwhile) */
    enum fg_sim_runtime runtime;
    struct fg_sim_devices devices;
    struct fg_resources capacity; /* its group's, plus the devices its plugins list (mu) */
    struct fg_sim_fracgpu *fracgpu;   /* fracgpu's device plugin's side of the node (kubelet_fracgpu.c) */
    struct played *played;            /* the same played in-process, with gpuState memory */
    unsigned ngpus;
    char gpu_uuid[FG_SIM_MAX_GPUS][FG_SIM_GPU_UUID_LEN + 1];
    bool gpus_written;            /* files: its state file is written, showing `shown` */
    struct fg_sim_gpu_process *shown;   /* files: the processes its state and proc tree show, by PID */
    size_t nshown;
    size_t slot;                  /* the ticker's index of it, while it collects processes */
};

enum fg_sim_container_state { CONTAINER_WAITING, CONTAINER_RUNNING, CONTAINER_TERMINATED };

struct fg_sim_container {
    char name[128];
    bool init, real;              /* an init container; a real process (fracgpu's image) */
    enum fg_sim_container_state state;
    const char *waiting_reason;   /* ContainerCreating, PodInitializing, CrashLoopBackOff, ... */
    int64_t started_ms, finished_ms;
    int exit_code;
    const char *terminated_reason;    /* Completed, Error, OOMKilled */
    unsigned restarts;
    uint64_t run_until_ns;        /* a simulated container ends then (0: never) */
    uint64_t restart_at_ns;       /* CrashLoopBackOff ends then */
    uint64_t backoff_ns;
    pid_t pid;                    /* a real process, while running */
    bool child;                   /* pid is our child (not adopted after a restart) */
    uint64_t starttime;           /* an adopted pid's start time (pidfile.h): a recycled pid is not it */
    bool exited;                  /* the ticker saw it exit; exit_code set */
    /* last state, for containerStatuses[].lastState */
    bool had_last;
    int last_exit_code;
    int64_t last_started_ms, last_finished_ms;
    const char *last_reason;
    /* probes */
    bool ready;
    unsigned ready_successes, ready_failures, live_failures;
    uint64_t next_readiness_ns, next_liveness_ns;
    uint32_t gpus;                /* bit i: it uses its node's GPU i (kubelet_gpus.c) */
};

struct fg_sim_pod {
    char key[600], uid[64];
    size_t slot;                  /* index in fg_sim_kubelets.pods_v */
    bool has_real;                /* some container is a real process: the pod has a directory */
    struct fg_sim_node *node;
    char ip[16];
    char dir[2048];               /* <node root>/pods/<namespace>_<name>_<uid> */
    struct fg_resources requests;
    bool admitted, rejected, started, killing;
    bool resize_pending;          /* its cpu or memory requests changed beyond what the node has room for */
    bool reject_written;          /* the rejection (Failed, reason, message) is in its status */
    char reject_reason[FG_RESOURCE_NAME_MAX + 8];   /* OutOfcpu, NodeAffinity, ... */
    char reject_message[512];
    uint64_t start_at_ns;         /* containers start then (the configured pod start delay) */
    uint64_t kill_deadline_ns;    /* SIGKILL after this while killing */
    int64_t start_ms;
    struct fg_sim_container containers[FG_SIM_MAX_CONTAINERS];
    size_t ncontainers, ninit;
    char last_status[8192];       /* the status last written, to skip writes that change nothing */
    const char *qos;              /* Guaranteed, Burstable or BestEffort */
    enum fg_sim_runtime runtime;  /* its node's: how its containers' IDs look */
    bool released;                /* it ended: its requests and devices are given back */
    struct fg_sim_grant *grants;  /* its containers' devices (kubelet_devices.h) */
    size_t ngrants;
    struct fg_sim_usage usage;    /* what it does with its GPUs */
    char problem[512];            /* annotations of the simulation that could not be used */
    bool problem_reported;
};

struct fg_sim_kubelets {
    struct fg_manager *m;
    const struct fg_sim_config *cfg;
    char dir[1024];               /* the cluster's working directory (FG_SIM_DIR_MAX) */
    char lib_dir[PATH_MAX];       /* beside the binary's directory: the fake NVML and podnet libraries */
    struct fg_kube_client *client;
    struct fg_informer *instances, *pods;
    struct fg_manager_controller *pod_ctl;
    char server[256];             /* the API server's URL, for pods' kubeconfigs and env */
    char ca_pem_path[PATH_MAX + 32];   /* its CA bundle on disk, "" without TLS */
    char token[512];
    pthread_mutex_t mu;
    struct fg_sim_node **nodes;
    size_t nnodes;
    unsigned next_net;            /* where the search for a free network number goes on */
    atomic_bool instances_changed;   /* set by the instances' informer, cleared by the ticker */
    bool orphans_retired;         /* the Nodes of instances terminated while the kubelets were down */
    struct fg_sim_pod **pods_v;   /* every pod, for the ticker */
    size_t npods;
    struct lh_table *pod_index;   /* key → pod */
    struct lh_table *arrivals;    /* key → (uint64_t *) the order the watch showed the pod bound */
    uint64_t next_arrival;
    struct fg_sim_trace_source traces;   /* usage profiles' traces */
};

/* kubelet_nodes.c */
/* Boots, heartbeats and retires nodes as the instances and timers say. Ticker thread, mu not held. */
void fg_sim_nodes_tick(struct fg_sim_kubelets *k);
/* The node called name, or NULL (mu held). */
struct fg_sim_node *fg_sim_node_find(struct fg_sim_kubelets *k, const char *name);
/* The next free pod address of node into ip (16 bytes); false when all are taken (mu held). */
bool fg_sim_node_take_ip(struct fg_sim_node *n, char ip[16]);
void fg_sim_node_release_ip(struct fg_sim_node *n, const char *ip);
/* Frees a node no longer listed, with what it holds (its network claim, devices, GPU files' state). */
void fg_sim_node_free(struct fg_sim_node *n);

/* kubelet_pods.c */
struct fg_reconcile_result fg_sim_pod_reconcile(void *ud, const char *key);
/* Reaps exited processes and enqueues their pods. Ticker thread, mu not held. */
void fg_sim_pods_tick(struct fg_sim_kubelets *k);
/* SIGKILLs the processes of the pods of node and detaches them from it; their next reconcile
 * forgets them. mu held. */
void fg_sim_pods_kill_all(struct fg_sim_kubelets *k, struct fg_sim_node *node);

/* kubelet_admit.c */
/* Whether node admits p's pod (its requests, one pod included, go to p->requests); if not, kube's
 * reason and message go to p->reject_reason and p->reject_message. mu held. */
bool fg_sim_pod_admit(struct fg_sim_node *node, json_object *pod, struct fg_sim_pod *p);
/* Takes over a pod a previous run of the kubelets admitted, from its status and pid files. mu held. */
void fg_sim_pod_adopt(struct fg_sim_pod *p, json_object *pod);
/* In-place resize (Kubernetes 1.33): an admitted pod whose cpu or memory requests changed gets them
 * when they fit the node (a decrease always does), its node's used resources following; otherwise
 * p->resize_pending says the resize waits. Returns whether the requests changed. Under the kubelets' lock. */
bool fg_sim_pod_resize(struct fg_sim_pod *p, json_object *pod);

/* kubelet_nvidia.c */
/* Gives a booting node its GPUs (UUIDs) and registers them as nvidia.com/gpu; with gpuState files
 * also the NVML library in its host directory. mu not held (the node is not listed yet). */
void fg_sim_nvidia_boot(struct fg_sim_kubelets *k, struct fg_sim_node *n);
/* With gpuState files, a registering node's host directory gets the NVML library, an empty proc
 * tree and its first NVML state. mu not held; the ticker thread's. */
void fg_sim_nvidia_install(struct fg_sim_kubelets *k, struct fg_sim_node *n);
/* The index of the GPU of n with uuid, or -1. */
int fg_sim_nvidia_gpu_index(const struct fg_sim_node *n, const char *uuid);
/* What NVIDIA_VISIBLE_DEVICES=devices gives a container on n, as the NVIDIA container runtime reads
 * it — all, none or void, or a list of UUIDs and indices — as a comma-separated list of UUIDs in out
 * (size bytes); false when it gives no GPU. */
bool fg_sim_nvidia_visible(const struct fg_sim_node *n, const char *devices, char *out, size_t size);

/* kubelet_fracgpu.c: fracgpu's device plugin on a GPU node with gpuState files, over the real
 * device-plugin gRPC (e2e/devicemanager on the manager's loop): the node's kubelet.sock and
 * PodResources socket, fracgpu.io/gpu-share admitted through the plugin's Allocate, the Node's
 * capacity following the slots it lists. */
/* At a node's boot (ticker thread, mu not held): the node's kubelet sockets. */
void fg_sim_fracgpu_boot(struct fg_sim_kubelets *k, struct fg_sim_node *n);
/* Every tick (ticker thread, mu not held): the slots the plugin lists become the node's capacity;
 * true when they changed (the Node's status is then due). */
bool fg_sim_fracgpu_tick(struct fg_sim_kubelets *k, struct fg_sim_node *n);
/* The node goes (its state retired until fg_sim_fracgpu_cleanup), or the kubelets stop (loop_running
 * false: the loop is stopped already, and so are the pod workers). */
void fg_sim_fracgpu_free(struct fg_sim_kubelets *k, struct fg_sim_node *n, bool loop_running);
/* Frees what nodes that went left behind; when the kubelets stop. */
void fg_sim_fracgpu_cleanup(void);
/* With gpuState memory, what a capacity pod's holder reports, written by the kubelet once the pod
 * runs (mu not held; a pod worker). */
void fg_sim_fracgpu_play_holder(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod);

/* kubelet_gpus.c */
/* Which GPUs of p's node each container of p uses (c->gpus) and p's usage profile (p->usage);
 * what cannot be used goes to p->problem. mu held. */
void fg_sim_gpus_pod_setup(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod);
/* The GPUs of the node called node and the processes running on them at wall time now_ms into out
 * (cleaned up with fg_sim_gpu_snapshot_cleanup); false for no such node. Takes mu. */
bool fg_sim_gpus_snapshot(struct fg_sim_kubelets *k, const char *node, int64_t now_ms, struct fg_sim_gpu_snapshot *out);
/* With gpuState files, writes node n's NVML state and proc tree as they are. mu not held; the
 * ticker thread's (nodes are freed there). */
void fg_sim_gpus_write_node(struct fg_sim_kubelets *k, struct fg_sim_node *n);
/* With gpuState files, brings every registered GPU node's files up to date: one pass over the pods,
 * and a node's files written only when its processes or their use changed. Use is sampled at
 * whole usage intervals, so that is at most once an interval unless GPU processes start or stop.
 * Ticker thread, mu not held. */
void fg_sim_gpus_tick(struct fg_sim_kubelets *k);
/* What the node's GPU files hold goes with the node. mu held or the node unlisted. */
void fg_sim_gpus_node_free(struct fg_sim_node *n);

/* kubelet_containers.c */
/* A probe due: container index, liveness or readiness, the Probe and the container's spec (both
 * borrowed from the pod). */
struct fg_sim_probe_job {
    size_t container;
    bool liveness;
    json_object *probe, *spec;
};
/* The containers of p from pod's spec, init containers first. */
void fg_sim_containers_set_up(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod);
/* Container i's spec (borrowed from pod). */
json_object *fg_sim_container_spec(const struct fg_sim_pod *p, json_object *pod, size_t i);
/* Moves every container forward at now; *next gets the earliest time something falls due; the
 * probes due go to jobs (2 per container at most). mu held. */
void fg_sim_containers_advance(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, uint64_t now,
                               uint64_t *next, struct fg_sim_probe_job *jobs, size_t *njobs);
/* Applies a probe's outcome. mu held. */
void fg_sim_containers_probed(struct fg_sim_pod *p, json_object *pod, const struct fg_sim_probe_job *j, bool ok,
                              uint64_t now);
/* The pod's phase, and whether its init containers are done and it is ready. */
const char *fg_sim_pod_phase(const struct fg_sim_pod *p, json_object *pod, bool *initialized, bool *ready);
/* *next = at when at is set and earlier than *next (or *next unset). */
void fg_sim_note_next(uint64_t *next, uint64_t at);

/* kubelet_status.c */
/* kube's QoS class of pod: Guaranteed, Burstable or BestEffort. */
const char *fg_sim_pod_qos(json_object *pod);
/* The status to report for p (a new tree): pod is the cached pod, whose other conditions are kept. */
json_object *fg_sim_pod_status(const struct fg_sim_pod *p, json_object *pod, const char *phase, bool initialized,
                               bool ready);

/* kubelet_proc.c */
/* Starts container c of pod (JSON) as a real process on node (a copy taken under mu: this runs
 * without it), its pid in *pid and its pid file written; FG_OK, or an error with the reason in
 * errmsg (the container then waits with reason CreateContainerError). */
enum fg_err fg_sim_proc_start(struct fg_sim_kubelets *k, const struct fg_sim_pod *p, const struct fg_sim_node *node,
                              json_object *pod, size_t c, pid_t *pid, char *errmsg) FG_MUST_USE;
/* Signals the container's process group; true when it was running. */
bool fg_sim_proc_signal(struct fg_sim_container *c, int sig);
/* The pid file of container c of pod p (a path of PATH_MAX bytes). */
void fg_sim_proc_pidfile(const struct fg_sim_pod *p, const struct fg_sim_container *c, char *path);

/* kubelet_probe.c */
/* Runs one probe (a Probe object) against the pod at ip: true on success. */
bool fg_sim_probe_run(json_object *probe, json_object *container, const char *ip);

#endif
