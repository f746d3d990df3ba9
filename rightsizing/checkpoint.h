/*
 * checkpoint — a recommender state (recommender.h) as the JSON a GPUCheckpoint object keeps, and back.
 *
 * The operator keeps each automated workload's usage history in a GPUCheckpoint (crds/gpucheckpoints.yaml)
 * so that it outlives an operator restart and a delete-and-recreate of the workload. What is kept:
 *
 *   version          FG_CHECKPOINT_VERSION; another version is refused (the state starts afresh)
 *   compute, memory  {referenceTime (ms), halfLifeMs, totalWeight, buckets: {"<index>": weight}} —
 *                    only the buckets holding weight, as VPA's checkpoints do
 *   peaks            [{slot, mib}] of the slots in use, slotMs their length
 *   firstSample, lastSample (ms), samples, refused {"<reason>": count}
 *   bump             {mib, time, fromOOM}, ooms, overuses
 *   applied          {computeMilli, memoryMiB, since} once an allocation was made
 *
 * The histograms' bucket layout is not stored: it follows from the policy (recommender.c), and a
 * checkpoint is restored into a state made for the workload's current policy. Buckets beyond the
 * layout, weights that are negative or not finite, times outside 1970 to 9999, a slot length that is
 * not positive, and members of the wrong type are refused with a message naming the member; the
 * caller then starts afresh and says so (never a crash, never a state half restored).
 */
#ifndef FG_RIGHTSIZING_CHECKPOINT_H
#define FG_RIGHTSIZING_CHECKPOINT_H

#include <json-c/json.h>

#include "base/err.h"
#include "rightsizing/recommender.h"

#define FG_CHECKPOINT_VERSION 1

/* A new object holding s (caller puts it). */
json_object *fg_checkpoint_encode(const struct fg_rec_state *s);

/* Restores obj into *s, which fg_rec_init made for the workload's policy. FG_E_PARSE with errmsg
 * naming the member on a malformed checkpoint; *s is then unchanged. */
enum fg_err fg_checkpoint_decode(json_object *obj, struct fg_rec_state *s, char *errmsg) FG_MUST_USE;

#endif
