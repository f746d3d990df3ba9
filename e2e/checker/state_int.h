/*
 * state_int — what the checker's state keeps, shared by its three files: state.c (the tables, the
 * violations and the queries), state_pods.c (reading pods into the records below) and state_rules.c
 * (judging the invariants on them).
 *
 * Every string a record holds is its own copy. A GPU is never forgotten, so that the count of GPUs
 * seen is a count over the whole run; its members are the tenants that count against it now.
 */
#ifndef FG_CHECKER_STATE_INT_H
#define FG_CHECKER_STATE_INT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2e/checker/state.h"
#include "reconcilers/allocation.h"

struct fg__chk_tenant;

struct fg__chk_gpu {
    char *key;                          /* "node/uuid" */
    char *node, *uuid;
    struct fg__chk_tenant **members;
    size_t n, cap;
    bool over_compute, over_memory;     /* a violation is open */
};

struct fg__chk_capacity {
    char *name;
    char *node, *uuid;                  /* NULL: unscheduled, not announced */
    int64_t memory_mib;                 /* -1: not announced, or unreadable */
    bool live;
    bool running, terminating;          /* why it is not live, for messages */
    char *problem;                      /* the unreadable annotation last reported */
};

struct fg__chk_tenant {
    char *key;                          /* "namespace/name" */
    char *uid;
    char *node, *uuid, *capacity;       /* as the pod says now; NULL when absent */
    char *first_node, *first_uuid;      /* where it was first seen bound; NULL before */
    bool running, counts, alloc_ok;
    struct fg_allocation alloc;
    struct fg__chk_gpu *gpu;            /* where it counts now; NULL: nowhere */
    char *problem;                      /* the unreadable annotation last reported */
    char *moved_to;                     /* the "node/uuid" last reported as a change */
    bool unbacked, unbacked_reported;   /* Running without a live capacity pod; reported */
    uint64_t unbacked_since_ns;
};

struct fg_checker_state {
    char *capacity_ns;
    uint64_t grace_ns;
    size_t keep;
    void (*report)(void *ud, const char *msg);
    void *report_ud;
    struct lh_table *tenants;           /* key -> struct fg__chk_tenant */
    struct lh_table *capacity;          /* name -> struct fg__chk_capacity */
    struct lh_table *gpus;              /* key -> struct fg__chk_gpu */
    struct lh_table *nodes_gone;        /* names of Nodes seen deleted (and not seen again) */
    size_t waiting;                     /* tenants with unbacked set */
    bool listing;                       /* a relist is being taken in: judge nothing */
    struct fg_checker_stats stats;
    char **messages;
    size_t nmessages;
};

/* A violation message being written: appends past the end are cut, with "..." to say so. */
struct fg__chk_msg {
    char text[FG_CHECKER_MSG_MAX];
    size_t len;
};
void fg__chk_msg_add(struct fg__chk_msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* state.c */
void fg__chk_tenant_free(struct fg__chk_tenant *t);
void fg__chk_capacity_free(struct fg__chk_capacity *c);
void fg__chk_violation(struct fg_checker_state *s, const char *msg);
/* The GPU (node, uuid), made on first ask. */
struct fg__chk_gpu *fg__chk_gpu_get(struct fg_checker_state *s, const char *node, const char *uuid);
struct fg__chk_gpu *fg__chk_gpu_find(struct fg_checker_state *s, const char *node, const char *uuid);
void fg__chk_gpu_join(struct fg__chk_gpu *g, struct fg__chk_tenant *t);
void fg__chk_gpu_leave(struct fg__chk_gpu *g, struct fg__chk_tenant *t);
/* Replaces *dst with a copy of src (NULL frees it); true when the value changed. */
bool fg__chk_set_str(char **dst, const char *src);

/* state_rules.c */
void fg__chk_check_gpu(struct fg_checker_state *s, struct fg__chk_gpu *g);
void fg__chk_check_backing(struct fg_checker_state *s, struct fg__chk_tenant *t, uint64_t now_ns);
/* Every tenant naming capacity pod `name`, at now_ns. */
void fg__chk_check_backing_of(struct fg_checker_state *s, const char *name, uint64_t now_ns);
/* The tenant's node and GPU against those it was first bound to. */
void fg__chk_check_identity(struct fg_checker_state *s, struct fg__chk_tenant *t);
/* Reports problem (a pod's unreadable annotation) unless it is the one last reported in *last. */
void fg__chk_check_problem(struct fg_checker_state *s, char **last, const char *problem);

#endif
