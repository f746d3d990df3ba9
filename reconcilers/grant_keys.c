/* The grant keys as a component holds them (grant_keys.h). */
#include "reconcilers/grant_keys.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/kobj.h"
#include "operator/kube/resource.h"
#include "operator/manager/informers.h"

struct fg_grant_watch {
    struct fg_informer *inf;
    struct fg_grant_keys keys;
    char problem[FG_ERRMSG_MAX];
    char ns[64];
    char component[32];
};

static void set_problem(struct fg_grant_watch *k, const char *problem)
{
    if (strcmp(k->problem, problem) == 0)
        return;
    snprintf(k->problem, sizeof(k->problem), "%s", problem);
    if (problem[0])
        fg_log(FG_LOG_WARN, k->component, "no grant key, nothing is signed or verified: %s", problem);
}

static void load(struct fg_grant_watch *k, struct fg_kobj *obj)
{
    json_object *secret = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_kobj_parse(obj, &secret, msg) != FG_OK) {
        OPENSSL_cleanse(&k->keys, sizeof(k->keys));
        set_problem(k, msg);
        return;
    }
    struct fg_grant_keys fresh;
    enum fg_err err = fg_grant_keys_from_secret(secret, &fresh, msg);
    json_object_put(secret);
    if (err != FG_OK) {
        OPENSSL_cleanse(&k->keys, sizeof(k->keys));
        set_problem(k, msg);
        return;
    }
    bool was_missing = k->keys.current_len == 0;
    bool rotated = !was_missing && (fresh.current_len != k->keys.current_len ||
                                    CRYPTO_memcmp(fresh.current, k->keys.current, fresh.current_len) != 0);
    k->keys = fresh;
    OPENSSL_cleanse(&fresh, sizeof(fresh));
    set_problem(k, "");
    if (was_missing || rotated)
        fg_log(FG_LOG_INFO, k->component, "grant key %s%s", was_missing ? "loaded" : "rotated",
               k->keys.previous_len ? " (the previous key is accepted too)" : "");
}

static void on_add(void *ud, struct fg_kobj *obj)
{
    load(ud, obj);
}

static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    load(ud, obj);
}

static void on_delete(void *ud, struct fg_kobj *obj)
{
    (void)obj;
    struct fg_grant_watch *k = ud;
    OPENSSL_cleanse(&k->keys, sizeof(k->keys));
    char why[FG_ERRMSG_MAX];
    snprintf(why, sizeof(why), "Secret %s/" FG_SECRET_GRANT_KEY " was deleted", k->ns);
    set_problem(k, why);
}

static const struct fg_resource_handler handler = { on_add, on_update, on_delete };

static void keys_free(void *ud)
{
    struct fg_grant_watch *k = ud;
    OPENSSL_cleanse(k, sizeof(*k));
    free(k);
}

enum fg_err fg_grant_watch_setup(struct fg_manager *m, const char *ns, const char *component,
                                 struct fg_grant_watch **out, char *errmsg)
{
    struct fg_informer *inf;
    enum fg_err err = fg_informer_factory_get_named(fg_manager_informers(m), &fg_kube_secrets, ns, FG_SECRET_GRANT_KEY,
                                                    &inf, errmsg);
    if (err)
        return err;
    struct fg_grant_watch *k = fg_calloc(1, sizeof(*k));
    k->inf = inf;
    snprintf(k->ns, sizeof(k->ns), "%s", ns);
    snprintf(k->component, sizeof(k->component), "%s", component);
    snprintf(k->problem, sizeof(k->problem), "Secret %s/" FG_SECRET_GRANT_KEY " not found", ns);
    fg_manager_on_free(m, keys_free, k);
    if ((err = fg_informer_add_handler(inf, &handler, k)))
        return fg_errmsg(errmsg, err, "cannot watch the grant key");
    *out = k;
    return FG_OK;
}

const struct fg_grant_keys *fg_grant_watch_get(const struct fg_grant_watch *k)
{
    return &k->keys;
}

bool fg_grant_watch_synced(const struct fg_grant_watch *k)
{
    return fg_informer_has_synced(k->inf);
}

const char *fg_grant_watch_problem(const struct fg_grant_watch *k)
{
    return k->problem;
}
