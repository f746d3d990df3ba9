/*
 * gradient — fast fragmentation gradients for the FGD-family policies (module-internal).
 *
 * The FGD score of a node is F(before) − F(after placing the pod), F being mix.h's fragmentation.
 * Recomputing F from scratch for every candidate GPU costs O(types × GPUs). Here the mix's GPU types
 * that can run on a model are grouped by (GPU milli, GPU count): a group's types differ only in CPU
 * request and weight, and on any node they share the count of GPUs they fit on and the idle compute
 * they cannot use (the small sum). Since mix.h sums F in integers, F can be summed in any order:
 *
 *   F = W · idle − Σ_groups [fit ≥ count] · W_cpu · (idle − small)
 *
 * with W the weight of the whole mix and W_cpu that of the group's types whose CPU request the node's
 * free CPU covers (all of them unless the node is short of CPU). Each node keeps, per group of its
 * model, the fit count and small sum, refreshed only when the node's version or the mix changes
 * (versions are unique across the cluster, so a slot reused by a new node is never read from its
 * predecessor's entries; the arrays grow with the cluster's slots, fg__grad_fit_slots). A
 * candidate placement then costs O(groups): only the GPUs it touches and the node's free CPU change.
 * On the `default` trace the 35 types (5 of them CPU-only, which only add to W · idle) make 12 groups.
 * Results equal fg_sched_frag exactly, which sums type by type in mix order (the unit tests compare
 * them with ==). A per-node memo (MEMO_WAYS entries, one per shape id modulo the ways) also keeps,
 * per pod shape, F(before) and F(after) of every candidate GPU until the node or the mix changes, so
 * a node that did not change since it last saw that shape costs a lookup. The memo is laid out way
 * by way (all nodes' entries for one way are adjacent): a cycle, which asks every node about one
 * shape, reads it as one stream (prefetched 8 entries ahead), and memory is touched only for the
 * ways of shapes actually seen. 128 ways: the `default` trace has 91 pod shapes, and with 64 ways the
 * 27 that shared a way evicted each other's entries, which made about 25 of fg_bench_sched_latency's
 * 3,000 decisions at 10,000 GPUs cold (2–3× a warm one). Each way costs 104 bytes per node once a
 * shape uses it: 13 MB at 10,000 GPUs for those 91 shapes, 59 MB at 50,000.
 * A sharing pod's candidates on one node (its distinct free GPUs) go through the groups two by two,
 * sharing each group's weight and counts (fg__grad_frag_after_each).
 */
#ifndef FG_SCHEDULER_POLICIES_GRADIENT_INT_H
#define FG_SCHEDULER_POLICIES_GRADIENT_INT_H

#include "scheduler/policies/mix.h"
#include "scheduler/policies/sigmoid_int.h"

/* The mix's GPU types of one GPU milli and count that allow a model: they share the fit count and small
 * sum on every node of it, and differ only in CPU request and weight. */
struct fg__grad_group {
    int gpu_milli, n_gpus;
    int64_t weight, cpu_max;        /* the members' Σ weight and largest CPU request */
    uint32_t first, n;              /* the members: fg__grad_model.members[first .. first + n) */
};

struct fg__grad_member {
    int64_t cpu_milli, weight;      /* groups list theirs in ascending CPU */
};

/* One model's groups for the mix generation gen (0: never built); capacity cap of each array. */
struct fg__grad_model {
    uint64_t gen;
    size_t n_groups, cap;
    struct fg__grad_group *groups;
    struct fg__grad_member *members;
};

struct fg__grad {
    const struct fg_sched_mix *mix; /* borrowed */
    uint64_t mix_gen;
    size_t n_slots, n_types;        /* per-node arrays cover n_slots node slots */
    uint64_t *node_ver, *node_gen;  /* per node: version + 1 (0: none) and mix generation cached */
    int *idle;                      /* per node: Σ free milli */
    int *fit, *small;               /* per node × group of its model */
    int64_t weight_total;           /* Σ of the mix's weights (mix.h's fixed point) */
    struct fg__grad_model *models;  /* FG_SCHED_MAX_MODELS, by model index */
    double *frag;                   /* per node: F */
    struct fg__grad_memo *memo;     /* MEMO_WAYS × n_slots: candidate evaluations across cycles */
    struct fg__grad_shape *shapes;  /* by id */
    uint32_t n_shapes, cap_shapes;
    uint32_t *shape_index;          /* open addressing over 2 · cap_shapes slots: id + 1, 0 = empty */
    uint32_t last_shape;            /* id of the shape looked up last (a cycle asks once per node) */
    struct fg__sigmoid sigmoid;     /* the score's steps (sigmoid_int.h), set up by the policies that score */
};

/* A pod shape as the gradients see it: CPU as scored (0 → 100), per-GPU memory, milli, GPU count,
 * sharing mode. Shapes get small ids in order of first appearance (the memo's way is id % ways, so
 * the first MEMO_WAYS shapes never evict one another). */
struct fg__grad_shape {
    int64_t cpu_milli, gpu_mem_mib;
    int gpu_milli, n_gpus, sharing;
};

/* What a pod shape's placement on a node evaluates to, remembered while the node's version, the
 * mix generation and the shape stay the same: F(before) and, per candidate, F(after). */
struct fg__grad_memo {
    uint64_t version_plus1, gen;
    uint32_t shape;                  /* shape id */
    int n;                           /* candidates: -1 gpu = the pod's default GPU choice */
    int8_t gpu[FG_SCHED_MAX_GPUS];   /* before the doubles: a hit on one candidate reads 48 bytes */
    double before;
    double after[FG_SCHED_MAX_GPUS];
};

/* The memo entry for node i and pod p (cpu as scored), and whether it is valid; a miss returns the
 * entry to refill (already keyed), NULL when p cannot be remembered (dedicated isolation). */
struct fg__grad_memo *fg__grad_memo_get(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i,
                                        const struct fg_sched_pod *p, int64_t cpu, bool *valid);

/* One GPU changing its free compute from `before` to `after`. */
struct fg__grad_change {
    int before, after;
};

void fg__grad_init(struct fg__grad *gr, const struct fg_sched_mix *mix);
void fg__grad_cleanup(struct fg__grad *gr);
/* Covers node slots 0..n_slots (grown to twice the slots it had at least, so that nodes added one
 * by one rarely grow it; the first call sizes it exactly). New slots start uncached; growing
 * forgets the memo. Every other function takes a slot below n_slots. */
void fg__grad_fit_slots(struct fg__grad *gr, size_t n_slots);
/* The mix changed (contents or address): every node's cache is stale. */
void fg__grad_set_mix(struct fg__grad *gr, const struct fg_sched_mix *mix);
/* F of node i, refreshing its cache when stale. */
double fg__grad_frag(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i);
/* F of node i after its free CPU drops by cpu and the listed GPUs change. */
double fg__grad_frag_after(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i, int64_t cpu,
                           const struct fg__grad_change *ch, int n_ch);
/* The candidates of a sharing pod on node i: out[j] = fg__grad_frag_after of a GPU with free[j] free
 * compute giving up milli (and the node cpu), for j < n, bit for bit; candidates go two by two, each
 * pair in one pass over the groups. */
void fg__grad_frag_after_each(struct fg__grad *gr, const struct fg_sched_cluster *c, size_t i, int64_t cpu,
                              int milli, const int *free, int n, double *out);

#endif
