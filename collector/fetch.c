/* fetch — a libcurl multi on an event_base for plain GETs; see fetch.h. */
#include "collector/fetch.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/mem.h"

struct fg_fetch {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    struct fg_fetch_get *gets;       /* every GET not yet delivered (doubly linked) */
    struct fg_fetch_get *finished;   /* transfers over, waiting for their callback (singly linked, FIFO) */
    size_t active;
};

struct fg_fetch_get {
    struct fg_fetch *f;
    CURL *easy;
    struct fg_buf body;
    char why[CURL_ERROR_SIZE];
    bool too_big, in_finished, delivering;
    CURLcode rc;
    fg_fetch_done_fn *done;
    void *ud;
    struct fg_fetch_get *prev, *next, *fin_next;
};

const char *fg_fetch_result_name(enum fg_fetch_result r)
{
    static const char *const names[] = { "ok", "timeout", "refused", "http_error", "too_big", "transport" };
    return (unsigned)r < sizeof(names) / sizeof(*names) ? names[r] : "transport";
}

static void drive(struct fg_fetch *f, curl_socket_t fd, int action);

static void on_socket(evutil_socket_t fd, short what, void *ud)
{
    drive(ud, fd, ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0));
}

static void on_timer(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    drive(ud, CURL_SOCKET_TIMEOUT, 0);
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
    (void)easy;
    struct fg_fetch *f = ud;
    struct event *ev = sockp;
    if (ev)
        event_free(ev);
    if (what == CURL_POLL_REMOVE) {
        curl_multi_assign(f->multi, fd, NULL);
        return 0;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    ev = event_new(f->base, fd, kind, on_socket, f);
    if (!ev)
        abort();
    event_add(ev, NULL);
    curl_multi_assign(f->multi, fd, ev);
    return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *ud)
{
    (void)multi;
    struct fg_fetch *f = ud;
    if (timeout_ms < 0) {
        evtimer_del(f->timer);
        return 0;
    }
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    evtimer_add(f->timer, &tv);
    return 0;
}

static size_t write_cb(char *data, size_t size, size_t n, void *ud)
{
    struct fg_fetch_get *g = ud;
    if (fg_buf_append(&g->body, data, size * n) != FG_OK) {
        g->too_big = true;
        return 0;   /* CURLE_WRITE_ERROR ends the transfer */
    }
    return size * n;
}

static void unlink_get(struct fg_fetch_get *g)
{
    struct fg_fetch *f = g->f;
    if (g->prev)
        g->prev->next = g->next;
    else
        f->gets = g->next;
    if (g->next)
        g->next->prev = g->prev;
    if (g->in_finished) {
        struct fg_fetch_get **p = &f->finished;
        while (*p != g)
            p = &(*p)->fin_next;
        *p = g->fin_next;
    } else if (g->easy) {
        curl_multi_remove_handle(f->multi, g->easy);
        f->active--;
    }
    if (g->easy)
        curl_easy_cleanup(g->easy);
    fg_buf_cleanup(&g->body);
    free(g);
}

static void deliver(struct fg_fetch_get *g)
{
    long code = 0;
    curl_easy_getinfo(g->easy, CURLINFO_RESPONSE_CODE, &code);
    enum fg_fetch_result r;
    switch (g->rc) {
    case CURLE_OK: r = code >= 200 && code < 300 ? FG_FETCH_OK : FG_FETCH_HTTP_ERROR; break;
    case CURLE_OPERATION_TIMEDOUT: r = FG_FETCH_TIMEOUT; break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST: r = FG_FETCH_REFUSED; break;
    case CURLE_WRITE_ERROR: r = g->too_big ? FG_FETCH_TOO_BIG : FG_FETCH_TRANSPORT; break;
    default: r = FG_FETCH_TRANSPORT; break;
    }
    if (r == FG_FETCH_HTTP_ERROR)
        snprintf(g->why, sizeof(g->why), "HTTP %ld", code);
    else if (r == FG_FETCH_TOO_BIG)
        snprintf(g->why, sizeof(g->why), "body over %zu bytes", g->body.limit);
    else if (!g->why[0])
        snprintf(g->why, sizeof(g->why), "%s", r == FG_FETCH_OK ? "" : curl_easy_strerror(g->rc));
    g->done(g->ud, r, code, &g->body, g->why);
}

static void drive(struct fg_fetch *f, curl_socket_t fd, int action)
{
    int running;
    curl_multi_socket_action(f->multi, fd, action, &running);
    CURLMsg *msg;
    int left;
    struct fg_fetch_get **tail = &f->finished;
    while (*tail)
        tail = &(*tail)->fin_next;
    while ((msg = curl_multi_info_read(f->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct fg_fetch_get *g = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&g);
        g->rc = msg->data.result;
        curl_multi_remove_handle(f->multi, g->easy);
        f->active--;
        g->in_finished = true;
        *tail = g;
        tail = &g->fin_next;
    }
    /* each callback may cancel GETs still on the list: take the head afresh every time */
    while (f->finished) {
        struct fg_fetch_get *g = f->finished;
        f->finished = g->fin_next;
        g->in_finished = false;
        g->delivering = true;
        deliver(g);
        curl_easy_cleanup(g->easy);
        g->easy = NULL;
        unlink_get(g);
    }
}

struct fg_fetch *fg_fetch_new(struct event_base *base)
{
    struct fg_fetch *f = fg_calloc(1, sizeof(*f));
    f->base = base;
    f->multi = curl_multi_init();
    f->timer = evtimer_new(base, on_timer, f);
    if (!f->multi || !f->timer)
        abort();
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETDATA, f);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERDATA, f);
    return f;
}

void fg_fetch_free(struct fg_fetch *f)
{
    if (!f)
        return;
    while (f->gets)
        unlink_get(f->gets);
    curl_multi_cleanup(f->multi);   /* closes cached connections through socket_cb */
    event_free(f->timer);
    free(f);
}

struct fg_fetch_get *fg_fetch_start(struct fg_fetch *f, const char *url, unsigned timeout_ms, size_t max_body,
                                    fg_fetch_done_fn *done, void *ud)
{
    struct fg_fetch_get *g = fg_calloc(1, sizeof(*g));
    g->f = f;
    g->done = done;
    g->ud = ud;
    fg_buf_init(&g->body, max_body);
    g->easy = curl_easy_init();
    if (!g->easy)
        abort();
    CURL *e = g->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");   /* gzip if the agent offers it; the cap counts decoded bytes */
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, g);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, g->why);
    curl_easy_setopt(e, CURLOPT_PRIVATE, g);
    g->next = f->gets;
    if (f->gets)
        f->gets->prev = g;
    f->gets = g;
    f->active++;
    curl_multi_add_handle(f->multi, e);
    return g;
}

void fg_fetch_cancel(struct fg_fetch_get *g)
{
    if (g && !g->delivering)   /* from its own callback: it is freed right after anyway */
        unlink_get(g);
}

size_t fg_fetch_active(const struct fg_fetch *f)
{
    return f->active;
}
