/* text — reference-counted immutable strings shared between the store and replies; see text.h. */
#include "e2e/apiserver/text.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

struct fg__text *fg__text_from_json(json_object *o)
{
    json_object *holder = json_object_new_array_ext(1);
    if (!holder || json_object_array_add(holder, json_object_get(o)) != 0)
        abort(); /* json-c fails these only when allocation fails */
    size_t len = 0;
    const char *s = fg_json_text(holder, &len) + 1; /* "[" o "]" */
    len -= 2;
    struct fg__text *t = fg_malloc(sizeof(*t) + len + 1);
    t->refs = 1;
    t->len = len;
    memcpy(t->data, s, len);
    t->data[len] = '\0';
    json_object_put(holder); /* and its print buffer; o loses the reference holder took */
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
