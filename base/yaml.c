/* yaml — YAML documents into json-c trees; see yaml.h. */
#include "base/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

static bool is_one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

/* Is s non-empty and made only of characters in set? */
static bool all_of(const char *s, const char *set)
{
    return *s && strspn(s, set) == strlen(s);
}

/* A float as a JSON number that keeps its text ("0.1" stays 0.1 for whoever reads it exactly, as a
 * quantity does); for the YAML spellings JSON has not (".5", "+1.5", "1."), the shortest text that
 * reads back as the same double. */
static json_object *number(const char *s)
{
    double d = strtod(s, NULL);
    const char *p = s + (*s == '-');
    bool json = (*p == '0' && (p[1] == '.' || p[1] == 'e' || p[1] == 'E' || !p[1])) || (*p >= '1' && *p <= '9');
    for (p += json; json && *p >= '0' && *p <= '9'; p++)
        continue;
    if (json && *p == '.') {
        json = p[1] >= '0' && p[1] <= '9';
        for (p++; *p >= '0' && *p <= '9'; p++)
            continue;
    }
    if (json && (*p == 'e' || *p == 'E')) {
        p += 1 + (p[1] == '-' || p[1] == '+');
        json = *p >= '0' && *p <= '9';
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (json && !*p)
        return json_object_new_double_s(d, s);
    char text[40];
    snprintf(text, sizeof text, "%.15g", d);
    if (strtod(text, NULL) != d)
        snprintf(text, sizeof text, "%.17g", d);
    return json_object_new_double_s(d, text);
}

/* A plain scalar typed by YAML 1.2's core schema. */
static json_object *plain_scalar(const char *s)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
    static const char *const trues[] = { "true", "True", "TRUE", NULL };
    static const char *const falses[] = { "false", "False", "FALSE", NULL };
    static const char *const infs[] = { ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL };
    static const char *const ninfs[] = { "-.inf", "-.Inf", "-.INF", NULL };
    static const char *const nans[] = { ".nan", ".NaN", ".NAN", NULL };
    if (is_one_of(s, nulls))
        return NULL;
    if (is_one_of(s, trues))
        return json_object_new_boolean(1);
    if (is_one_of(s, falses))
        return json_object_new_boolean(0);
    if (is_one_of(s, infs))
        return json_object_new_double(INFINITY);
    if (is_one_of(s, ninfs))
        return json_object_new_double(-INFINITY);
    if (is_one_of(s, nans))
        return json_object_new_double(NAN);
    /* integers: [-+]? digits, 0x hex digits, 0o octal digits — nothing else (no sign or space after
     * a prefix), and only while they fit */
    const char *digits10 = s + (*s == '-' || *s == '+');
    const char *body = NULL;
    int base = 10;
    if (!strncmp(s, "0x", 2) && all_of(s + 2, "0123456789abcdefABCDEF"))
        body = s + 2, base = 16;
    else if (!strncmp(s, "0o", 2) && all_of(s + 2, "01234567"))
        body = s + 2, base = 8;
    else if (all_of(digits10, "0123456789"))
        body = s;
    if (body) {
        errno = 0;
        long long i = strtoll(body, NULL, base);
        if (!errno)
            return json_object_new_int64(i);
    }
    /* decimal floats: [-+]? (. digits | digits [. digits*]) ([eE] [-+]? digits)? */
    const char *p = s + (*s == '-' || *s == '+');
    bool digits = false;
    while (*p >= '0' && *p <= '9')
        p++, digits = true;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits = true;
    if (digits && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1 + (p[1] == '-' || p[1] == '+');
        bool exp_digits = false;
        while (*q >= '0' && *q <= '9')
            q++, exp_digits = true;
        p = exp_digits ? q : p;
    }
    if (digits && !*p)
        return number(s);
    return json_object_new_string(s);
}

/* An anchor and the value it names (aliases share the value by reference). */
struct anchor {
    char *name;
    json_object *value;
};

struct convert {
    yaml_parser_t parser;
    struct anchor *anchors;
    size_t nanchors;
    char *errmsg;
};

static void add_anchor(struct convert *c, const yaml_char_t *name, json_object *value)
{
    if (!name)
        return;
    c->anchors = fg_realloc(c->anchors, (c->nanchors + 1) * sizeof *c->anchors);
    c->anchors[c->nanchors++] = (struct anchor){ fg_strdup((const char *)name), json_object_get(value) };
}

static void free_anchors(struct convert *c)
{
    for (size_t i = 0; i < c->nanchors; i++) {
        free(c->anchors[i].name);
        json_object_put(c->anchors[i].value);
    }
    free(c->anchors);
}

static enum fg_err next_event(struct convert *c, yaml_event_t *ev)
{
    if (yaml_parser_parse(&c->parser, ev))
        return FG_OK;
    return fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu column %zu: %s", c->parser.problem_mark.line + 1,
                     c->parser.problem_mark.column + 1, c->parser.problem ? c->parser.problem : "malformed YAML");
}

static enum fg_err parse_node(struct convert *c, yaml_event_t *ev, int depth, json_object **out);

/* The items of a sequence or the pairs of a mapping, up to its end event. */
static enum fg_err parse_children(struct convert *c, bool mapping, int depth, json_object *into)
{
    for (;;) {
        yaml_event_t ev;
        enum fg_err err = next_event(c, &ev);
        if (err)
            return err;
        if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return FG_OK;
        }
        if (mapping && ev.type != YAML_SCALAR_EVENT) {
            size_t line = ev.start_mark.line + 1;
            yaml_event_delete(&ev);
            return fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu: a mapping key must be a scalar", line);
        }
        json_object *item = NULL;
        char *key = mapping ? fg_strdup((const char *)ev.data.scalar.value) : NULL;
        if (mapping && json_object_object_get_ex(into, key, NULL)) {   /* as kubectl's YAML reader refuses it */
            size_t line = ev.start_mark.line + 1;
            yaml_event_delete(&ev);
            err = fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu: mapping key \"%.200s\" already defined", line, key);
            free(key);
            return err;
        }
        if (mapping) {
            yaml_event_delete(&ev);
            err = next_event(c, &ev);
        }
        if (!err)
            err = parse_node(c, &ev, depth + 1, &item);
        if (!err && mapping)
            json_object_object_add(into, key, item);
        else if (!err)
            json_object_array_add(into, item);
        free(key);
        if (err)
            return err;
    }
}

/* The node that starts with *ev (consumed). */
static enum fg_err parse_node(struct convert *c, yaml_event_t *ev, int depth, json_object **out)
{
    enum fg_err err = FG_OK;
    *out = NULL;
    if (depth > FG_JSON_MAX_DEPTH) {
        err = fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu: nested more than %d levels deep",
                        ev->start_mark.line + 1, FG_JSON_MAX_DEPTH);
        goto out;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *text = (const char *)ev->data.scalar.value;
        bool plain = ev->data.scalar.plain_implicit && !ev->data.scalar.tag;
        bool str_tag = ev->data.scalar.tag && !strcmp((const char *)ev->data.scalar.tag, YAML_STR_TAG);
        *out = plain && !str_tag ? plain_scalar(text) : json_object_new_string_len(text, (int)ev->data.scalar.length);
        add_anchor(c, ev->data.scalar.anchor, *out);
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool mapping = ev->type == YAML_MAPPING_START_EVENT;
        *out = mapping ? json_object_new_object() : json_object_new_array();
        err = parse_children(c, mapping, depth, *out);
        if (!err)
            add_anchor(c, mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor, *out);
        break;
    }
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        for (size_t i = c->nanchors; i-- > 0;) {
            if (!strcmp(c->anchors[i].name, name)) {
                *out = json_object_get(c->anchors[i].value);
                goto out;
            }
        }
        err = fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu: alias *%s names no anchor defined before it",
                        ev->start_mark.line + 1, name);
        break;
    }
    default:
        err = fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu: unexpected YAML event", ev->start_mark.line + 1);
    }
out:
    if (err) {
        json_object_put(*out);
        *out = NULL;
    }
    yaml_event_delete(ev);
    return err;
}

/* Skips events until one of `type` (consumed); FG_E_PARSE when another kind comes first. */
static enum fg_err expect_event(struct convert *c, yaml_event_type_t type, const char *what)
{
    yaml_event_t ev;
    enum fg_err err = next_event(c, &ev);
    if (err)
        return err;
    if (ev.type != type)
        err = fg_errmsg(c->errmsg, FG_E_PARSE, "line %zu: %s", ev.start_mark.line + 1, what);
    yaml_event_delete(&ev);
    return err;
}

enum fg_err fg_yaml_parse(const char *text, size_t len, json_object **out, char *errmsg)
{
    struct convert c = { .errmsg = errmsg };
    *out = NULL;
    if (!yaml_parser_initialize(&c.parser))
        return fg_errmsg(errmsg, FG_E_NOMEM, "cannot initialise the YAML parser");
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
    yaml_event_t ev;
    enum fg_err err = expect_event(&c, YAML_STREAM_START_EVENT, "not a YAML stream");
    if (!err && !(err = next_event(&c, &ev))) {
        if (ev.type != YAML_DOCUMENT_START_EVENT)
            err = fg_errmsg(errmsg, FG_E_PARSE, "no YAML document");
        yaml_event_delete(&ev);
    }
    if (!err && !(err = next_event(&c, &ev)))
        err = parse_node(&c, &ev, 0, out);
    if (!err && !*out)
        err = fg_errmsg(errmsg, FG_E_PARSE, "the YAML document is empty");
    if (!err)
        err = expect_event(&c, YAML_DOCUMENT_END_EVENT, "malformed document end");
    if (!err)
        err = expect_event(&c, YAML_STREAM_END_EVENT, "only one YAML document is expected");
    if (err) {
        json_object_put(*out);
        *out = NULL;
    }
    free_anchors(&c);
    yaml_parser_delete(&c.parser);
    return err;
}

enum fg_err fg_yaml_load_file(const char *path, json_object **out, char *errmsg)
{
    struct fg_buf b;
    fg_buf_init(&b, 16u << 20);
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_buf_read_file(&b, path, why);
    if (err) {
        fg_buf_cleanup(&b);
        return fg_errmsg(errmsg, err, "%s: %s", path, why);
    }
    err = fg_yaml_parse(fg_buf_str(&b), b.len, out, why);
    fg_buf_cleanup(&b);
    if (err)
        return fg_errmsg(errmsg, err, "%s: %s", path, why);
    return FG_OK;
}
