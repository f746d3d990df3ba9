/*
 * plugin_int — the device plugin's state, shared by its files: plugin.c (life, registration, GPUs,
 * ListAndWatch), allocate.c (Allocate, GetPreferredAllocation, the audit). Loop thread only, except
 * `incoming`, which the exporter's sampler thread writes under incoming_mu.
 */
#ifndef FG_DEVICEPLUGIN_PLUGIN_INT_H
#define FG_DEVICEPLUGIN_PLUGIN_INT_H

#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/metrics.h"
#include "nodeagent/deviceplugin/admission.h"
#include "nodeagent/deviceplugin/enforcer.h"
#include "reconcilers/grant_keys.h"
#include "nodeagent/deviceplugin/plugin.h"
#include "nodeagent/deviceplugin/slots.h"
#include "nodeagent/grpc/client.h"
#include "nodeagent/grpc/deviceplugin.pb-c.h"
#include "nodeagent/grpc/server.h"
#include "operator/cache/informer.h"

#define FG_DP_GPUS_MAX 64
#define FG_DP_WATCHERS_MAX 8
#define FG_DP_PENDING_MAX 16
/* Refusals whose pod the plugin could not name, kept until that pod is seen failed or for the TTL. */
#define FG_DP_UNSEEN_MAX 16
#define FG_DP_UNSEEN_TTL_NS (10 * FG_NS_PER_S)
/* Said in such a refusal, which the kubelet copies into the status of the pod it fails. */
#define FG_DP_UNSEEN_MARK "refused unseen: this node's pods are not all seen yet"

/* A held call: an Allocate (req), or a GetPreferredAllocation (pref), which also waits to know the
 * pod, so that the kubelet takes slots of the GPU the reply will name. */
struct fg__dp_pending {
    struct fg_grpc_call *call;
    V1beta1__AllocateRequest *req;
    V1beta1__PreferredAllocationRequest *pref;
    uint64_t start_ns, deadline_ns;
};

struct fg__dp {
    struct fg_dp_opts o;
    char dir[256], socket_path[300], kubelet_path[300];
    struct fg_kube_loop *loop;
    struct event_base *base;
    struct fg_informer *pods;
    struct fg_grant_watch *keys;
    struct fg_dp_enforcer *enforcer;
    enum fg_dp_form form;

    pthread_mutex_t incoming_mu;
    struct fg_dp_gpu incoming[FG_DP_GPUS_MAX];
    size_t nincoming;
    bool incoming_new;

    struct fg_dp_gpu gpus[FG_DP_GPUS_MAX];
    size_t ngpus;
    bool gpus_known;

    struct fg_grpc_server *server;
    ino_t socket_ino;
    struct fg_grpc_call *watchers[FG_DP_WATCHERS_MAX];
    size_t nwatchers;

    struct fg_grpc_client *kubelet;
    ino_t kubelet_ino;
    bool registered, registering;
    uint64_t next_register_ns;
    char problem[FG_ERRMSG_MAX]; /* the registration or serving problem last logged, "" when none */

    struct fg_dp_ledger ledger;
    struct { char uid[64]; uint64_t seq; } *seen; /* pods in the order the watch showed them */
    size_t nseen, seen_cap;
    uint64_t next_seq;
    struct fg__dp_pending pending[FG_DP_PENDING_MAX];
    size_t npending;
    /* Refusals made while the plugin could not tell which pod the kubelet was admitting (nothing it
     * knew of was waiting: its watch lags the kubelet's): the kubelet failed a pod that this node's
     * watch may show waiting later, and serving the first waiting pod then would hand that failed
     * pod's grant to the next pod admitted, and every reply after it to the pod after its own. While
     * one is not accounted for (the failed pod seen, its status naming FG_DP_UNSEEN_MARK), nothing is
     * served. Oldest first. */
    uint64_t unseen_ns[FG_DP_UNSEEN_MAX];
    size_t nunseen;
    char unseen_failed[FG_DP_UNSEEN_MAX][64]; /* UIDs of failed pods already counted (a ring) */
    size_t nunseen_failed;

    struct fg_grpc_client *podres;
    bool auditing, audit_again;
    bool audited;               /* an audit ran (or could not read the kubelet) since the agent started:
                                   the ledger knows every pod the kubelet gave a slot before */
    uint64_t audit_at_ns, next_periodic_audit_ns;
    bool podres_warned;

    struct event *tick;
    bool running;

    struct fg_counter *granted, *refused, *invalid, *reg_ok, *reg_failed;
    struct fg_histogram *allocate_seconds;
};

/* A pod's place in the order this node's watch showed pods bound (UINT64_MAX: not seen). */
uint64_t fg__dp_seq(void *ud, json_object *pod);
/* This node's pods that may be waiting for admission, parsed: those that ask for a share and are not
 * in the ledger (the others are skipped before parsing: a decision costs what the waiting pods cost,
 * however many tenants run). fg__dp_view_cleanup puts them. */
void fg__dp_view_waiting(struct fg__dp *p, struct fg_dp_node_view *v);
/* The pods named by the holdings (by namespace/name), parsed, for an audit. */
void fg__dp_view_holders(struct fg__dp *p, const struct fg_dp_holding *h, size_t nh, struct fg_dp_node_view *v);
void fg__dp_view_cleanup(struct fg_dp_node_view *v);

/* allocate.c */
void fg__dp_allocate(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud);
void fg__dp_preferred(struct fg_grpc_call *call, const uint8_t *req, size_t len, void *ud);
/* A held call's kubelet went away. */
void fg__dp_held_gone(struct fg_grpc_call *call, void *ud);
/* Decides every held call that can be decided now (unless an audit is running). */
void fg__dp_decide_pending(struct fg__dp *p);
/* Starts an audit now (or right after the running one). */
void fg__dp_audit(struct fg__dp *p);
/* Refuses every held call (the plugin stops). */
void fg__dp_pending_abort(struct fg__dp *p);
/* A pod of this node seen Failed (pod parsed): accounts for one refusal made unseen when its status
 * says it was failed by one. */
void fg__dp_unseen_failed(struct fg__dp *p, json_object *pod);

#endif
