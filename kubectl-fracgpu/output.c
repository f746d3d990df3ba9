/* output — tables, JSON and YAML as kubectl prints them; see output.h. */
#include "kubectl-fracgpu/output.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/mem.h"

void fgk_table_init(struct fgk_table *t, size_t cols, const char *const *headers)
{
    memset(t, 0, sizeof(*t));
    t->cols = cols;
    for (size_t i = 0; i < cols; i++)
        fgk_table_cell(t, headers[i]);
}

void fgk_table_cell(struct fgk_table *t, const char *text)
{
    if (t->n == t->cap)
        t->cells = fg_realloc(t->cells, (t->cap = t->cap ? 2 * t->cap : 64) * sizeof(*t->cells));
    t->cells[t->n++] = fg_strdup(text ? text : "<none>");
}

void fgk_table_cellf(struct fgk_table *t, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fgk_table_cell(t, text);
}

void fgk_table_print(const struct fgk_table *t, FILE *out)
{
    size_t *width = fg_calloc(t->cols, sizeof(*width));
    for (size_t i = 0; i < t->n; i++) {
        size_t len = strlen(t->cells[i]);
        if (len > width[i % t->cols])
            width[i % t->cols] = len;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->cols;
        if (c + 1 == t->cols)
            fprintf(out, "%s\n", t->cells[i]);
        else
            fprintf(out, "%-*s   ", (int)width[c], t->cells[i]);
    }
    free(width);
}

void fgk_table_cleanup(struct fgk_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* Whether a plain scalar s would read back as something other than a string. */
static bool looks_typed(const char *s)
{
    static const char *const words[] = { "true", "false", "yes", "no", "on", "off", "null", "~", "" };
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
        if (!strcasecmp(s, words[i]))
            return true;
    char *end = NULL;
    (void)strtod(s, &end);
    return end != s && *end == '\0';
}

static int scalar(yaml_emitter_t *em, const char *text, bool is_string)
{
    yaml_event_t ev;
    bool plain = !is_string || !looks_typed(text);
    yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)YAML_STR_TAG, (yaml_char_t *)text, (int)strlen(text), plain,
                                 !plain, plain ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    return yaml_emitter_emit(em, &ev);
}

static int emit(yaml_emitter_t *em, json_object *o)
{
    yaml_event_t ev;
    switch (json_object_get_type(o)) {
    case json_type_object:
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return 0;
        json_object_object_foreach(o, key, val) {
            if (!scalar(em, key, true) || !emit(em, val))
                return 0;
        }
        yaml_mapping_end_event_initialize(&ev);
        return yaml_emitter_emit(em, &ev);
    case json_type_array:
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return 0;
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if (!emit(em, json_object_array_get_idx(o, i)))
                return 0;
        yaml_sequence_end_event_initialize(&ev);
        return yaml_emitter_emit(em, &ev);
    case json_type_null:
        return scalar(em, "null", false);
    case json_type_string:
        return scalar(em, json_object_get_string(o), true);
    default:   /* numbers and booleans print as JSON does */
        return scalar(em, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), false);
    }
}

static int write_file(void *ud, unsigned char *buffer, size_t size)
{
    return fwrite(buffer, 1, size, (FILE *)ud) == size;
}

static bool print_yaml(json_object *o, FILE *out)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&em))
        return false;
    yaml_emitter_set_output(&em, write_file, out);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    int ok = yaml_emitter_emit(&em, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    ok = ok && yaml_emitter_emit(&em, &ev) && emit(&em, o);
    yaml_document_end_event_initialize(&ev, 1);
    ok = ok && yaml_emitter_emit(&em, &ev);
    yaml_stream_end_event_initialize(&ev);
    ok = ok && yaml_emitter_emit(&em, &ev);
    yaml_emitter_delete(&em);
    return ok;
}

bool fgk_print_object(json_object *o, const char *format, FILE *out)
{
    if (!strcmp(format, "json")) {
        fprintf(out, "%s\n",
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
        return true;
    }
    if (!strcmp(format, "yaml"))
        return print_yaml(o, out);
    return false;
}
