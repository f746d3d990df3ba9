/*
 * timefmt — the one way fracgpu writes and reads Kubernetes timestamps.
 *
 * The API writes metav1.Time as RFC 3339 in UTC to the second ("2026-11-26T10:29:00Z": creation
 * timestamps, condition transitions, deletion deadlines) and metav1.MicroTime with six fractional
 * digits (Lease renewals, Events' eventTime). Readers meet other writers too: exec credential
 * plugins, and clients that send offsets ("+02:00") or nanoseconds. So the parser takes every RFC 3339
 * form — fraction of 1 to 9 digits, Z or z or a ±hh:mm offset, T or t — and checks the calendar;
 * the formatters write only the two canonical forms. Times are milliseconds since the Unix epoch.
 */
#ifndef FG_BASE_TIMEFMT_H
#define FG_BASE_TIMEFMT_H

#include <stdbool.h>
#include <stdint.h>

/* Room for either form and its NUL. */
#define FG_TIME_MAX 40

/* "2026-11-26T10:29:00Z": wall_ms truncated to the second, as metav1.Time is written. */
void fg_time_format(int64_t wall_ms, char out[FG_TIME_MAX]);
/* "2026-11-26T10:29:00.123000Z", as metav1.MicroTime is written (wall_ms has no finer digits). */
void fg_time_format_micro(int64_t wall_ms, char out[FG_TIME_MAX]);
/* Parses any RFC 3339 timestamp into *wall_ms (fraction truncated to the millisecond). False, with
 * *wall_ms untouched, for NULL, a malformed string or an impossible date. */
bool fg_time_parse(const char *s, int64_t *wall_ms);

#endif
