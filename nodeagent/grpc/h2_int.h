/*
 * h2 — one HTTP/2 connection: an nghttp2 session pumped through a libevent bufferevent.
 *
 * The server's connections and the client share it. Bytes read are fed to the session; what the
 * session has to send is moved into the bufferevent's output while that holds less than
 * FG__H2_OUTPUT_HIGH bytes, and again whenever it drains, so a large message is produced as fast
 * as the peer reads it, not all at once.
 *
 * Re-entrancy is the one subtle part. nghttp2 calls back into its owner from inside
 * nghttp2_session_mem_recv and _mem_send, the owner calls user code from there, and user code calls
 * back into the owner (answer a call, start one, free a client). nghttp2 forbids sending from inside
 * its callbacks, and nothing may be freed while a frame below it on the stack still uses it. So
 * every entry from the loop — a read, a write, an event, a timer, a public function — is bracketed
 * by fg__h2_enter / fg__h2_leave: only the outermost leave sends, and only the outermost leave
 * reports that the connection is over, after which the owner tears it down. Everything in between
 * merely marks state (submits frames, sets `broken`).
 *
 * Ownership: the owner embeds struct fg__h2, creates the session with itself as user data, and
 * frees both through fg__h2_cleanup. Internal to nodeagent/grpc; loop thread only.
 */
#ifndef FG_GRPC_H2_INT_H
#define FG_GRPC_H2_INT_H

#include <event2/bufferevent.h>
#include <nghttp2/nghttp2.h>
#include <stdbool.h>

#include "base/err.h"

#define FG__H2_OUTPUT_HIGH (256u * 1024)

struct fg__h2 {
    struct bufferevent *bev;
    nghttp2_session *session;
    unsigned depth;              /* entries on the stack */
    bool broken;                 /* no more I/O: the owner tears the connection down */
    char why[FG_ERRMSG_MAX];     /* why it broke, for logs and for the calls it ends */
};

/* Takes bev (owned from now on, freed by fg__h2_cleanup) and session; queues our SETTINGS
 * (a 1 MiB window per stream and for the connection, `max_streams` concurrent streams). */
void fg__h2_init(struct fg__h2 *h, struct bufferevent *bev, nghttp2_session *session, uint32_t max_streams);
/* Frees the session and the bufferevent (closing the socket); `broken` and `why` stay. An h2
 * without a session is a connection that is gone: leave reports it over, and nothing is sent. */
void fg__h2_cleanup(struct fg__h2 *h);

/* Marks the connection broken with a reason (the first reason wins). */
void fg__h2_break(struct fg__h2 *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Feeds everything waiting in the input to the session; a protocol error breaks the connection. */
void fg__h2_recv(struct fg__h2 *h);

void fg__h2_enter(struct fg__h2 *h);
/* Leaves one level; the outermost sends what the session has queued and returns true when the
 * connection is over — broken, or finished by both sides and flushed — and must be torn down. */
bool fg__h2_leave(struct fg__h2 *h) FG_MUST_USE;

/* Sets SIGPIPE to ignored if it is still at its default, as fg_kube_client does: libevent writes
 * with writev, and a peer that hangs up mid-write would otherwise kill the process; the write then
 * fails with EPIPE and the connection breaks like any other. A handler the program installed stays. */
void fg__h2_ignore_sigpipe(void);

/* The header field for nghttp2 from two C strings (nghttp2 copies both when the frame is submitted). */
nghttp2_nv fg__h2_nv(const char *name, const char *value);

#endif
