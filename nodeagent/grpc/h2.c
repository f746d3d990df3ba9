/* One HTTP/2 connection pumped through a bufferevent (h2_int.h). */
#include "nodeagent/grpc/h2_int.h"

#include <event2/buffer.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/assert.h"

#define WINDOW (1 << 20)

void fg__h2_init(struct fg__h2 *h, struct bufferevent *bev, nghttp2_session *session, uint32_t max_streams)
{
    memset(h, 0, sizeof(*h));
    h->bev = bev;
    h->session = session;
    const nghttp2_settings_entry settings[] = {
        { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams },
        { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW },
    };
    int rv = nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, sizeof(settings) / sizeof(*settings));
    fg_assert(rv == 0);
    rv = nghttp2_session_set_local_window_size(session, NGHTTP2_FLAG_NONE, 0, WINDOW);
    fg_assert(rv == 0);
}

void fg__h2_cleanup(struct fg__h2 *h)
{
    fg_assert(h->depth == 0);
    if (h->session)
        nghttp2_session_del(h->session);
    h->session = NULL;
    if (h->bev)
        bufferevent_free(h->bev);
    h->bev = NULL;
}

void fg__h2_break(struct fg__h2 *h, const char *fmt, ...)
{
    if (h->broken)
        return;
    h->broken = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why, sizeof(h->why), fmt, ap);
    va_end(ap);
}

void fg__h2_recv(struct fg__h2 *h)
{
    struct evbuffer *in = bufferevent_get_input(h->bev);
    while (!h->broken && evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        ssize_t n = nghttp2_session_mem_recv(h->session, v.iov_base, v.iov_len);
        if (n < 0) {
            fg__h2_break(h, "%s", n == NGHTTP2_ERR_BAD_CLIENT_MAGIC ? "the peer does not speak HTTP/2 (no client preface)"
                                                                   : nghttp2_strerror((int)n));
            break;
        }
        evbuffer_drain(in, (size_t)n);
    }
}

void fg__h2_enter(struct fg__h2 *h)
{
    h->depth++;
}

static void send_queued(struct fg__h2 *h)
{
    struct evbuffer *out = bufferevent_get_output(h->bev);
    while (!h->broken && evbuffer_get_length(out) < FG__H2_OUTPUT_HIGH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(h->session, &data);
        if (n < 0) {
            fg__h2_break(h, "%s", nghttp2_strerror((int)n));
            return;
        }
        if (n == 0)
            return;
        evbuffer_add(out, data, (size_t)n);
    }
}

bool fg__h2_leave(struct fg__h2 *h)
{
    fg_assert(h->depth > 0);
    if (h->depth == 1 && !h->broken && h->session)
        send_queued(h); /* with depth still 1, so that what its callbacks do only marks state */
    if (--h->depth > 0)
        return false;
    if (h->broken || !h->session)
        return true;
    bool session_over = !nghttp2_session_want_read(h->session) && !nghttp2_session_want_write(h->session);
    return session_over && evbuffer_get_length(bufferevent_get_output(h->bev)) == 0;
}

void fg__h2_ignore_sigpipe(void)
{
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
        sa.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &sa, NULL);
    }
}

nghttp2_nv fg__h2_nv(const char *name, const char *value)
{
    nghttp2_nv nv = { (uint8_t *)(uintptr_t)name, (uint8_t *)(uintptr_t)value, strlen(name), strlen(value),
                      NGHTTP2_NV_FLAG_NONE };
    return nv;
}
