/*
 * http — /metrics and /healthz over libevent's evhttp.
 *
 * Both handlers run on the event_base the caller drives. /metrics copies the exporter's published
 * exposition (a scrape never waits on NVML); /healthz answers 200 "ok" while the process serves.
 * Everything else is 404. Ownership: the server borrows base and exporter.
 */
#ifndef FG_EXPORTER_HTTP_H
#define FG_EXPORTER_HTTP_H

#include <stdint.h>

#include "base/err.h"
#include "exporter/exporter.h"

struct event_base;
struct fg_exporter_http;

/* Listens on "ADDR:PORT" ("[::1]:9402" for IPv6; port 0 picks a free one). FG_E_INVAL for a
 * malformed address, FG_E_IO when binding fails; errmsg says which. */
enum fg_err fg_exporter_http_new(struct event_base *base, const char *listen, struct fg_exporter *e,
                                 struct fg_exporter_http **out, char *errmsg) FG_MUST_USE;
void fg_exporter_http_free(struct fg_exporter_http *h);
/* The port actually bound. */
uint16_t fg_exporter_http_port(const struct fg_exporter_http *h);

#endif
