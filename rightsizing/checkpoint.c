/* A recommender state as GPUCheckpoint JSON, and back (checkpoint.h). */
#include "rightsizing/checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static void set_i64(json_object *o, const char *key, int64_t v)
{
    json_object_object_add(o, key, json_object_new_int64(v));
}

static json_object *encode_hist(const struct fg_hist *h)
{
    json_object *o = json_object_new_object(), *buckets = json_object_new_object();
    set_i64(o, "referenceTime", h->reference_ms);
    set_i64(o, "lastTime", h->last_ms);
    set_i64(o, "halfLifeMs", h->o.half_life_ms);
    json_object_object_add(o, "totalWeight", json_object_new_double(h->total));
    for (int i = 0; i < h->n; i++) {
        if (h->weight[i] <= 0)
            continue;
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        json_object_object_add(buckets, key, json_object_new_double(h->weight[i]));
    }
    json_object_object_add(o, "buckets", buckets);
    json_object_object_add(o, "empty", json_object_new_boolean(h->empty));
    return o;
}

json_object *fg_checkpoint_encode(const struct fg_rec_state *s)
{
    json_object *o = json_object_new_object();
    set_i64(o, "version", FG_CHECKPOINT_VERSION);
    json_object_object_add(o, "compute", encode_hist(&s->compute));
    json_object_object_add(o, "memory", encode_hist(&s->memory));
    set_i64(o, "slotMs", s->slot_ms);
    json_object *peaks = json_object_new_array();
    for (int i = 0; i < FG_REC_PEAK_SLOTS; i++) {
        if (s->peaks[i].slot < 0)
            continue;
        json_object *p = json_object_new_object();
        set_i64(p, "slot", s->peaks[i].slot);
        json_object_object_add(p, "mib", json_object_new_double(s->peaks[i].mib));
        json_object_array_add(peaks, p);
    }
    json_object_object_add(o, "peaks", peaks);
    set_i64(o, "firstSample", s->first_ms);
    set_i64(o, "lastSample", s->last_ms);
    set_i64(o, "samples", (int64_t)s->samples);
    json_object *refused = json_object_new_object();
    for (int r = 1; r < FG_REC_REFUSALS; r++)
        if (s->refused[r])
            set_i64(refused, fg_rec_refusal_name((enum fg_rec_refusal)r), (int64_t)s->refused[r]);
    json_object_object_add(o, "refused", refused);
    json_object *bump = json_object_new_object();
    json_object_object_add(bump, "mib", json_object_new_double(s->bump_mib));
    set_i64(bump, "time", s->bump_ms);
    json_object_object_add(bump, "fromOOM", json_object_new_boolean(s->bump_from_oom));
    json_object_object_add(o, "bump", bump);
    set_i64(o, "ooms", (int64_t)s->ooms);
    set_i64(o, "overuses", (int64_t)s->overuses);
    if (s->applied.set) {
        json_object *a = json_object_new_object();
        set_i64(a, "computeMilli", s->applied.compute_milli);
        set_i64(a, "memoryMiB", s->applied.memory_mib);
        set_i64(a, "since", s->applied.since_ms);
        json_object_object_add(o, "applied", a);
    }
    return o;
}

/* Reading, with the member's path for errors. */
struct reader {
    char *errmsg;
    enum fg_err err;
};

static bool fail(struct reader *rd, const char *path, const char *why)
{
    if (!rd->err)
        rd->err = fg_errmsg(rd->errmsg, FG_E_PARSE, "checkpoint %s: %s", path, why);
    return false;
}

static bool get_i64(struct reader *rd, json_object *o, const char *key, const char *path, int64_t *out, bool need)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return need ? fail(rd, path, "missing") : true;
    if (!json_object_is_type(v, json_type_int))
        return fail(rd, path, "not an integer");
    *out = json_object_get_int64(v);
    return true;
}

/* The latest time a checkpoint may hold: the last millisecond of the year 9999. */
#define TIME_MAX_MS 253402300799999ll

/* A time: ms since 1970, before the year 10000. Anything else is no time a state was saved at, and
 * the recommender's arithmetic on it could overflow. */
static bool get_time(struct reader *rd, json_object *o, const char *key, const char *path, int64_t *out, bool need)
{
    if (!get_i64(rd, o, key, path, out, need))
        return false;
    if (*out < 0 || *out > TIME_MAX_MS)
        return fail(rd, path, "not a time (ms since 1970, before the year 10000)");
    return true;
}

static bool num_value(struct reader *rd, json_object *v, const char *path, double *out)
{
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return fail(rd, path, "not a number");
    double d = json_object_get_double(v);
    if (!isfinite(d) || d < 0)
        return fail(rd, path, "not a finite number of at least 0");
    *out = d;
    return true;
}

static bool get_num(struct reader *rd, json_object *o, const char *key, const char *path, double *out)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return fail(rd, path, "missing");
    return num_value(rd, v, path, out);
}

static bool get_bool(struct reader *rd, json_object *o, const char *key, const char *path, bool *out)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return true;
    if (!json_object_is_type(v, json_type_boolean))
        return fail(rd, path, "not a boolean");
    *out = json_object_get_boolean(v);
    return true;
}

static bool decode_hist(struct reader *rd, json_object *o, const char *name, struct fg_hist *h)
{
    char path[64];
    json_object *ho = NULL, *buckets = NULL;
    if (!json_object_object_get_ex(o, name, &ho) || !json_object_is_type(ho, json_type_object))
        return fail(rd, name, "missing or not an object");
    snprintf(path, sizeof path, "%s.referenceTime", name);
    if (!get_time(rd, ho, "referenceTime", path, &h->reference_ms, true))
        return false;
    snprintf(path, sizeof path, "%s.lastTime", name);
    if (!get_time(rd, ho, "lastTime", path, &h->last_ms, true))
        return false;
    snprintf(path, sizeof path, "%s.empty", name);
    if (!get_bool(rd, ho, "empty", path, &h->empty))
        return false;
    int64_t half_life = h->o.half_life_ms;
    snprintf(path, sizeof path, "%s.halfLifeMs", name);
    if (!get_i64(rd, ho, "halfLifeMs", path, &half_life, false))
        return false;
    if (half_life != h->o.half_life_ms && !h->empty) { /* the weights are relative to the old half-life */
        double back = (double)(h->last_ms - h->reference_ms) * (double)h->o.half_life_ms /
                      (double)(half_life > 0 ? half_life : 1);
        if (!(back <= (double)h->last_ms && back >= (double)(h->last_ms - TIME_MAX_MS)))
            return fail(rd, path, "weights this policy's half-life cannot carry over");
        h->reference_ms = h->last_ms - (int64_t)back;
    }
    snprintf(path, sizeof path, "%s.buckets", name);
    if (!json_object_object_get_ex(ho, "buckets", &buckets) || !json_object_is_type(buckets, json_type_object))
        return fail(rd, path, "missing or not an object");
    memset(h->weight, 0, sizeof h->weight);
    h->total = 0;
    json_object_object_foreach(buckets, key, val)
    {
        char *end = NULL;
        errno = 0;
        long i = strtol(key, &end, 10);
        snprintf(path, sizeof path, "%s.buckets.%.16s", name, key);
        if (errno || end == key || *end || i < 0 || i >= h->n)
            return fail(rd, path, "not a bucket of this histogram");
        double w = 0;
        if (!num_value(rd, val, path, &w))
            return false;
        h->weight[i] = w;
        h->total += w;
    }
    return true;
}

enum fg_err fg_checkpoint_decode(json_object *obj, struct fg_rec_state *s, char *errmsg)
{
    struct reader rd = { errmsg, FG_OK };
    struct fg_rec_state t = *s;
    int64_t version = 0, samples = 0, ooms = 0, overuses = 0;
    if (!json_object_is_type(obj, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint: not an object");
    if (!get_i64(&rd, obj, "version", "version", &version, true))
        return rd.err;
    if (version != FG_CHECKPOINT_VERSION)
        return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint version %lld: this operator reads version %d",
                         (long long)version, FG_CHECKPOINT_VERSION);
    if (!decode_hist(&rd, obj, "compute", &t.compute) || !decode_hist(&rd, obj, "memory", &t.memory))
        return rd.err;
    int64_t slot_ms = 0;
    json_object *peaks = NULL;
    if (!get_i64(&rd, obj, "slotMs", "slotMs", &slot_ms, true))
        return rd.err;
    if (slot_ms <= 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint slotMs: not positive");
    if (!json_object_object_get_ex(obj, "peaks", &peaks) || !json_object_is_type(peaks, json_type_array))
        return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint peaks: missing or not an array");
    for (int i = 0; i < FG_REC_PEAK_SLOTS; i++)
        t.peaks[i] = (struct fg_rec_peak){ -1, 0 };
    for (size_t i = 0; i < json_object_array_length(peaks); i++) {
        json_object *p = json_object_array_get_idx(peaks, i);
        int64_t slot = 0;
        double mib = 0;
        if (!json_object_is_type(p, json_type_object) || !get_i64(&rd, p, "slot", "peaks[].slot", &slot, true) ||
            !get_num(&rd, p, "mib", "peaks[].mib", &mib))
            return rd.err ? rd.err : fg_errmsg(errmsg, FG_E_PARSE, "checkpoint peaks[]: not an object");
        if (slot < 0)
            return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint peaks[].slot: negative");
        if (slot > INT64_MAX / slot_ms)
            return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint peaks[].slot: beyond any time");
        /* slots of another length (the policy's window changed) are mapped onto this state's by their start */
        int64_t mine = slot_ms == t.slot_ms ? slot : slot * slot_ms / t.slot_ms;
        struct fg_rec_peak *at = &t.peaks[mine % FG_REC_PEAK_SLOTS];
        if (at->slot < mine || (at->slot == mine && at->mib < mib))
            *at = (struct fg_rec_peak){ mine, mib };
    }
    json_object *refused = NULL, *bump = NULL, *applied = NULL;
    if (!get_time(&rd, obj, "firstSample", "firstSample", &t.first_ms, true) ||
        !get_time(&rd, obj, "lastSample", "lastSample", &t.last_ms, true) ||
        !get_i64(&rd, obj, "samples", "samples", &samples, true) || !get_i64(&rd, obj, "ooms", "ooms", &ooms, false) ||
        !get_i64(&rd, obj, "overuses", "overuses", &overuses, false))
        return rd.err;
    if (samples < 0 || ooms < 0 || overuses < 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint: a negative count");
    t.samples = (uint64_t)samples;
    t.ooms = (uint64_t)ooms;
    t.overuses = (uint64_t)overuses;
    memset(t.refused, 0, sizeof t.refused);
    if (json_object_object_get_ex(obj, "refused", &refused) && json_object_is_type(refused, json_type_object))
        for (int r = 1; r < FG_REC_REFUSALS; r++) {
            int64_t n = 0;
            if (!get_i64(&rd, refused, fg_rec_refusal_name((enum fg_rec_refusal)r), "refused", &n, false))
                return rd.err;
            t.refused[r] = n > 0 ? (uint64_t)n : 0;
        }
    t.bump_mib = 0;
    t.bump_ms = 0;
    t.bump_from_oom = false;
    if (json_object_object_get_ex(obj, "bump", &bump) &&
        (!get_num(&rd, bump, "mib", "bump.mib", &t.bump_mib) ||
         !get_time(&rd, bump, "time", "bump.time", &t.bump_ms, true) ||
         !get_bool(&rd, bump, "fromOOM", "bump.fromOOM", &t.bump_from_oom)))
        return rd.err;
    t.applied = (struct fg_rec_applied){ 0 };
    if (json_object_object_get_ex(obj, "applied", &applied)) {
        t.applied.set = true;
        if (!get_i64(&rd, applied, "computeMilli", "applied.computeMilli", &t.applied.compute_milli, true) ||
            !get_i64(&rd, applied, "memoryMiB", "applied.memoryMiB", &t.applied.memory_mib, true) ||
            !get_time(&rd, applied, "since", "applied.since", &t.applied.since_ms, true))
            return rd.err;
        if (t.applied.compute_milli < 1 || t.applied.compute_milli > 1000 || t.applied.memory_mib < 0)
            return fg_errmsg(errmsg, FG_E_PARSE, "checkpoint applied: outside one GPU");
    }
    *s = t;
    return FG_OK;
}
