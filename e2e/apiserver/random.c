/* random — OpenSSL's random bytes, drawn in batches; see random.h. */
#include "e2e/apiserver/random.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL 4096

static _Thread_local unsigned char pool[POOL];
static _Thread_local size_t left;

void fg__random_bytes(void *buf, size_t n)
{
    unsigned char *out = buf;
    while (n) {
        if (!left) {
            if (RAND_bytes(pool, POOL) != 1)
                abort(); /* OpenSSL's generator fails only when it cannot seed itself */
            left = POOL;
        }
        size_t take = n < left ? n : left;
        memcpy(out, pool + POOL - left, take);
        memset(pool + POOL - left, 0, take); /* handed out once */
        left -= take;
        out += take;
        n -= take;
    }
}

void fg__random_uuid(char out[37])
{
    unsigned char b[16];
    fg__random_bytes(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
