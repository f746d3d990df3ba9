/*
 * json_cut — removing one member from JSON text before it is parsed (see fg_json_cut_member).
 *
 * A scanner, not a parser: it knows just enough JSON to step over values — strings with their
 * escapes, nested objects and arrays, bare literals — so it can walk an object's members, find the
 * one named by the path, descend, and at the end close the gap the removed member leaves together
 * with one separating comma. Validation is the parser's job: on anything unexpected the scanner gives
 * up and the text is untouched.
 */
#include <stdbool.h>
#include <string.h>

#include "base/json.h"

#define NOT_FOUND ((size_t)-1)

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* s[i] is '"': returns the index after the closing quote. */
static size_t skip_string(const char *s, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return NOT_FOUND;
}

/* Returns the index after the value starting at s[i]. */
static size_t skip_value(const char *s, size_t i, size_t n)
{
    if (i >= n)
        return NOT_FOUND;
    if (s[i] == '"')
        return skip_string(s, i, n);
    if (s[i] == '{' || s[i] == '[') {
        size_t depth = 0;
        while (i < n) {
            char c = s[i];
            if (c == '"') {
                i = skip_string(s, i, n);
                if (i == NOT_FOUND)
                    return NOT_FOUND;
                continue;
            }
            if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return i + 1;
            }
            i++;
        }
        return NOT_FOUND;
    }
    size_t start = i;
    while (i < n && !strchr(",}] \t\r\n", s[i]))
        i++;
    return i > start ? i : NOT_FOUND;
}

struct member {
    size_t key;          /* index of the key's opening quote */
    size_t value;        /* index of the value's first byte */
    size_t value_end;    /* index after the value */
};

/* Finds member `key` of the object whose '{' is at s[obj]. */
static bool find_member(const char *s, size_t n, size_t obj, const char *key, struct member *m)
{
    size_t klen = strlen(key);
    size_t i = skip_ws(s, obj + 1, n);
    while (i < n && s[i] == '"') {
        size_t kend = skip_string(s, i, n);
        if (kend == NOT_FOUND)
            return false;
        bool match = kend - i - 2 == klen && memcmp(s + i + 1, key, klen) == 0;
        size_t colon = skip_ws(s, kend, n);
        if (colon >= n || s[colon] != ':')
            return false;
        size_t v = skip_ws(s, colon + 1, n);
        size_t vend = skip_value(s, v, n);
        if (vend == NOT_FOUND)
            return false;
        if (match) {
            *m = (struct member){ i, v, vend };
            return true;
        }
        i = skip_ws(s, vend, n);
        if (i >= n || s[i] != ',')
            return false;
        i = skip_ws(s, i + 1, n);
    }
    return false;
}

size_t fg_json_cut_member(char *text, size_t len, const char *const *path)
{
    size_t obj = skip_ws(text, 0, len);
    struct member m;
    if (!path || !path[0])
        return len;
    for (size_t depth = 0;; depth++) {
        if (obj >= len || text[obj] != '{' || !find_member(text, len, obj, path[depth], &m))
            return len;
        if (!path[depth + 1])
            break;
        obj = m.value;
    }
    /* Remove the member and one comma: the one after it, or else the one before it. */
    size_t from = m.key, to = m.value_end;
    size_t after = skip_ws(text, to, len);
    if (after < len && text[after] == ',') {
        to = skip_ws(text, after + 1, len);
    } else {
        size_t before = from;
        while (before > 0 && strchr(" \t\r\n", text[before - 1]))
            before--;
        if (before > 0 && text[before - 1] == ',')
            from = before - 1;
    }
    memmove(text + from, text + to, len - to);
    return len - (to - from);
}
