/*
 * gpupolicy — GPUPolicy's cross-field rules, its canonical encoding and digest. Decoding lives in
 * gpupolicy_decode.c.
 */
#include "crds/gpupolicy_fields.h"

#include <openssl/evp.h>
#include <string.h>

#include "base/duration.h"

enum fg_err fg_gpupolicy_validate(const struct fg_gpupolicy_spec *s, const char **reason, char *errmsg)
{
    char a[32], b[32];
    if (s->compute.min > s->compute.max) {
        *reason = "ComputeMinAboveMax";
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "spec.compute.minMilli (%lld) is above spec.compute.maxMilli (%lld): lower minMilli or "
                         "raise maxMilli", (long long)s->compute.min, (long long)s->compute.max);
    }
    if (s->memory.min > s->memory.max) {
        *reason = "MemoryMinAboveMax";
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "spec.memory.minMiB (%lld) is above spec.memory.maxMiB (%lld): lower minMiB or raise maxMiB",
                         (long long)s->memory.min, (long long)s->memory.max);
    }
    if (s->history_window_ms <= 0) {
        *reason = "EmptyHistoryWindow";
        return fg_errmsg(errmsg, FG_E_INVAL, "spec.historyWindow must be longer than 0s");
    }
    if (s->history_window_ms > FG_POLICY_WINDOW_MAX_MS) {
        fg_duration_format(s->history_window_ms, a, sizeof a);
        *reason = "HistoryWindowTooLong";
        return fg_errmsg(errmsg, FG_E_INVAL, "spec.historyWindow (%s) is longer than the 2160h (90 days) kept", a);
    }
    if (s->min_history_ms > s->history_window_ms) {
        fg_duration_format(s->history_window_ms, a, sizeof a);
        fg_duration_format(s->min_history_ms, b, sizeof b);
        *reason = "WindowShorterThanMinHistory";
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "spec.historyWindow (%s) is shorter than spec.minHistory (%s): a recommendation could "
                         "never be made; lengthen historyWindow or shorten minHistory", a, b);
    }
    if (s->cooldown_ms > s->history_window_ms) {
        fg_duration_format(s->history_window_ms, a, sizeof a);
        fg_duration_format(s->cooldown_ms, b, sizeof b);
        *reason = "CooldownLongerThanWindow";
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "spec.cooldown (%s) is longer than spec.historyWindow (%s): shorten the cooldown", b, a);
    }
    if (s->sharing == FG_SHARING_EXCLUSIVE && s->isolation != FG_ISOLATION_DEDICATED) {
        *reason = "ExclusiveNeedsDedicated";
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "spec.sharing is exclusive but spec.isolation is shared: an exclusive GPU is dedicated; "
                         "set isolation to dedicated");
    }
    return FG_OK;
}

static void encode_fields(const struct fg__policy_field *fields, const struct fg_gpupolicy_spec *s, json_object *obj)
{
    const char *base = (const char *)s;
    for (const struct fg__policy_field *f = fields; f->name; f++) {
        json_object *v = NULL;
        switch (f->kind) {
        case FG__FIELD_INT:
            v = json_object_new_int64(*(const int64_t *)(const void *)(base + f->offset));
            break;
        case FG__FIELD_ENUM:
            v = json_object_new_string(f->names[*(const int *)(const void *)(base + f->offset)]);
            break;
        case FG__FIELD_DURATION: {
            char d[32];
            fg_duration_format(*(const int64_t *)(const void *)(base + f->offset), d, sizeof d);
            v = json_object_new_string(d);
            break;
        }
        case FG__FIELD_OBJECT:
            v = json_object_new_object();
            encode_fields(f->fields, s, v);
            break;
        }
        json_object_object_add(obj, f->name, v);
    }
}

json_object *fg_gpupolicy_encode(const struct fg_gpupolicy_spec *s)
{
    json_object *obj = json_object_new_object();
    encode_fields(fg__policy_spec_fields, s, obj);
    return obj;
}

void fg_gpupolicy_digest(const struct fg_gpupolicy_spec *s, char out[17])
{
    json_object *obj = fg_gpupolicy_encode(s);
    const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL);
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    json_object_put(obj);
}
