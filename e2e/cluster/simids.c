/* simids — identities derived from their owners' names by SHA-256; see simids.h. */
#include "e2e/cluster/simids.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "base/assert.h"

/* SHA-256 over kind, then each part with its terminating NUL (so "a","bc" and "ab","c" differ). */
static void digest(const char *kind, const char *a, const char *b, unsigned n, unsigned char out[32])
{
    char num[16];
    snprintf(num, sizeof num, "%u", n);
    const char *parts[] = { kind, a, b, num };
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    fg_assert(ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL));
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        fg_assert(EVP_DigestUpdate(ctx, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1));
    unsigned len = 0;
    fg_assert(EVP_DigestFinal_ex(ctx, out, &len) && len == 32);
    EVP_MD_CTX_free(ctx);
}

void fg_sim_gpu_uuid(const char *node, unsigned index, char *out)
{
    unsigned char d[32];
    digest("gpu", node, NULL, index, d);
    snprintf(out, FG_SIM_GPU_UUID_LEN + 1,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", d[0], d[1], d[2], d[3],
             d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]);
}

void fg_sim_container_id(const char *pod_uid, const char *name, unsigned restarts, char *out)
{
    unsigned char d[32];
    digest("container", pod_uid, name, restarts, d);
    for (size_t i = 0; i < sizeof d; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

unsigned fg_sim_container_pid(const char *pod_uid, const char *name, unsigned restarts)
{
    unsigned char d[32];
    digest("pid", pod_uid, name, restarts, d);
    unsigned v = (unsigned)d[0] << 24 | (unsigned)d[1] << 16 | (unsigned)d[2] << 8 | d[3];
    return FG_SIM_PID_MIN + v % (FG_SIM_PID_MAX - FG_SIM_PID_MIN);
}
