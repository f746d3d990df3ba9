/*
 * uidclock — the last sample time of each pod, by uid, so that no pod's samples go back in time.
 *
 * Samples are stamped with the wall clock of their scrape; the recommender's histograms assume each
 * pod's samples arrive in time order. The wall clock can step back (NTP), two agents can briefly
 * report one node during a rollout, and a pod recreated under the same name is another pod with
 * another uid and a history of its own. So the collector keeps, per pod uid, the time of the last
 * sample it delivered, and refuses one whose time is not after it. A uid not seen for a while
 * (fg_uid_clock_forget, by round) is forgotten, which bounds the table by the pods alive.
 *
 * One thread (the collector's).
 */
#ifndef FG_COLLECTOR_UIDCLOCK_H
#define FG_COLLECTOR_UIDCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fg_uid_clock;

struct fg_uid_clock *fg_uid_clock_new(void);
/* NULL is ignored. */
void fg_uid_clock_free(struct fg_uid_clock *c);

/* Whether a sample of uid at t_ms comes after the last one accepted; if so it becomes the last,
 * seen in `round`. */
bool fg_uid_clock_accept(struct fg_uid_clock *c, const char *uid, int64_t t_ms, uint64_t round);
/* Forgets every uid last seen before `round`. */
void fg_uid_clock_forget(struct fg_uid_clock *c, uint64_t round);
size_t fg_uid_clock_len(const struct fg_uid_clock *c);

#endif
