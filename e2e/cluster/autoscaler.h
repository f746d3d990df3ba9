/*
 * autoscaler — the simulated cluster-autoscaler's state and the pieces its files share:
 * autoscaler.c (the view of one scan, the loop), autoscaler_up.c (scale-up) and
 * autoscaler_down.c (scale-down). Internal to the autoscaler.
 */
#ifndef FG_SIM_AUTOSCALER_H
#define FG_SIM_AUTOSCALER_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <json-c/linkhash.h>

#include "e2e/cluster/cloud.h"
#include "e2e/cluster/cm.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/resources.h"

#define FG_SIM_AUTOSCALER_NAME "cluster-autoscaler"
#define FG_SIM_TO_BE_DELETED "ToBeDeletedByClusterAutoscaler"
#define FG_SIM_SAFE_TO_EVICT "cluster-autoscaler.kubernetes.io/safe-to-evict"
#define FG_SIM_AUTOSCALER_MAX_TRACKED 4096

struct fg_sim_unneeded {
    char node[FG_SIM_NODE_NAME_MAX];
    int64_t since_ms;
};

struct fg_sim_autoscaler {
    const struct fg_sim_config *cfg;
    struct fg_kube_client *client;
    struct fg_sim_cache pods, nodes, instances, daemonsets;
    int64_t last_scale_up_ms;
    struct fg_sim_unneeded unneeded[FG_SIM_AUTOSCALER_MAX_TRACKED];
    size_t nunneeded;
    struct lh_table *told;       /* uids of the pending pods told NotTriggerScaleUp (keys owned) */
};

/* The view of one scan. */
struct fg_sim_bin {
    struct fg_resources free;
};

/* A node already in the cluster, Ready and schedulable, and what its pods leave of it. */
struct fg_sim_node_room {
    json_object *node;           /* borrowed from the scan's list */
    struct fg_resources free;
};

struct fg_sim_group_view {
    const struct fg_sim_group *g;
    json_object *tmpl;           /* the template node */
    struct fg_resources capacity;   /* of a fresh node, less its daemon pods */
    long size;                   /* instances */
    struct fg_sim_bin *upcoming; /* instances not registered yet */
    size_t nupcoming;
};

/* Does pod fit node (a template or a real one) with `room` left? *why names the first thing that
 * does not, in cluster-autoscaler's words. */
bool fg_sim_autoscaler_fits(json_object *pod, json_object *node, const struct fg_resources *room, const char **why);
/* Takes what pod requests (and one pod) from room. */
void fg_sim_autoscaler_take(struct fg_resources *room, json_object *pod);
/* Emits an Event on obj (of kind `kind`) from cluster-autoscaler; best effort. */
void fg_sim_autoscaler_event(struct fg_sim_autoscaler *a, json_object *obj, const char *kind, const char *type,
                             const char *reason, const char *message);

/* Scale-up for the pods that cannot be scheduled (autoscaler_up.c); rooms are the nodes already
 * there, for the pods that will fit on them once the scheduler tries again. */
void fg_sim_autoscaler_scale_up(struct fg_sim_autoscaler *a, struct fg_sim_group_view *views, size_t nviews,
                                struct fg_sim_node_room *rooms, size_t nrooms, json_object *pods);
/* Scale-down of empty nodes (autoscaler_down.c). */
void fg_sim_autoscaler_scale_down(struct fg_sim_autoscaler *a, struct fg_sim_group_view *views, size_t nviews,
                                  json_object *nodes, json_object *pods);

#endif
