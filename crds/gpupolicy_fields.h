/*
 * gpupolicy_fields — the field table the GPUPolicy decoder and encoder share (module-internal).
 */
#ifndef FG_CRDS_GPUPOLICY_FIELDS_H
#define FG_CRDS_GPUPOLICY_FIELDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "crds/gpupolicy.h"

enum fg__field_kind { FG__FIELD_INT, FG__FIELD_ENUM, FG__FIELD_DURATION, FG__FIELD_OBJECT };

struct fg__policy_field {
    const char *name;                          /* JSON member; NULL ends a table */
    enum fg__field_kind kind;
    size_t offset;                             /* into struct fg_gpupolicy_spec (not for objects) */
    int64_t lo, hi;                            /* integer bounds */
    const char *const *names;                  /* enum names, NULL-terminated, index = value */
    const struct fg__policy_field *fields;     /* nested object's table */
};

/* The spec's top-level table. */
extern const struct fg__policy_field fg__policy_spec_fields[];

#endif
