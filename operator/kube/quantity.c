/* quantity — Kubernetes resource quantities as milli-units; see quantity.h. */
#include "operator/kube/quantity.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_DIGITS 30   /* significant digits kept exactly; more only round */

typedef __int128 i128;

static const i128 LIMIT = (i128)INT64_MAX;

/* 10^e as a 128-bit integer, e in 0..36. */
static i128 pow10_i128(int e)
{
    i128 r = 1;
    while (e-- > 0)
        r *= 10;
    return r;
}

struct suffix {
    int pow2;       /* multiply by 2^pow2 */
    int pow10;      /* and by 10^pow10 (may be negative) */
};

/* Reads the suffix at s; false when it is not one. */
static bool parse_suffix(const char *s, struct suffix *out)
{
    static const struct { const char *text; int pow2, pow10; } table[] = {
        { "", 0, 0 },    { "n", 0, -9 },  { "u", 0, -6 },  { "m", 0, -3 },  { "k", 0, 3 },   { "M", 0, 6 },   { "G", 0, 9 },
        { "T", 0, 12 },  { "P", 0, 15 },  { "E", 0, 18 },  { "Ki", 10, 0 }, { "Mi", 20, 0 },
        { "Gi", 30, 0 }, { "Ti", 40, 0 }, { "Pi", 50, 0 }, { "Ei", 60, 0 },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (!strcmp(s, table[i].text)) {
            out->pow2 = table[i].pow2;
            out->pow10 = table[i].pow10;
            return true;
        }
    }
    if (*s != 'e' && *s != 'E')
        return false;
    const char *p = s + 1;
    int sign = 1, exp = 0, n = 0;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    for (; isdigit((unsigned char)*p) && n < 4; p++, n++)
        exp = exp * 10 + (*p - '0');
    if (!n || *p)
        return false;
    out->pow2 = 0;
    out->pow10 = sign * exp;
    return true;
}

enum fg_err fg_quantity_parse(const char *s, int64_t *milli, char *errmsg)
{
    if (!s)
        return fg_errmsg(errmsg, FG_E_PARSE, "quantity missing");
    const char *p = s;
    bool negative = false;
    if (*p == '+' || *p == '-')
        negative = *p++ == '-';
    /* the first MAX_DIGITS significant digits exactly; past them, integer digits scale the value
     * and any non-zero digit only makes it round up */
    i128 mantissa = 0;
    int digits = 0, frac = 0, dropped_int = 0;
    bool dot = false, any_digit = false, inexact = false;
    for (; isdigit((unsigned char)*p) || (*p == '.' && !dot); p++) {
        if (*p == '.') {
            dot = true;
            continue;
        }
        any_digit = true;
        if (mantissa == 0 && *p == '0') {
            frac += dot;
            continue;   /* leading zeros carry no precision */
        }
        if (digits < MAX_DIGITS) {
            mantissa = mantissa * 10 + (*p - '0');
            digits++;
            frac += dot;
        } else {
            dropped_int += !dot;
            inexact = inexact || *p != '0';
        }
    }
    struct suffix suf;
    if (!any_digit || !parse_suffix(p, &suf))
        return fg_errmsg(errmsg, FG_E_PARSE, "quantity \"%s\" is not a number with an optional suffix "
                                             "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent)", s);
    /* |value| = mantissa * 2^pow2 * 10^e10 milli-units, rounded away from zero as kube's
     * MilliValue rounds */
    int e10 = suf.pow10 + 3 - frac + dropped_int;
    i128 q;
    if (mantissa == 0) {
        q = 0;
    } else if (e10 >= 0) {
        if (e10 > 36)
            return fg_errmsg(errmsg, FG_E_TOO_BIG, "quantity \"%s\" is too large", s);
        q = mantissa;
        for (int i = 0; i < e10; i++)
            if ((q *= 10) > LIMIT)
                return fg_errmsg(errmsg, FG_E_TOO_BIG, "quantity \"%s\" is too large", s);
        for (int i = 0; i < suf.pow2; i++)
            if ((q *= 2) > LIMIT)
                return fg_errmsg(errmsg, FG_E_TOO_BIG, "quantity \"%s\" is too large", s);
        q += inexact;
    } else if (-e10 > 36) {
        q = 1;   /* far below one milli-unit: rounds up to one */
    } else {
        /* mantissa * 2^pow2 / 10^-e10 without overflow: whole part a * 2^pow2, then the remainder
         * doubled bit by bit (long division) */
        i128 den = pow10_i128(-e10), a = mantissa / den, r = mantissa % den, bits = 0;
        for (int i = 0; i < suf.pow2; i++) {
            if ((a *= 2) > LIMIT)
                return fg_errmsg(errmsg, FG_E_TOO_BIG, "quantity \"%s\" is too large", s);
            bits *= 2;
            r *= 2;
            if (r >= den) {
                r -= den;
                bits++;
            }
        }
        q = a + bits + (r != 0 || inexact);
    }
    if (q > LIMIT)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "quantity \"%s\" is too large", s);
    *milli = (int64_t)(negative ? -q : q);
    return FG_OK;
}

enum fg_err fg_quantity_json(json_object *v, int64_t *milli, char *errmsg)
{
    char text[64];
    switch (json_object_get_type(v)) {
    case json_type_string:
        return fg_quantity_parse(json_object_get_string(v), milli, errmsg);
    case json_type_int:
        snprintf(text, sizeof text, "%lld", (long long)json_object_get_int64(v));
        return fg_quantity_parse(text, milli, errmsg);
    case json_type_double:   /* the number as written (json-c keeps a parsed double's text): 0.1, not 0.1000...01 */
        return fg_quantity_parse(json_object_get_string(v), milli, errmsg);
    default:
        return fg_errmsg(errmsg, FG_E_PARSE, "a quantity must be a string or a number");
    }
}

void fg_quantity_format(int64_t milli, char out[FG_QUANTITY_MAX])
{
    if (milli % 1000 != 0) {
        snprintf(out, FG_QUANTITY_MAX, "%lldm", (long long)milli);
        return;
    }
    static const char *const binary[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
    long long units = (long long)(milli / 1000);
    int k = -1;
    while (k + 1 < 6 && units != 0 && units % 1024 == 0 && (units / 1024 != 0)) {
        units /= 1024;
        k++;
    }
    snprintf(out, FG_QUANTITY_MAX, "%lld%s", units, k >= 0 ? binary[k] : "");
}

int64_t fg_quantity_units(int64_t milli)
{
    return milli >= 0 ? milli / 1000 + (milli % 1000 != 0) : milli / 1000;
}
