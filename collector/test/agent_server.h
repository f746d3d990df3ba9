/*
 * agent_server — stand-ins for node agents in the collector's tests: each listens on its own port of
 * 127.0.0.1, on the test's event_base, and answers /metrics in one way: a body, a body after a delay,
 * an HTTP 500, a closed connection, or nothing at all (a port where nobody listens).
 */
#ifndef FG_COLLECTOR_TEST_AGENT_SERVER_H
#define FG_COLLECTOR_TEST_AGENT_SERVER_H

struct event_base;

enum agent_mode { AGENT_BODY, AGENT_SLOW, AGENT_500, AGENT_CLOSE, AGENT_REFUSED };

struct agent_server;

/* An agent answering in `mode`; body is served by AGENT_BODY and AGENT_SLOW (copied). */
struct agent_server *agent_server_new(struct event_base *base, enum agent_mode mode, const char *body,
                                      unsigned delay_ms);
void agent_server_free(struct agent_server *a);
unsigned agent_server_port(const struct agent_server *a);
/* Requests it has received. */
unsigned agent_server_hits(const struct agent_server *a);

#endif
