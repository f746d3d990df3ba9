/*
 * rightsizer_int — what the rightsizer's files share (rightsizer.h says what it does): the component,
 * one tracked GPUWorkload, and the steps of an interval each file performs.
 *   rightsizer.c         setup, start and stop, samples in, the interval's walk over GPUWorkloads
 *   rightsizer_pods.c    a workload's pods: OOM kills, the GPUs' memory, and Auto's rolls
 *   rightsizer_write.c   GPUWorkload status, Events, GPUCheckpoints and their collection
 *   rightsizer_status.c  the status members and what it reads of a pod, computed without I/O
 * Everything runs on the kube loop thread.
 */
#ifndef FG_RECONCILERS_RIGHTSIZER_INT_H
#define FG_RECONCILERS_RIGHTSIZER_INT_H

#include <json-c/json.h>
#include <json-c/linkhash.h>

#include "base/metrics.h"
#include "operator/cache/informer.h"
#include "operator/cache/store.h"
#include "operator/kube/loop.h"
#include "reconcilers/rightsizer.h"
#include "rightsizing/recommender.h"

#define RS_COMPONENT "rightsizer"

/* A pod's last sample and restarts, by uid, for out-of-memory kills. */
struct rs_pod {
    double memory_mib;          /* < 0: none yet */
    int64_t restarts;           /* -1: not looked at yet */
    bool seen;                  /* met in this interval's walk */
};

struct rs_workload {
    char key[512];              /* "ns/name" of the GPUWorkload */
    char ns[64], name[254];
    struct fg_rec_state st;
    struct fg_rec_opts o;
    bool state_ok;              /* st was made (the policy's window allows a state) */
    enum fg_update_mode mode;
    bool dirty;                 /* changed since last saved */
    int64_t saved_ms;           /* when last saved (0: never by this replica) */
    int64_t usage_written_ms;   /* when status.usage was last written (0: never by this replica) */
    int64_t gpu_memory_mib;     /* the smallest GPU its pods were seen on (0: none seen) */
    bool seen;                  /* its GPUWorkload was met in this interval's walk */
    bool evicting;              /* an eviction is in flight */
    const char *reason;         /* the last decision's reason (static) */
};

struct fg_rightsizer {
    struct fg_rightsizer_opts o;
    struct fg_kube_loop *loop;
    struct fg_kube_client *client;
    struct event_base *base;
    struct event *tick_ev;
    bool running;
    struct fg_informer *pods_inf, *gpuworkloads_inf, *policies_inf, *checkpoints_inf;
    struct lh_table *workloads;     /* key → struct rs_workload * */
    struct lh_table *pods;          /* pod uid → struct rs_pod * */
    struct fg_counter *samples, *dropped, *refused[FG_REC_REFUSALS], *changes, *ooms, *evictions, *evictions_refused,
        *status_writes, *checkpoint_writes, *checkpoint_errors, *checkpoints_restored, *checkpoints_collected;
    struct fg_gauge *last_round;    /* Unix time of the last interval's walk */
};

/* The tracked workload for ns/name, made (and restored from its checkpoint) when absent; NULL when
 * no GPUWorkload of that name is cached. */
struct rs_workload *rs_workload_get(struct fg_rightsizer *r, const char *ns, const char *name);
struct rs_pod *rs_pod_get(struct fg_rightsizer *r, const char *uid);

/* rightsizer_pods.c: walks w's pods (notes OOM kills and GPU memory); in Auto mode evicts one whose
 * allocation is not the applied one when the workload is settled. */
void rs_pods_walk(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, int64_t now_ms);

/* rightsizer_write.c */
void rs_write_status(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, int64_t now_ms);
void rs_emit(struct fg_rightsizer *r, json_object *gw, const char *type, const char *reason, const char *message);
void rs_checkpoint_save(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, int64_t now_ms);
/* Restores w->st from its cached GPUCheckpoint, if any. */
void rs_checkpoint_restore(struct fg_rightsizer *r, struct rs_workload *w);
/* Deletes checkpoints whose GPUWorkload has been gone for the TTL. */
void rs_checkpoints_collect(struct fg_rightsizer *r, int64_t now_ms);

/* rightsizer_status.c: status.usage and status.recommendation (new objects). */
json_object *fg_rs_usage_json(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms);
json_object *fg_rs_recommendation_json(const struct fg_rec_state *s, const struct fg_rec_opts *o, int64_t now_ms,
                                       const char *reason);
/* Whether pod's Ready condition is True (false without one). */
bool fg_rs_pod_ready(json_object *pod);
/* The pod's container restarts, summed; *oom_killed when a container last ended OOMKilled. A pod
 * without statuses yet has none. */
int64_t fg_rs_pod_restarts(json_object *pod, bool *oom_killed);

/* Whether a checkpoint last updated at `updated` (RFC 3339, NULL: unknown) whose GPUWorkload is gone
 * is due for collection at now_ms. */
bool fg_rs_checkpoint_expired(const char *updated, int64_t now_ms, int64_t ttl_ms);

#endif
