/*
 * gpupolicy — the GPUPolicy custom resource (fracgpu.io/v1alpha1, cluster-scoped) as C values.
 *
 * A policy says how recommendations are computed and applied (docs/policies.md). This module turns a
 * policy's `spec` (json-c, borrowed) into a `struct fg_gpupolicy_spec` with the rules of the CRD's
 * structural schema — types, enums, bounds, defaults for absent fields, unknown fields refused — so
 * code that reads a policy never meets a value the API server would not have stored. On top of the
 * schema, fg_gpupolicy_validate checks what a schema cannot express (minimum ≤ maximum, a window at
 * least as long as minHistory, ...). Both report the offending field by its path
 * ("spec.compute.minMilli") and a reason a person can act on.
 *
 * The encoder writes the canonical form of a spec: every field, in a fixed order. Built-in policies
 * are created from it and the digest of that text tells whether anyone edited them since.
 *
 * Ownership: the spec struct holds no pointers; decoding allocates nothing that outlives the call.
 */
#ifndef FG_CRDS_GPUPOLICY_H
#define FG_CRDS_GPUPOLICY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* The API group and version of fracgpu's custom resources, and their names, as the CRD YAML files declare them
 * (test_schema checks that they agree). How to reach them over REST is the client's business: see
 * reconcilers/resources.h. */
#define FG_GROUP "fracgpu.io"
#define FG_CRD_VERSION "v1alpha1"
#define FG_API_VERSION "fracgpu.io/v1alpha1"
#define FG_GPUPOLICY_KIND "GPUPolicy"
#define FG_GPUPOLICY_PLURAL "gpupolicies"
#define FG_GPUWORKLOAD_KIND "GPUWorkload"
#define FG_GPUWORKLOAD_PLURAL "gpuworkloads"
#define FG_GPUCHECKPOINT_KIND "GPUCheckpoint"
#define FG_GPUCHECKPOINT_PLURAL "gpucheckpoints"

enum fg_workload_class { FG_CLASS_INFERENCE, FG_CLASS_TRAINING, FG_CLASS_BATCH, FG_CLASS_BUILD };
enum fg_sharing { FG_SHARING_TIMESLICE, FG_SHARING_MPS, FG_SHARING_EXCLUSIVE };
enum fg_isolation { FG_ISOLATION_SHARED, FG_ISOLATION_DEDICATED };
enum fg_update_mode { FG_UPDATE_OFF, FG_UPDATE_INITIAL, FG_UPDATE_AUTO };

/* The names the API uses ("inference", "mps", "Auto", ...); NULL for a value out of range. */
const char *fg_workload_class_name(enum fg_workload_class c);
const char *fg_sharing_name(enum fg_sharing s);
const char *fg_isolation_name(enum fg_isolation i);
const char *fg_update_mode_name(enum fg_update_mode m);

/* Bounds shared by the schema (gpupolicies.yaml) and the decoder. */
#define FG_POLICY_MILLI_MAX 1000          /* one whole GPU */
#define FG_POLICY_MIB_MAX 1048576         /* 1 TiB */
#define FG_POLICY_HEADROOM_MAX 400
#define FG_POLICY_PRIORITY_MAX 1000000
#define FG_POLICY_WINDOW_MAX_MS (90ll * 24 * 3600 * 1000)

struct fg_gpupolicy_resource {
    int64_t percentile;         /* 1..100 (memory: 100 = peak) */
    int64_t headroom_percent;   /* 0..FG_POLICY_HEADROOM_MAX */
    int64_t min, max;           /* compute: milli (0..1000); memory: MiB */
};

struct fg_gpupolicy_spec {
    enum fg_workload_class workload_class;
    enum fg_sharing sharing;
    enum fg_isolation isolation;
    int64_t history_window_ms;
    int64_t min_history_ms;
    struct fg_gpupolicy_resource compute;
    struct fg_gpupolicy_resource memory;
    enum fg_update_mode update_mode;
    int64_t cooldown_ms;
    int64_t change_threshold_percent;   /* 0..100 */
    int64_t priority;                   /* -FG_POLICY_PRIORITY_MAX..FG_POLICY_PRIORITY_MAX */
};

/* Fills *out with the schema's defaults. */
void fg_gpupolicy_spec_defaults(struct fg_gpupolicy_spec *out);

/* Decodes `spec` (NULL = empty: all defaults) with the schema's rules. FG_E_INVAL with errmsg
 * ("spec.compute.percentile: must be an integer between 1 and 100, got \"high\"") for a wrong type,
 * a value out of bounds or the enum, a malformed duration or an unknown field; *out is then
 * unspecified. */
enum fg_err fg_gpupolicy_decode(json_object *spec, struct fg_gpupolicy_spec *out, char *errmsg) FG_MUST_USE;

/* The cross-field rules. FG_E_INVAL with *reason (static, CamelCase: "ComputeMinAboveMax", ...) and a
 * message in errmsg saying what to change. */
enum fg_err fg_gpupolicy_validate(const struct fg_gpupolicy_spec *s, const char **reason,
                                  char *errmsg) FG_MUST_USE;

/* A new json object holding every field of s in canonical order (caller puts it). */
json_object *fg_gpupolicy_encode(const struct fg_gpupolicy_spec *s);

/* Hex SHA-256 prefix (16 characters + NUL) of s's canonical text: equal specs, equal digests. */
void fg_gpupolicy_digest(const struct fg_gpupolicy_spec *s, char out[17]);

#endif
