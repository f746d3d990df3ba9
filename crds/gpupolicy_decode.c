/*
 * gpupolicy_decode — GPUPolicy spec from JSON, with the CRD schema's rules.
 *
 * One table per object level lists every field the schema has: its JSON name, its kind (integer
 * with bounds, enum with its names, duration, nested object) and where it lands in the struct.
 * Decoding starts from the defaults, walks the object's members and looks each up in the table, so
 * an unknown member, a wrong type or a value out of bounds is reported with the field's full path.
 * The same table drives the canonical encoder, so decoding and encoding cannot disagree on a field.
 */
#include "crds/gpupolicy_fields.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/duration.h"

_Static_assert(sizeof(enum fg_sharing) == sizeof(int) && sizeof(enum fg_workload_class) == sizeof(int) &&
                   sizeof(enum fg_isolation) == sizeof(int) && sizeof(enum fg_update_mode) == sizeof(int),
               "enum fields are stored as int");

static const char *const class_names[] = { "inference", "training", "batch", "build", NULL };
static const char *const sharing_names[] = { "timeslice", "mps", "exclusive", NULL };
static const char *const isolation_names[] = { "shared", "dedicated", NULL };
static const char *const update_mode_names[] = { "Off", "Initial", "Auto", NULL };

static const char *enum_name(const char *const *names, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? names[v] : NULL;
}

const char *fg_workload_class_name(enum fg_workload_class c) { return enum_name(class_names, 4, (int)c); }
const char *fg_sharing_name(enum fg_sharing s) { return enum_name(sharing_names, 3, (int)s); }
const char *fg_isolation_name(enum fg_isolation i) { return enum_name(isolation_names, 2, (int)i); }
const char *fg_update_mode_name(enum fg_update_mode m) { return enum_name(update_mode_names, 3, (int)m); }

#define RES(member, field) (offsetof(struct fg_gpupolicy_spec, member) + offsetof(struct fg_gpupolicy_resource, field))

static const struct fg__policy_field compute_fields[] = {
    { "percentile", FG__FIELD_INT, RES(compute, percentile), 1, 100, NULL, NULL },
    { "headroomPercent", FG__FIELD_INT, RES(compute, headroom_percent), 0, FG_POLICY_HEADROOM_MAX, NULL, NULL },
    { "minMilli", FG__FIELD_INT, RES(compute, min), 0, FG_POLICY_MILLI_MAX, NULL, NULL },
    { "maxMilli", FG__FIELD_INT, RES(compute, max), 1, FG_POLICY_MILLI_MAX, NULL, NULL },
    { NULL, 0, 0, 0, 0, NULL, NULL },
};

static const struct fg__policy_field memory_fields[] = {
    { "percentile", FG__FIELD_INT, RES(memory, percentile), 1, 100, NULL, NULL },
    { "headroomPercent", FG__FIELD_INT, RES(memory, headroom_percent), 0, FG_POLICY_HEADROOM_MAX, NULL, NULL },
    { "minMiB", FG__FIELD_INT, RES(memory, min), 0, FG_POLICY_MIB_MAX, NULL, NULL },
    { "maxMiB", FG__FIELD_INT, RES(memory, max), 1, FG_POLICY_MIB_MAX, NULL, NULL },
    { NULL, 0, 0, 0, 0, NULL, NULL },
};

#define TOP(member) offsetof(struct fg_gpupolicy_spec, member)

const struct fg__policy_field fg__policy_spec_fields[] = {
    { "workloadClass", FG__FIELD_ENUM, TOP(workload_class), 0, 0, class_names, NULL },
    { "sharing", FG__FIELD_ENUM, TOP(sharing), 0, 0, sharing_names, NULL },
    { "isolation", FG__FIELD_ENUM, TOP(isolation), 0, 0, isolation_names, NULL },
    { "historyWindow", FG__FIELD_DURATION, TOP(history_window_ms), 0, 0, NULL, NULL },
    { "minHistory", FG__FIELD_DURATION, TOP(min_history_ms), 0, 0, NULL, NULL },
    { "compute", FG__FIELD_OBJECT, 0, 0, 0, NULL, compute_fields },
    { "memory", FG__FIELD_OBJECT, 0, 0, 0, NULL, memory_fields },
    { "updateMode", FG__FIELD_ENUM, TOP(update_mode), 0, 0, update_mode_names, NULL },
    { "cooldown", FG__FIELD_DURATION, TOP(cooldown_ms), 0, 0, NULL, NULL },
    { "changeThresholdPercent", FG__FIELD_INT, TOP(change_threshold_percent), 0, 100, NULL, NULL },
    { "priority", FG__FIELD_INT, TOP(priority), -FG_POLICY_PRIORITY_MAX, FG_POLICY_PRIORITY_MAX, NULL, NULL },
    { NULL, 0, 0, 0, 0, NULL, NULL },
};

void fg_gpupolicy_spec_defaults(struct fg_gpupolicy_spec *out)
{
    *out = (struct fg_gpupolicy_spec){
        .workload_class = FG_CLASS_INFERENCE,
        .sharing = FG_SHARING_TIMESLICE,
        .isolation = FG_ISOLATION_SHARED,
        .history_window_ms = 7ll * 24 * 3600 * 1000,
        .min_history_ms = 24ll * 3600 * 1000,
        .compute = { .percentile = 95, .headroom_percent = 20, .min = 50, .max = 1000 },
        .memory = { .percentile = 100, .headroom_percent = 20, .min = 256, .max = 81920 },
        .update_mode = FG_UPDATE_INITIAL,
        .cooldown_ms = 3600ll * 1000,
        .change_threshold_percent = 10,
        .priority = 0,
    };
}

/* A short, bounded rendering of a JSON value for messages. */
static const char *shown(json_object *v, char *buf, size_t size)
{
    const char *text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    size_t n = strlen(text);
    if (n < size)
        return text;
    snprintf(buf, size, "%.*s...", (int)(size - 4), text);
    return buf;
}

static enum fg_err decode_int(const struct fg__policy_field *f, json_object *v, const char *path, int64_t *dst,
                              char *errmsg)
{
    char show[64];
    int64_t n = 0;
    bool ok = false;
    if (json_object_is_type(v, json_type_int)) {
        n = json_object_get_int64(v);
        /* json-c saturates on overflow: a saturated value is out of every bound anyway. */
        ok = true;
    } else if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (isfinite(d) && d == floor(d) && fabs(d) < 9e15) {
            n = (int64_t)d;
            ok = true;
        }
    }
    if (!ok || n < f->lo || n > f->hi)
        return fg_errmsg(errmsg, FG_E_INVAL, "%s: must be an integer between %" PRId64 " and %" PRId64 ", got %s",
                         path, f->lo, f->hi, shown(v, show, sizeof show));
    *dst = n;
    return FG_OK;
}

static enum fg_err decode_enum(const struct fg__policy_field *f, json_object *v, const char *path, int *dst,
                               char *errmsg)
{
    char show[64];
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        for (int i = 0; f->names[i]; i++) {
            if (!strcmp(s, f->names[i])) {
                *dst = i;
                return FG_OK;
            }
        }
    }
    char allowed[128] = "";
    size_t used = 0;
    for (int i = 0; f->names[i] && used < sizeof allowed; i++)
        used += (size_t)snprintf(allowed + used, sizeof allowed - used, "%s\"%s\"", i ? ", " : "", f->names[i]);
    return fg_errmsg(errmsg, FG_E_INVAL, "%s: must be one of %s, got %s", path, allowed, shown(v, show, sizeof show));
}

static enum fg_err decode_duration(json_object *v, const char *path, int64_t *dst, char *errmsg)
{
    char show[64], why[FG_ERRMSG_MAX];
    if (!json_object_is_type(v, json_type_string))
        return fg_errmsg(errmsg, FG_E_INVAL, "%s: must be a duration string such as \"24h\", got %s", path,
                         shown(v, show, sizeof show));
    if (fg_duration_parse(json_object_get_string(v), dst, why) != FG_OK)
        return fg_errmsg(errmsg, FG_E_INVAL, "%s: %s (use whole numbers with h, m, s or ms, e.g. \"1h30m\")", path,
                         why);
    return FG_OK;
}

static enum fg_err decode_object(const struct fg__policy_field *fields, json_object *obj, const char *path,
                                 struct fg_gpupolicy_spec *out, char *errmsg)
{
    char show[64];
    if (!json_object_is_type(obj, json_type_object))
        return fg_errmsg(errmsg, FG_E_INVAL, "%s: must be an object, got %s", path, shown(obj, show, sizeof show));
    json_object_object_foreach(obj, key, v) {
        const struct fg__policy_field *f = fields;
        while (f->name && strcmp(f->name, key))
            f++;
        char sub[192];
        snprintf(sub, sizeof sub, "%s.%.64s", path, key);
        if (!f->name)
            return fg_errmsg(errmsg, FG_E_INVAL, "%s: unknown field", sub);
        if (v == NULL)
            return fg_errmsg(errmsg, FG_E_INVAL, "%s: must not be null", sub);
        enum fg_err err = FG_OK;
        char *base = (char *)out;
        switch (f->kind) {
        case FG__FIELD_INT:
            err = decode_int(f, v, sub, (int64_t *)(void *)(base + f->offset), errmsg);
            break;
        case FG__FIELD_ENUM:
            err = decode_enum(f, v, sub, (int *)(void *)(base + f->offset), errmsg);
            break;
        case FG__FIELD_DURATION:
            err = decode_duration(v, sub, (int64_t *)(void *)(base + f->offset), errmsg);
            break;
        case FG__FIELD_OBJECT:
            err = decode_object(f->fields, v, sub, out, errmsg);
            break;
        }
        if (err)
            return err;
    }
    return FG_OK;
}

enum fg_err fg_gpupolicy_decode(json_object *spec, struct fg_gpupolicy_spec *out, char *errmsg)
{
    fg_gpupolicy_spec_defaults(out);
    if (!spec)
        return FG_OK;
    return decode_object(fg__policy_spec_fields, spec, "spec", out, errmsg);
}
