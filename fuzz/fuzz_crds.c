/*
 * fuzz_crds — fracgpu's custom resources as the operator reads them from its caches.
 *
 * The bytes are one object, a GPUPolicy, a GPUWorkload or a GPUCheckpoint, in JSON as the API server
 * serves it. Its spec is decoded as a GPUPolicy spec (then validated, and encoded and decoded again,
 * which must give the same digest) and as a GPUWorkload spec, and the policy the object would use is
 * asked for. Its status.state (the whole object when it has none) is restored as a GPUCheckpoint into
 * a recommender state made for that policy (the defaults when the spec is not a valid policy), as
 * the rightsizer restores one; a state that restores is saved and restored again (after the first
 * save, which puts it in canonical form, the text must not change), then asked for a recommendation,
 * the usage and a decision, as a restart would go on.
 */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "crds/gpupolicy.h"
#include "crds/gpuworkload.h"
#include "fuzz/fuzz.h"
#include "rightsizing/checkpoint.h"
#include "rightsizing/recommender.h"

#define NOW_MS 1795000000000ll /* late 2026: the operator's clock when it reads the object */

static void policy(json_object *spec, struct fg_rec_opts *o)
{
    char msg[FG_ERRMSG_MAX];
    struct fg_gpupolicy_spec s;
    const char *reason;
    if (fg_gpupolicy_decode(spec, &s, msg) != FG_OK)
        return;
    if (fg_gpupolicy_validate(&s, &reason, msg) == FG_OK)
        o->policy = s;
    json_object *enc = fg_gpupolicy_encode(&s);
    struct fg_gpupolicy_spec again;
    if (fg_gpupolicy_decode(enc, &again, msg) != FG_OK)
        abort(); /* the canonical form of a decoded spec does not decode */
    char d1[17], d2[17];
    fg_gpupolicy_digest(&s, d1);
    fg_gpupolicy_digest(&again, d2);
    if (strcmp(d1, d2) != 0)
        abort();
    json_object_put(enc);
}

/* Saves s and restores the text into a fresh state made for o; aborts when that is refused. */
static json_object *save_restore(const struct fg_rec_state *s, const struct fg_rec_opts *o, struct fg_rec_state *back)
{
    char msg[FG_ERRMSG_MAX];
    json_object *enc = fg_checkpoint_encode(s);
    if (!fg_rec_init(back, o) || fg_checkpoint_decode(enc, back, msg) != FG_OK)
        abort(); /* what was restored cannot be saved and restored again */
    return enc;
}

static void checkpoint(json_object *state, const struct fg_rec_opts *o)
{
    struct fg_rec_state st, back, again;
    char msg[FG_ERRMSG_MAX];
    if (!fg_rec_init(&st, o) || fg_checkpoint_decode(state, &st, msg) != FG_OK)
        return;
    /* The first save is canonical (buckets in order; the total summed in that order, so it may differ
     * in the last bit from the input's sum): from then on saving and restoring changes nothing. */
    json_object *enc = save_restore(&st, o, &back);
    json_object *enc2 = save_restore(&back, o, &again);
    json_object *enc3 = fg_checkpoint_encode(&again);
    if (strcmp(fg_json_text(enc2, NULL), fg_json_text(enc3, NULL)) != 0)
        abort();
    json_object_put(enc3);
    json_object_put(enc2);
    json_object_put(enc);

    struct fg_rec_result res;
    struct fg_rec_usage use;
    struct fg_rec_decision dec;
    fg_rec_recommend(&st, o, NOW_MS, &res);
    fg_rec_usage(&st, o, NOW_MS, &use);
    fg_rec_decide(&st, o, NOW_MS, &dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *obj = NULL;
    if (fg_json_parse((const char *)data, size, 1u << 20, &obj, NULL) != FG_OK)
        return 0;
    json_object *spec = fg_json_get(obj, "spec", NULL);

    struct fg_rec_opts o = { .gpu_memory_mib = 81920 };
    fg_gpupolicy_spec_defaults(&o.policy);
    policy(spec, &o);

    struct fg_gpuworkload_spec w;
    char msg[FG_ERRMSG_MAX];
    if (fg_gpuworkload_decode(spec, &w, msg) == FG_OK)
        fg_gpuworkload_spec_cleanup(&w);
    (void)fg_gpuworkload_policy_get(obj);

    json_object *state = fg_json_get(obj, "status", "state", NULL);
    checkpoint(state ? state : obj, &o);
    json_object_put(obj);
    return 0;
}
