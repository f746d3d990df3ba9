/* random — OpenSSL's random bytes, drawn in batches; see random.h. */
#include "e2e/apiserver/random.h"

#include <openssl/rand.h>
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
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    fg__random_bytes(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p = '\0';
}
