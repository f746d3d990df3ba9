/* keymap — open-addressing string map with backward-shift deletion; see keymap.h. */
#include "operator/workqueue/keymap.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define KEYMAP_MIN_CAP 16

bool fg__key_valid(const char *key)
{
    return key && key[0] != '\0' && strnlen(key, FG__KEY_MAX + 1) <= FG__KEY_MAX;
}

/* FNV-1a, 64 bit. */
static uint64_t hash_key(const char *key)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

void fg__keymap_init(struct fg__keymap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

void fg__keymap_cleanup(struct fg__keymap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    FG_FREE(m->slots);
    m->cap = 0;
    m->len = 0;
}

/* Index of key's slot, or of the empty slot where it would go. Requires cap > 0. */
static size_t find_slot(const struct fg__keymap *m, const char *key, uint64_t hash)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash & mask;
    while (m->slots[i].key) {
        if (m->slots[i].hash == hash && strcmp(m->slots[i].key, key) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

static void grow(struct fg__keymap *m)
{
    struct fg__keymap_slot *old = m->slots;
    size_t old_cap = m->cap;
    m->cap = old_cap ? old_cap * 2 : KEYMAP_MIN_CAP;
    m->slots = fg_calloc(m->cap, sizeof *m->slots);
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].key)
            m->slots[find_slot(m, old[i].key, old[i].hash)] = old[i];
    }
    free(old);
}

bool fg__keymap_get(const struct fg__keymap *m, const char *key, uint64_t *value)
{
    if (m->len == 0)
        return false;
    const struct fg__keymap_slot *s = &m->slots[find_slot(m, key, hash_key(key))];
    if (!s->key)
        return false;
    if (value)
        *value = s->value;
    return true;
}

bool fg__keymap_set(struct fg__keymap *m, const char *key, uint64_t value, const char **stored)
{
    uint64_t hash = hash_key(key);
    struct fg__keymap_slot *s = m->cap ? &m->slots[find_slot(m, key, hash)] : NULL;
    bool added = !s || !s->key;
    if (added) {
        if (!s || (m->len + 1) * 4 > m->cap * 3) {
            grow(m);
            s = &m->slots[find_slot(m, key, hash)];
        }
        s->key = fg_strdup(key);
        s->hash = hash;
        m->len++;
    }
    s->value = value;
    if (stored)
        *stored = s->key;
    return added;
}

bool fg__keymap_remove(struct fg__keymap *m, const char *key)
{
    if (m->len == 0)
        return false;
    size_t mask = m->cap - 1;
    size_t hole = find_slot(m, key, hash_key(key));
    if (!m->slots[hole].key)
        return false;
    FG_FREE(m->slots[hole].key);
    m->len--;
    /* Backward shift: pull later members of the probe run into the hole when their home slot does
     * not lie cyclically in (hole, j]; otherwise they are already reachable from home. */
    for (size_t j = (hole + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = (size_t)m->slots[j].hash & mask;
        bool home_in_range = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!home_in_range) {
            m->slots[hole] = m->slots[j];
            m->slots[j].key = NULL;
            hole = j;
        }
    }
    return true;
}
