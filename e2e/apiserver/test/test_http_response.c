/* The webhook client's HTTP/1.1 response reader, fed as bytes arrive: framing by Content-Length,
 * chunked coding and end of stream, 1xx responses skipped, keep-alive, malformed and oversize
 * responses. Each case is also fed one byte at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/apiserver/http_response.h"

struct want {
    enum fg_err err;
    int status;
    bool keep_alive;
    const char *body;
};

/* Feeds text in pieces of `step` bytes (0: all at once), then end of stream when eof. */
static void feed(const char *text, size_t step, bool eof, const struct want *w)
{
    struct fg__http_response r;
    fg__http_response_init(&r, 64);
    struct evbuffer *in = evbuffer_new();
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = FG_E_BUSY;
    size_t len = strlen(text), at = 0;
    while (err == FG_E_BUSY && at < len) {
        size_t n = step && step < len - at ? step : len - at;
        evbuffer_add(in, text + at, n);
        at += n;
        err = fg__http_response_feed(&r, in, false, msg);
    }
    if (err == FG_E_BUSY && eof)
        err = fg__http_response_feed(&r, in, true, msg);
    if (err != w->err)
        fail_msg("%s (step %zu): err %d, want %d (%s)", text, step, (int)err, (int)w->err, err ? msg : "");
    if (!err) {
        assert_int_equal(r.status, w->status);
        assert_int_equal(r.keep_alive, w->keep_alive);
        size_t blen = evbuffer_get_length(r.body);
        assert_int_equal(blen, strlen(w->body));
        assert_memory_equal(evbuffer_pullup(r.body, -1), w->body, blen);
    }
    evbuffer_free(in);
    fg__http_response_cleanup(&r);
}

static void both(const char *text, bool eof, struct want w)
{
    feed(text, 0, eof, &w);
    feed(text, 1, eof, &w);
}

static void responses(void **state)
{
    (void)state;
    both("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}", false,
         (struct want){ FG_OK, 200, true, "{\"a\":1}" });
    both("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-T: 1\r\n\r\n",
         false, (struct want){ FG_OK, 200, true, "{\"a\":1}" });
    both("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", false,
         (struct want){ FG_OK, 200, false, "{}" });
    both("HTTP/1.0 200 OK\r\n\r\n{\"eof\":true}", true, (struct want){ FG_OK, 200, false, "{\"eof\":true}" });
    both("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops", false,
         (struct want){ FG_OK, 500, true, "oops" });
    both("HTTP/1.1 204 No Content\r\n\r\n", false, (struct want){ FG_OK, 204, true, "" });
    both("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", true, (struct want){ FG_E_PARSE, 0, false, "" });
    both("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, (struct want){ FG_E_PARSE, 0, false, "" });
    both("SMTP ready\r\n\r\n", false, (struct want){ FG_E_PARSE, 0, false, "" });
    both("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", false, (struct want){ FG_E_BUSY, 0, false, "" });
    both("HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n"
         "01234567890123456789012345678901234567890123456789012345678901234", false,
         (struct want){ FG_E_TOO_BIG, 0, false, "" });
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(responses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
