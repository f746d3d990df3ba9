/* The scheduler's signature on a placement (grant.h). */
#include "reconcilers/grant.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/mem.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

#define PREFIX "v1."
#define MAC_LEN 32
#define MAC_TEXT_LEN 43 /* 32 bytes in unpadded base64url */

/* HMAC-SHA256 of the grant's text under key into mac. */
static enum fg_err mac_of(const struct fg_grant *g, const unsigned char *key, size_t key_len,
                          unsigned char mac[MAC_LEN])
{
    if (!g->pod_uid || !*g->pod_uid || !g->node || !*g->node || !g->gpu_uuid || !*g->gpu_uuid ||
        g->compute_milli < 0 || g->memory_mib < 0 || key_len < FG_GRANT_KEY_MIN)
        return FG_E_INVAL;
    char *text = fg_asprintf("fracgpu.io/grant/v1\n%s\n%s\n%s\n%" PRId64 "\n%" PRId64, g->pod_uid, g->node,
                             g->gpu_uuid, g->compute_milli, g->memory_mib);
    unsigned int len = 0;
    unsigned char *ok = HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)text, strlen(text), mac, &len);
    free(text);
    return ok && len == MAC_LEN ? FG_OK : FG_E_IO;
}

/* mac as unpadded base64url into out (MAC_TEXT_LEN + 1 bytes). */
static void mac_text(const unsigned char mac[MAC_LEN], char out[MAC_TEXT_LEN + 1])
{
    unsigned char std[64];
    EVP_EncodeBlock(std, mac, MAC_LEN); /* 44 characters, the last one '=' */
    for (int i = 0; i < MAC_TEXT_LEN; i++)
        out[i] = std[i] == '+' ? '-' : std[i] == '/' ? '_' : (char)std[i];
    out[MAC_TEXT_LEN] = '\0';
}

enum fg_err fg_grant_sign(const struct fg_grant *g, const unsigned char *key, size_t key_len, char out[FG_GRANT_MAX])
{
    unsigned char mac[MAC_LEN];
    enum fg_err err = mac_of(g, key, key_len, mac);
    if (err != FG_OK)
        return err;
    char text[MAC_TEXT_LEN + 1];
    mac_text(mac, text);
    snprintf(out, FG_GRANT_MAX, PREFIX "%s", text);
    return FG_OK;
}

/* Whether value is the grant for g under one key. */
static bool verifies(const struct fg_grant *g, const char *value, const unsigned char *key, size_t key_len)
{
    char expected[FG_GRANT_MAX];
    if (fg_grant_sign(g, key, key_len, expected) != FG_OK)
        return false;
    return CRYPTO_memcmp(expected, value, strlen(expected) + 1) == 0;
}

enum fg_grant_verdict fg_grant_verify(const struct fg_grant *g, const char *value, const struct fg_grant_keys *keys)
{
    if (!value || !*value)
        return FG_GRANT_MISSING;
    size_t len = strlen(value);
    if (len != strlen(PREFIX) + MAC_TEXT_LEN || strncmp(value, PREFIX, strlen(PREFIX)) != 0 ||
        strspn(value + strlen(PREFIX), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") !=
            MAC_TEXT_LEN)
        return FG_GRANT_MALFORMED;
    if (!keys || keys->current_len == 0)
        return FG_GRANT_NO_KEY;
    if (verifies(g, value, keys->current, keys->current_len))
        return FG_GRANT_VALID;
    if (keys->previous_len && verifies(g, value, keys->previous, keys->previous_len))
        return FG_GRANT_VALID_PREVIOUS;
    return FG_GRANT_MISMATCH;
}

const char *fg_grant_verdict_name(enum fg_grant_verdict v)
{
    switch (v) {
    case FG_GRANT_VALID: return "valid";
    case FG_GRANT_VALID_PREVIOUS: return "valid under the previous key";
    case FG_GRANT_MISSING: return "missing";
    case FG_GRANT_MALFORMED: return "malformed";
    case FG_GRANT_MISMATCH: return "forged or altered";
    case FG_GRANT_NO_KEY: return "no key to verify it";
    }
    return "unknown";
}

/* One key of the Secret's data into buf; optional keys may be absent (*len 0). */
static enum fg_err read_key(json_object *data, const char *name, bool required, unsigned char *buf, size_t *len,
                            char *errmsg)
{
    *len = 0;
    const char *text = fg_json_get_str(data, name, NULL);
    if (!text)
        return required ? fg_errmsg(errmsg, FG_E_INVAL, "Secret " FG_SECRET_GRANT_KEY " has no data.%s", name)
                        : FG_OK;
    size_t n = 0;
    unsigned char *bytes = fg_base64_decode(text, &n);
    if (!bytes)
        return fg_errmsg(errmsg, FG_E_INVAL, "Secret " FG_SECRET_GRANT_KEY ": data.%s is not base64", name);
    enum fg_err err = FG_OK;
    if (n < FG_GRANT_KEY_MIN || n > FG_GRANT_KEY_MAX)
        err = fg_errmsg(errmsg, FG_E_INVAL, "Secret " FG_SECRET_GRANT_KEY ": data.%s is %zu bytes, %d to %d expected",
                        name, n, FG_GRANT_KEY_MIN, FG_GRANT_KEY_MAX);
    else {
        memcpy(buf, bytes, n);
        *len = n;
    }
    OPENSSL_cleanse(bytes, n);
    free(bytes);
    return err;
}

enum fg_err fg_grant_keys_from_secret(json_object *secret, struct fg_grant_keys *keys, char *errmsg)
{
    memset(keys, 0, sizeof(*keys));
    json_object *data = fg_json_get(secret, "data", NULL);
    enum fg_err err = read_key(data, "key", true, keys->current, &keys->current_len, errmsg);
    if (err == FG_OK)
        err = read_key(data, "previous", false, keys->previous, &keys->previous_len, errmsg);
    if (err != FG_OK)
        OPENSSL_cleanse(keys, sizeof(*keys));
    return err;
}

const char *fg_grant_of_pod(json_object *pod, struct fg_grant *g, char *errmsg)
{
    const char *value = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GRANT, NULL);
    if (!value) {
        fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "no " FG_ANN_GRANT " annotation");
        return NULL;
    }
    g->pod_uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    g->node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    g->gpu_uuid = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_GPU_UUID, NULL);
    if (!g->pod_uid || !g->node || !g->gpu_uuid) {
        fg_errmsg(errmsg, FG_E_PARSE, "no %s", !g->pod_uid ? "metadata.uid" : !g->node ? "spec.nodeName" : FG_ANN_GPU_UUID);
        return NULL;
    }
    struct fg_allocation a;
    if (fg_allocation_from_pod(pod, &a, errmsg) != FG_OK)
        return NULL;
    g->compute_milli = a.compute_milli;
    g->memory_mib = a.memory_mib;
    return value;
}
