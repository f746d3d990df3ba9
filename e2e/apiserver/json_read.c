/* json_read — strict JSON into right-sized json-c trees; see json_read.h. */
#include "e2e/apiserver/json_read.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

/* A member of an object (key: offset into keys) or an element of an array (key SIZE_MAX) read but
 * not yet placed: the container is made once its size is known. */
struct item {
    size_t key;
    json_object *value;
};

struct reader {
    const char *start, *p, *end;
    int depth;
    const char *why; /* the reason it stopped, NULL while fine */
    const char *at;  /* where */
    struct item *items;
    size_t nitems, cap;
    struct fg_buf keys; /* keys of the members read, NUL-terminated, until their object is made */
    struct fg_buf text; /* a string with escapes, decoded */
    json_object *empty; /* the one {} every empty object of the document is */
};

static json_object *value(struct reader *r);

static bool fail(struct reader *r, const char *why)
{
    if (!r->why) {
        r->why = why;
        r->at = r->p;
    }
    return false;
}

static json_object *bad(struct reader *r, const char *why)
{
    fail(r, why);
    return NULL;
}

static void skip_space(struct reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static void push(struct reader *r, size_t key, json_object *v)
{
    if (r->nitems == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->items = fg_realloc(r->items, r->cap * sizeof(*r->items));
    }
    r->items[r->nitems++] = (struct item){ key, v };
}

/* Appends to b; an unlimited buffer cannot refuse (see buf.h). */
static void put(struct fg_buf *b, const char *s, size_t n)
{
    if (fg_buf_append(b, s, n) != FG_OK)
        abort();
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static void put_utf8(struct fg_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    put(b, u, n);
}

/* A string (r->p at its opening quote): *s and *len point into the input when it has no escapes,
 * else into r->text, decoded (a lone surrogate becomes U+FFFD, as json-c makes it). */
static bool string(struct reader *r, const char **s, size_t *len)
{
    const char *begin = ++r->p;
    while (r->p < r->end && *r->p != '"' && *r->p != '\\' && (unsigned char)*r->p >= 0x20)
        r->p++;
    if (r->p < r->end && *r->p == '"') {
        *s = begin;
        *len = (size_t)(r->p++ - begin);
        return true;
    }
    fg_buf_reset(&r->text);
    put(&r->text, begin, (size_t)(r->p - begin));
    while (r->p < r->end && *r->p != '"') {
        unsigned char c = (unsigned char)*r->p;
        if (c < 0x20)
            return fail(r, "control character in a string");
        if (c != '\\') {
            const char *run = r->p;
            while (r->p < r->end && *r->p != '"' && *r->p != '\\' && (unsigned char)*r->p >= 0x20)
                r->p++;
            put(&r->text, run, (size_t)(r->p - run));
            continue;
        }
        if (r->end - r->p < 2)
            break;
        char e = r->p[1], one = 0;
        r->p += 2;
        switch (e) {
        case '"': case '\\': case '/': one = e; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            int cp = r->end - r->p >= 4 ? hex4(r->p) : -1;
            if (cp < 0)
                return fail(r, "bad \\u escape");
            r->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
                int low = hex4(r->p + 2);
                if (low >= 0xdc00 && low < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                    r->p += 6;
                }
            }
            put_utf8(&r->text, cp >= 0xd800 && cp < 0xe000 ? 0xfffd : (unsigned)cp);
            continue;
        }
        default:
            r->p -= 2;
            return fail(r, "bad escape in a string");
        }
        put(&r->text, &one, 1);
    }
    if (r->p >= r->end)
        return fail(r, "unterminated string");
    r->p++;
    *s = fg_buf_str(&r->text);
    *len = r->text.len;
    return true;
}

static json_object *number(struct reader *r)
{
    const char *begin = r->p;
    bool negative = r->p < r->end && *r->p == '-', integral = true;
    r->p += negative;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9')
        return bad(r, "bad number");
    uint64_t u = 0;
    bool overflow = false;
    if (*r->p == '0') {
        r->p++;
    } else {
        for (; r->p < r->end && *r->p >= '0' && *r->p <= '9'; r->p++) {
            unsigned d = (unsigned)(*r->p - '0');
            overflow |= u > (UINT64_MAX - d) / 10;
            u = u * 10 + d;
        }
    }
    if (r->p < r->end && *r->p == '.') {
        integral = false;
        if (++r->p >= r->end || *r->p < '0' || *r->p > '9')
            return bad(r, "bad number");
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        integral = false;
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9')
            return bad(r, "bad number");
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
    }
    if (integral && !overflow && !negative && u <= (uint64_t)INT64_MAX)
        return json_object_new_int64((int64_t)u);
    if (integral && !overflow && negative && u <= (uint64_t)INT64_MAX + 1)
        return json_object_new_int64(u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u);
    if (integral && !overflow && !negative)
        return json_object_new_uint64(u);
    fg_buf_reset(&r->text); /* a double, keeping its text as json-c does */
    put(&r->text, begin, (size_t)(r->p - begin));
    errno = 0;
    double d = strtod(fg_buf_str(&r->text), NULL);
    return json_object_new_double_s(d, fg_buf_str(&r->text));
}

/* Fixed words: true, false, null. */
static json_object *word(struct reader *r)
{
    static const struct { const char *text; size_t len; int kind; } words[] = {
        { "true", 4, 1 }, { "false", 5, 0 }, { "null", 4, -1 },
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
        if ((size_t)(r->end - r->p) >= words[i].len && !memcmp(r->p, words[i].text, words[i].len)) {
            r->p += words[i].len;
            return words[i].kind < 0 ? NULL : json_object_new_boolean(words[i].kind);
        }
    }
    return bad(r, "unexpected character");
}

/* Are the keys of the members from base on all different (so json-c need not look each up before
 * adding it)? Only small objects are checked; a large one says no, and each key is looked up. */
static bool distinct_keys(const struct reader *r, size_t base)
{
    if (r->nitems - base > 16)
        return false;
    for (size_t i = base; i < r->nitems; i++)
        for (size_t k = base; k < i; k++)
            if (!strcmp(r->keys.data + r->items[i].key, r->keys.data + r->items[k].key))
                return false;
    return true;
}

/* Drops items[from..] (their values too), after a failure. */
static void drop_items(struct reader *r, size_t from)
{
    for (size_t i = from; i < r->nitems; i++)
        json_object_put(r->items[i].value);
    r->nitems = from;
}

/* An array or object (r->p at its opening bracket), its items collected first, then placed in a
 * container made to their number. */
static json_object *container(struct reader *r, bool object)
{
    if (++r->depth > FG_JSON_MAX_DEPTH)
        return bad(r, "nesting too deep");
    char close = object ? '}' : ']';
    size_t base = r->nitems, keys_base = r->keys.len;
    r->p++;
    skip_space(r);
    bool more = r->p < r->end && *r->p != close;
    while (more) {
        size_t key = SIZE_MAX;
        if (object) {
            const char *s;
            size_t len;
            if (r->p >= r->end || *r->p != '"') {
                fail(r, "expected a string as an object key");
                goto out_fail;
            }
            if (!string(r, &s, &len))
                goto out_fail;
            key = r->keys.len;
            put(&r->keys, s, len);
            put(&r->keys, "", 1);
            skip_space(r);
            if (r->p >= r->end || *r->p != ':') {
                fail(r, "expected ':' after an object key");
                goto out_fail;
            }
            r->p++;
        }
        json_object *v = value(r);
        if (r->why)
            goto out_fail;
        push(r, key, v);
        skip_space(r);
        more = r->p < r->end && *r->p == ',';
        if (more) {
            r->p++;
            skip_space(r);
        }
    }
    if (r->p >= r->end || *r->p != close) {
        fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
        goto out_fail;
    }
    r->p++;
    r->depth--;
    size_t n = r->nitems - base;
    json_object *c;
    if (object && !n) {
        c = json_object_get(r->empty ? r->empty : (r->empty = json_object_new_object()));
    } else if (object) {
        c = json_object_new_object();
        int fit = (int)(n * 3 / 2 + 1); /* under json-c's 0.66 load, so no insert grows it */
        if (fit < json_object_get_object(c)->size && lh_table_resize(json_object_get_object(c), fit) != 0)
            abort(); /* json-c fails a resize only when allocation fails */
        unsigned opts = distinct_keys(r, base) ? JSON_C_OBJECT_ADD_KEY_IS_NEW : 0;
        for (size_t i = base; i < r->nitems; i++)
            json_object_object_add_ex(c, r->keys.data + r->items[i].key, r->items[i].value, opts);
    } else {
        c = json_object_new_array_ext((int)(n ? n : 1));
        for (size_t i = base; i < r->nitems; i++)
            json_object_array_add(c, r->items[i].value);
    }
    r->nitems = base;
    r->keys.len = keys_base;
    return c;
out_fail:
    drop_items(r, base);
    r->keys.len = keys_base;
    return NULL;
}

static json_object *value(struct reader *r)
{
    skip_space(r);
    if (r->p >= r->end)
        return bad(r, "unexpected end");
    switch (*r->p) {
    case '{': return container(r, true);
    case '[': return container(r, false);
    case '"': {
        const char *s;
        size_t len;
        return string(r, &s, &len) ? json_object_new_string_len(s, (int)len) : NULL;
    }
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return number(r);
    default:
        return word(r);
    }
}

enum fg_err fg__json_read(const char *data, size_t len, size_t max_bytes, json_object **out, char *errmsg)
{
    *out = NULL;
    if (max_bytes && len > max_bytes)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "JSON document of %zu bytes exceeds the %zu-byte limit", len,
                         max_bytes);
    struct reader r = { .start = data, .p = data, .end = data + len };
    json_object *v = value(&r);
    skip_space(&r);
    enum fg_err err = FG_OK;
    if (r.why && r.at >= r.end)
        err = fg_errmsg(errmsg, FG_E_PARSE, "truncated JSON: input ended after %zu bytes", len);
    else if (r.why)
        err = fg_errmsg(errmsg, FG_E_PARSE, "invalid JSON at byte %zu: %s", (size_t)(r.at - r.start), r.why);
    else if (r.p != r.end)
        err = fg_errmsg(errmsg, FG_E_PARSE, "invalid JSON: trailing data at byte %zu", (size_t)(r.p - r.start));
    if (err)
        json_object_put(v);
    else
        *out = v;
    json_object_put(r.empty);
    free(r.items);
    fg_buf_cleanup(&r.keys);
    fg_buf_cleanup(&r.text);
    return err;
}
