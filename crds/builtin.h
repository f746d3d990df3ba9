/*
 * builtin — the policies fracgpu ships: real-time, real-time-mps, near-real-time and batch (always
 * present) and training and build (created when a workload of that class is first seen).
 *
 * Their values are the table in builtin.c, documented in docs/policies.md, and they keep the
 * ordering that document promises: real-time the most conservative, batch the longest window and the
 * least headroom. An object written from this table carries the label fracgpu.io/built-in=true and
 * two annotations: the defaults version it was written from and the digest of the spec as written.
 * When a release raises FG_BUILTIN_DEFAULTS_VERSION, fg_builtin_policy_check says whether an existing
 * object may be upgraded: only when its spec still has the digest it was written with — nobody
 * edited it. An object without those annotations (created by a user under a built-in's name) is
 * never touched.
 */
#ifndef FG_CRDS_BUILTIN_H
#define FG_CRDS_BUILTIN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "crds/gpupolicy.h"

/* Raise whenever a value in the table changes. */
#define FG_BUILTIN_DEFAULTS_VERSION 3

#define FG_LABEL_BUILTIN "fracgpu.io/built-in"
#define FG_ANN_DEFAULTS_VERSION "fracgpu.io/defaults-version"
#define FG_ANN_DEFAULTS_DIGEST "fracgpu.io/defaults-digest"

struct fg_builtin_policy {
    const char *name;
    bool always;                    /* ensured at every start; otherwise on first use */
    const char *description;
    struct fg_gpupolicy_spec spec;
};

extern const struct fg_builtin_policy fg_builtin_policies[];
extern const size_t fg_builtin_policies_count;

/* The built-in named `name`, or NULL. */
const struct fg_builtin_policy *fg_builtin_policy_find(const char *name);

/* The built-in a workload of class c uses when it names no policy. */
const char *fg_builtin_policy_for_class(enum fg_workload_class c);

/* A new GPUPolicy object (apiVersion, kind, metadata with label and annotations, spec) for b. */
json_object *fg_builtin_policy_object(const struct fg_builtin_policy *b);

enum fg_builtin_action {
    FG_BUILTIN_KEEP,      /* current, edited by someone, or not ours: leave it */
    FG_BUILTIN_UPGRADE,   /* written from older defaults and never edited: replace its spec */
};

/* What to do with `existing`, the stored object under a built-in's name (json-c, borrowed). */
enum fg_builtin_action fg_builtin_policy_check(json_object *existing);

#endif
