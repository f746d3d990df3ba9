/* text — reference-counted immutable strings shared between the store and replies; see text.h. */
#include "e2e/apiserver/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* The writer's output: a text being built, grown geometrically, so that a stored object's text needs
 * no copy at the end. */
struct out {
    struct fg__text *t;
    size_t cap; /* bytes t->data may hold, not counting the terminator */
};

static void out_init(struct out *o, size_t cap)
{
    o->t = fg_malloc(sizeof(*o->t) + cap + 1);
    o->t->refs = 1;
    o->t->len = 0;
    o->cap = cap;
}

static void grow(struct out *o, size_t n)
{
    while (o->cap < o->t->len + n)
        o->cap *= 2;
    o->t = fg_realloc(o->t, sizeof(*o->t) + o->cap + 1);
}

static inline char *reserve(struct out *o, size_t n)
{
    if (o->t->len + n > o->cap)
        grow(o, n);
    return o->t->data + o->t->len;
}

static inline void put(struct out *o, const char *s, size_t n)
{
    memcpy(reserve(o, n), s, n);
    o->t->len += n;
}

static inline void put_char(struct out *o, char c)
{
    *reserve(o, 1) = c;
    o->t->len++;
}

/* Which bytes a JSON string escapes as json-c does: control bytes, '"' and '\\'. */
static const bool needs_escape[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1,
    [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1, [0x0e] = 1, [0x0f] = 1,
    [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1,
    [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1,
    ['"'] = 1, ['\\'] = 1,
};

/* A JSON string as json-c escapes it: \" \\ \b \f \n \r \t, other control bytes as \u00xx, '/' and
 * everything from 0x20 up (UTF-8 included) as they are. */
static void write_string(struct out *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char *d = reserve(o, 6 * n + 2), *start = d;
    *d++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!needs_escape[c]) {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        case '"': case '\\': *d++ = (char)c; break;
        default:
            memcpy(d, "u00", 3);
            d[3] = hex[c >> 4];
            d[4] = hex[c & 15];
            d += 5;
        }
    }
    *d++ = '"';
    o->t->len += (size_t)(d - start);
}

static void write_int(struct out *o, int64_t v)
{
    char digits[24], *p = digits + sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    put(o, p, (size_t)(digits + sizeof(digits) - p));
}

static void write_value(struct out *o, json_object *v, void (*visit)(json_object *object))
{
    switch (json_object_get_type(v)) {
    case json_type_null: put(o, "null", 4); break;
    case json_type_boolean: json_object_get_boolean(v) ? put(o, "true", 4) : put(o, "false", 5); break;
    case json_type_int: write_int(o, json_object_get_int64(v)); break;
    case json_type_string: write_string(o, json_object_get_string(v), (size_t)json_object_get_string_len(v)); break;
    case json_type_double: { /* json-c keeps a parsed number's own text: let it write it */
        size_t len = 0;
        const char *s = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN, &len);
        put(o, s, len);
        break;
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        put_char(o, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                put_char(o, ',');
            write_value(o, json_object_array_get_idx(v, i), visit);
        }
        put_char(o, ']');
        break;
    }
    case json_type_object: {
        bool first = true;
        if (visit)
            visit(v);
        put_char(o, '{');
        json_object_object_foreach(v, key, value) {
            if (!first)
                put_char(o, ',');
            first = false;
            write_string(o, key, strlen(key));
            put_char(o, ':');
            write_value(o, value, visit);
        }
        put_char(o, '}');
        break;
    }
    }
}

/* Appends what o holds to b and frees it; an unlimited buffer cannot refuse it (see buf.h). */
static void out_append_to(struct out *o, struct fg_buf *b)
{
    if (fg_buf_append(b, o->t->data, o->t->len) != FG_OK)
        abort();
    free(o->t);
}

void fg__json_write_string(struct fg_buf *b, const char *s, size_t len)
{
    struct out o;
    out_init(&o, 6 * len + 2);
    write_string(&o, s, len);
    out_append_to(&o, b);
}

void fg__json_write(struct fg_buf *b, json_object *o)
{
    struct out out;
    out_init(&out, 4096);
    write_value(&out, o, NULL);
    out_append_to(&out, b);
}

struct fg__text *fg__text_from_json(json_object *o)
{
    return fg__text_from_json_visiting(o, NULL);
}

struct fg__text *fg__text_from_json_visiting(json_object *o, void (*visit)(json_object *object))
{
    struct out out;
    out_init(&out, 4096);
    write_value(&out, o, visit);
    struct fg__text *t = fg_realloc(out.t, sizeof(*out.t) + out.t->len + 1); /* to fit: it may be kept long */
    t->data[t->len] = '\0';
    return t;
}

struct fg__text *fg__text_ref(struct fg__text *t)
{
    t->refs++;
    return t;
}

void fg__text_unref(struct fg__text *t)
{
    if (t && --t->refs == 0)
        free(t);
}

static void release_reference(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    fg__text_unref(arg);
}

void fg__text_add_to_evbuffer(struct fg__text *t, struct evbuffer *buf)
{
    fg__text_ref(t);
    if (evbuffer_add_reference(buf, t->data, t->len, release_reference, t) != 0)
        fg__text_unref(t);
}
