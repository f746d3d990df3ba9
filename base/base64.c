/* Standard base64 through OpenSSL's block coder (base64.h). */
#include "base/base64.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

char *fg_base64_encode(const void *data, size_t len)
{
    char *out = fg_malloc(4 * ((len + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

unsigned char *fg_base64_decode(const char *text, size_t *len)
{
    size_t n = 0;
    char *clean = fg_malloc(strlen(text) + 1);
    for (const char *p = text; *p; p++)
        if (!strchr(" \t\r\n", *p))
            clean[n++] = *p;
    clean[n] = '\0';
    size_t pad = (n && clean[n - 1] == '=') + (n > 1 && clean[n - 2] == '=');
    /* '=' only at the end: EVP_DecodeBlock would read "ab=c" as bytes */
    bool misplaced = strcspn(clean, "=") < n - pad;
    unsigned char *out = fg_malloc(n / 4 * 3 + 1);
    int got = n % 4 || misplaced ? -1 : EVP_DecodeBlock(out, (const unsigned char *)clean, (int)n);
    free(clean);
    if (got < 0 || (size_t)got < pad) {
        free(out);
        return NULL;
    }
    got -= (int)pad;
    out[got] = '\0';
    if (len)
        *len = (size_t)got;
    return out;
}
