/*
 * allocation — how much of a GPU a workload's next pod gets, decided without I/O.
 *
 * An allocation is compute in milli (1000 = a whole GPU) and memory in MiB, where memory 0 means "the
 * whole memory of whichever GPU the pod lands on": the webhook cannot know the model in advance.
 * Where it comes from, per dimension:
 *   1. the workload's own fraction — annotation fracgpu.io/gpu-compute ("300", milli, 1..1000) or
 *      fracgpu.io/gpu-memory (a quantity, "20Gi", rounded up to a MiB) — from the first pod on;
 *   2. else the recommender's figure, when there is one and the update mode applies it at creation
 *      (Initial or Auto; Off only recommends);
 *   3. else the whole GPU: never guess low before there is history.
 * A malformed fraction annotation is not applied: that dimension falls through to 2 or 3, and the
 * caller gets the message to put on the GPUWorkload.
 *
 * On the pod the allocation is written as fracgpu.io/compute-milli ("300") and fracgpu.io/memory-mib
 * ("20480", or "whole"); fg_allocation_from_pod reads it back for the scheduler and the device plugin.
 */
#ifndef FG_RECONCILERS_ALLOCATION_H
#define FG_RECONCILERS_ALLOCATION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "crds/gpupolicy.h"

#define FG_ALLOC_WHOLE_MEMORY "whole"
#define FG_MIB_MILLI (1024ll * 1024 * 1000) /* one MiB in the milli-units of quantity.h */

struct fg_allocation {
    int64_t compute_milli;      /* 1..1000 */
    int64_t memory_mib;         /* 0: the GPU's whole memory; else 1..FG_POLICY_MIB_MAX */
};

/* What the recommender says for a workload; has_* false where it has no figure yet. */
struct fg_recommendation {
    bool has_compute, has_memory;
    int64_t compute_milli, memory_mib;
};

/* The allocation for a workload whose object (Deployment, Job, ..., borrowed) carries `workload`'s
 * annotations, given the recommendation (NULL: none) and the update mode in force. Returns FG_OK, or
 * FG_E_INVAL with errmsg naming the annotation that was ignored — *out is filled either way. */
enum fg_err fg_allocation_resolve(json_object *workload, const struct fg_recommendation *rec,
                                  enum fg_update_mode mode, struct fg_allocation *out, char *errmsg);

/* Annotation values: compute "300"; memory "20480" or FG_ALLOC_WHOLE_MEMORY. */
void fg_allocation_format(const struct fg_allocation *a, char compute[24], char memory[24]);

/* Reads a mutated pod's allocation annotations. FG_E_PARSE naming the annotation when one is absent
 * or malformed; *out untouched then. */
enum fg_err fg_allocation_from_pod(json_object *pod, struct fg_allocation *out, char *errmsg) FG_MUST_USE;

#endif
