/* text — reference-counted immutable strings shared between the store and replies; see text.h. */
#include "e2e/apiserver/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

struct fg__text *fg__text_new(const char *data, size_t len)
{
    struct fg__text *t = fg_malloc(sizeof(*t) + len + 1);
    t->refs = 1;
    t->len = len;
    memcpy(t->data, data, len);
    t->data[len] = '\0';
    return t;
}

/* Appends bytes; an unlimited buffer cannot refuse them (see buf.h). */
static void put(struct fg_buf *b, const char *s, size_t n)
{
    if (fg_buf_append(b, s, n) != FG_OK)
        abort();
}

/* A JSON string as json-c escapes it: \" \\ \b \f \n \r \t, other control bytes as \u00xx, '/' and
 * everything from 0x20 up (UTF-8 included) as they are. */
void fg__json_write_string(struct fg_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    put(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(b, s + start, i - start);
        char esc[6] = { '\\', (char)c, 0, 0, 0, 0 };
        size_t len = 2;
        switch (c) {
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '"': case '\\': break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            len = 6;
        }
        put(b, esc, len);
        start = i + 1;
    }
    put(b, s + start, n - start);
    put(b, "\"", 1);
}

static void put_int(struct fg_buf *b, int64_t v)
{
    char digits[24], *p = digits + sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    put(b, p, (size_t)(digits + sizeof(digits) - p));
}

void fg__json_write(struct fg_buf *b, json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_null: put(b, "null", 4); break;
    case json_type_boolean: json_object_get_boolean(o) ? put(b, "true", 4) : put(b, "false", 5); break;
    case json_type_int: put_int(b, json_object_get_int64(o)); break;
    case json_type_string: fg__json_write_string(b, json_object_get_string(o), (size_t)json_object_get_string_len(o)); break;
    case json_type_double: { /* json-c keeps a parsed number's own text: let it write it */
        size_t len = 0;
        const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
        put(b, s, len);
        break;
    }
    case json_type_array:
        put(b, "[", 1);
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            if (i)
                put(b, ",", 1);
            fg__json_write(b, json_object_array_get_idx(o, i));
        }
        put(b, "]", 1);
        break;
    case json_type_object: {
        bool first = true;
        put(b, "{", 1);
        json_object_object_foreach(o, key, value) {
            if (!first)
                put(b, ",", 1);
            first = false;
            fg__json_write_string(b, key, strlen(key));
            put(b, ":", 1);
            fg__json_write(b, value);
        }
        put(b, "}", 1);
        break;
    }
    }
}

struct fg__text *fg__text_from_json(json_object *o)
{
    struct fg_buf b = FG_BUF_INIT;
    fg__json_write(&b, o);
    struct fg__text *t = fg__text_new(fg_buf_str(&b), b.len);
    fg_buf_cleanup(&b);
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
