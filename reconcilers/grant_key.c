/* The life of the grant key, decided without I/O (grant_key.h). */
#include "reconcilers/grant_key.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/timefmt.h"
#include "reconcilers/grant.h"

enum fg_err fg_grant_key_policy_check(const struct fg_grant_key_policy *p, char *errmsg)
{
    if (p->grace_ms <= 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "the grant key's grace must be positive");
    if (p->rotation_ms <= p->grace_ms)
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "the grant key's rotation period must be longer than its grace, so a previous key is "
                         "dropped before the next rotation");
    return FG_OK;
}

/* A fresh key, base64, into *out (a new string). */
static enum fg_err fresh_key(char **out, char *errmsg)
{
    unsigned char key[FG_GRANT_KEY_FRESH_LEN];
    if (RAND_bytes(key, sizeof(key)) != 1) {
        OPENSSL_cleanse(key, sizeof(key));
        return fg_errmsg(errmsg, FG_E_IO, "OpenSSL has no randomness for a grant key");
    }
    *out = fg_base64_encode(key, sizeof(key));
    OPENSSL_cleanse(key, sizeof(key));
    return FG_OK;
}

static void free_secret_text(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

/* The Secret `cur` would become, with data {key, previous} and the rotation time; cur NULL: a new one. */
static json_object *next_secret(json_object *cur, const char *ns, const char *name, const char *key,
                                const char *previous, int64_t rotated_at_ms)
{
    json_object *obj = NULL;
    if (cur) {
        if (json_object_deep_copy(cur, &obj, NULL) != 0)
            abort(); /* only fails out of memory */
    } else {
        obj = json_object_new_object();
        fg_json_set_str(obj, "apiVersion", "v1");
        fg_json_set_str(obj, "kind", "Secret");
        json_object *meta = fg_json_ensure_obj(obj, "metadata");
        fg_json_set_str(meta, "name", name);
        fg_json_set_str(meta, "namespace", ns);
        fg_json_set_str(obj, "type", "Opaque");
    }
    json_object *data = json_object_new_object();
    fg_json_set_str(data, "key", key);
    if (previous)
        fg_json_set_str(data, "previous", previous);
    json_object_object_add(obj, "data", data);
    char when[FG_TIME_MAX];
    fg_time_format(rotated_at_ms, when);
    json_object *annotations = fg_json_ensure_obj(fg_json_ensure_obj(obj, "metadata"), "annotations");
    fg_json_set_str(annotations, FG_ANN_GRANT_KEY_ROTATED_AT, when);
    return obj;
}

/* When the next step falls due for a Secret rotated at `rotated` that holds a previous key or not. */
static int64_t next_due(const struct fg_grant_key_policy *p, int64_t rotated, bool previous)
{
    int64_t due = rotated + p->rotation_ms;
    if (previous && rotated + p->grace_ms < due)
        due = rotated + p->grace_ms;
    return due;
}

/* The rotation time the Secret records, when it is believable at now. */
static bool rotated_at(json_object *cur, int64_t now_ms, int64_t *out)
{
    const char *s = fg_json_get_str(cur, "metadata", "annotations", FG_ANN_GRANT_KEY_ROTATED_AT, NULL);
    return s && fg_time_parse(s, out) && *out <= now_ms + FG_GRANT_KEY_SKEW_MS;
}

/* Writes the plan for a step: data.key from `key` (NULL: fresh), data.previous from `previous`. */
static enum fg_err plan_step(struct fg_grant_key_plan *out, enum fg_grant_key_step step, json_object *cur,
                             const char *ns, const char *name, const char *key, const char *previous, int64_t rotated,
                             const struct fg_grant_key_policy *p, char *errmsg)
{
    char *fresh = NULL;
    if (!key) {
        enum fg_err err = fresh_key(&fresh, errmsg);
        if (err != FG_OK)
            return err;
        key = fresh;
    }
    out->step = step;
    out->next = next_secret(cur, ns, name, key, previous, rotated);
    out->recheck_ms = next_due(p, rotated, previous != NULL);
    free_secret_text(fresh);
    return FG_OK;
}

enum fg_err fg_grant_key_plan(json_object *cur, const char *ns, const char *name, const struct fg_grant_key_policy *p,
                              int64_t now_ms, struct fg_grant_key_plan *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    enum fg_err err = fg_grant_key_policy_check(p, errmsg);
    if (err != FG_OK)
        return err;
    int64_t now = now_ms - now_ms % 1000; /* as the annotation records it */
    if (!cur || fg_json_object_len(fg_json_get(cur, "data", NULL)) == 0)
        return plan_step(out, FG_GRANT_KEY_ISSUE, cur, ns, name, NULL, NULL, now, p, errmsg);

    err = fg_grant_key_member_check(cur, "key", out->problem);
    if (err != FG_OK)
        return plan_step(out, FG_GRANT_KEY_REPAIR_KEY, cur, ns, name, NULL, NULL, now, p, errmsg);
    const char *key = fg_json_get_str(cur, "data", "key", NULL);
    const char *previous = fg_json_get_str(cur, "data", "previous", NULL);
    int64_t rotated = 0;
    bool dated = rotated_at(cur, now_ms, &rotated);

    char why[FG_ERRMSG_MAX] = "";
    err = fg_grant_key_member_check(cur, "previous", why);
    if (err == FG_E_INVAL) {
        snprintf(out->problem, sizeof(out->problem), "%s", why);
        return plan_step(out, FG_GRANT_KEY_REPAIR_PREVIOUS, cur, ns, name, key, NULL, dated ? rotated : now, p, errmsg);
    }
    if (!dated)
        return plan_step(out, FG_GRANT_KEY_ADOPT, cur, ns, name, key, previous, now, p, errmsg);
    if (now_ms >= rotated + p->rotation_ms)
        return plan_step(out, FG_GRANT_KEY_ROTATE, cur, ns, name, NULL, key, now, p, errmsg);
    if (previous && now_ms >= rotated + p->grace_ms)
        return plan_step(out, FG_GRANT_KEY_RETIRE, cur, ns, name, key, NULL, rotated, p, errmsg);
    out->step = FG_GRANT_KEY_KEEP;
    out->recheck_ms = next_due(p, rotated, previous != NULL);
    return FG_OK;
}

void fg_grant_key_plan_cleanup(struct fg_grant_key_plan *plan)
{
    json_object_put(plan->next);
    plan->next = NULL;
}

const char *fg_grant_key_step_reason(enum fg_grant_key_step s)
{
    switch (s) {
    case FG_GRANT_KEY_KEEP: return "Unchanged";
    case FG_GRANT_KEY_ISSUE: return "KeyIssued";
    case FG_GRANT_KEY_REPAIR_KEY: return "KeyRepaired";
    case FG_GRANT_KEY_REPAIR_PREVIOUS: return "PreviousKeyRepaired";
    case FG_GRANT_KEY_ADOPT: return "KeyAdopted";
    case FG_GRANT_KEY_ROTATE: return "KeyRotated";
    case FG_GRANT_KEY_RETIRE: return "PreviousKeyRetired";
    }
    return "Unknown";
}

const char *fg_grant_key_step_name(enum fg_grant_key_step s)
{
    static const char *const names[FG_GRANT_KEY_STEPS] = { "keep",  "issue",  "repair-key", "repair-previous",
                                                           "adopt", "rotate", "retire" };
    return (unsigned)s < FG_GRANT_KEY_STEPS ? names[s] : "unknown";
}

bool fg_grant_key_step_is_repair(enum fg_grant_key_step s)
{
    return s == FG_GRANT_KEY_REPAIR_KEY || s == FG_GRANT_KEY_REPAIR_PREVIOUS;
}
