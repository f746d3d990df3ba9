/*
 * keymap — the work-queue module's one hash table: string keys to a 64-bit value.
 *
 * Every set the queues keep is one of these: the dirty and processing sets (value unused), the
 * delaying queue's index of waiting keys (value = heap position) and the backoff limiter's failure
 * counts (value = failures). Open addressing with linear probing and backward-shift deletion, so
 * there are no tombstones and a lookup stops at the first empty slot; the table doubles past 3/4
 * full and never shrinks. The map owns a copy of each key; a key's string stays at the same address
 * from insertion until removal (slots move, strings do not), so callers may borrow it in between.
 * Not thread-safe: the owner's lock guards it. Internal to operator/workqueue.
 */
#ifndef FG_WORKQUEUE_KEYMAP_H
#define FG_WORKQUEUE_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest key accepted (bytes, without the terminator): a namespace/name pair fits with room. */
#define FG__KEY_MAX 512

struct fg__keymap_slot {
    char *key;      /* owned; NULL = empty slot */
    uint64_t hash;
    uint64_t value;
};

struct fg__keymap {
    struct fg__keymap_slot *slots;
    size_t cap;     /* 0 or a power of two */
    size_t len;
};

/* True when key is usable as a queue key: not NULL, not empty, at most FG__KEY_MAX bytes. */
bool fg__key_valid(const char *key);

void fg__keymap_init(struct fg__keymap *m);
void fg__keymap_cleanup(struct fg__keymap *m);

/* True and *value set (when value is not NULL) if key is present. */
bool fg__keymap_get(const struct fg__keymap *m, const char *key, uint64_t *value);
/* Inserts key or overwrites its value; returns true when the key was new. *stored (when not NULL)
 * receives the map's own copy of the key, valid until the key is removed. */
bool fg__keymap_set(struct fg__keymap *m, const char *key, uint64_t value, const char **stored);
/* Removes key; returns false when it was absent. */
bool fg__keymap_remove(struct fg__keymap *m, const char *key);

#endif
