/*
 * pod — what the capacity pod asks of its holder, and what the holder writes back onto it.
 *
 * Asked (annotations the scheduler set when it created the pod, podcontract.h): FG_ANN_SHARING "mps"
 * makes the GPU an mps GPU, whose per-pod limits are FG_ANN_COMPUTE_MILLI (1..1000) and
 * FG_ANN_MEMORY_MIB (> 0); any other sharing, or none, asks for nothing but the report.
 * Written: FG_ANN_GPU_UUID and FG_ANN_GPU_MEMORY_MIB, in one JSON merge patch that names only those
 * two keys, so it leaves every other annotation alone and writing it twice changes nothing.
 */
#ifndef FG_NODEAGENT_HOLDER_POD_H
#define FG_NODEAGENT_HOLDER_POD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct fg_holder_want {
    bool mps;
    uint64_t compute_milli;   /* mps only */
    uint64_t memory_mib;      /* mps only */
};

/* Reads the pod's asks. FG_E_INVAL (errmsg names the annotation and its value) for an mps pod whose
 * limits are missing or out of range. */
enum fg_err fg_holder_pod_want(json_object *pod, struct fg_holder_want *want, char *errmsg) FG_MUST_USE;

/* Whether the pod already carries exactly this report. */
bool fg_holder_pod_reported(json_object *pod, const char *uuid, uint64_t memory_mib);

/* The merge patch that writes the report (the caller frees). */
char *fg_holder_pod_patch(const char *uuid, uint64_t memory_mib);

#endif
