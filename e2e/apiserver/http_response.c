/* http_response — an HTTP/1.1 response parsed as it arrives; see http_response.h. */
#include "e2e/apiserver/http_response.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HEADERS (64u << 10)

void fg__http_response_init(struct fg__http_response *r, size_t max_body)
{
    memset(r, 0, sizeof(*r));
    r->content_length = -1;
    r->chunk_left = -1;
    r->max_body = max_body;
    r->body = evbuffer_new();
}

void fg__http_response_cleanup(struct fg__http_response *r)
{
    if (r->body)
        evbuffer_free(r->body);
    memset(r, 0, sizeof(*r));
}

/* One header line, "Name: value". */
static void header(struct fg__http_response *r, const char *line)
{
    const char *colon = strchr(line, ':');
    if (!colon)
        return;
    size_t name_len = (size_t)(colon - line);
    const char *value = colon + 1 + strspn(colon + 1, " \t");
    if (name_len == 14 && !strncasecmp(line, "Content-Length", 14))
        r->content_length = strtoll(value, NULL, 10);
    else if (name_len == 17 && !strncasecmp(line, "Transfer-Encoding", 17))
        r->chunked = strcasestr(value, "chunked") != NULL;
    else if (name_len == 10 && !strncasecmp(line, "Connection", 10))
        r->keep_alive = strcasestr(value, "close") ? false : strcasestr(value, "keep-alive") ? true : r->keep_alive;
}

/* The status line and headers, once all of them have arrived; informational (1xx) responses are
 * skipped. FG_E_BUSY until then. */
static enum fg_err read_head(struct fg__http_response *r, struct evbuffer *in, char *errmsg)
{
    while (!r->headers_done) {
        if (evbuffer_search(in, "\r\n\r\n", 4, NULL).pos < 0)
            return evbuffer_get_length(in) > MAX_HEADERS
                       ? fg_errmsg(errmsg, FG_E_TOO_BIG, "response headers longer than %u bytes", MAX_HEADERS)
                       : FG_E_BUSY;
        size_t n = 0;
        char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
        int minor = 0;
        if (!line || sscanf(line, "HTTP/1.%d %d", &minor, &r->status) != 2 || r->status < 100 || r->status > 999) {
            enum fg_err err = fg_errmsg(errmsg, FG_E_PARSE, "malformed HTTP response: %.60s", line ? line : "");
            free(line);
            return err;
        }
        free(line);
        r->keep_alive = minor >= 1;
        while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF)) && n > 0) {
            header(r, line);
            free(line);
        }
        free(line);
        r->headers_done = r->status >= 200;
        if (!r->headers_done) { /* 100 Continue and the like: the real response follows */
            r->content_length = -1;
            r->chunked = false;
        }
    }
    if (r->status == 204 || r->status == 304)
        r->content_length = 0;
    return FG_OK;
}

/* Moves up to n bytes (or everything, when n < 0) of in into the body; FG_E_TOO_BIG past max_body. */
static enum fg_err take(struct fg__http_response *r, struct evbuffer *in, long long n, char *errmsg)
{
    size_t avail = evbuffer_get_length(in);
    size_t want = n < 0 || (unsigned long long)n > avail ? avail : (size_t)n;
    if (evbuffer_get_length(r->body) + want > r->max_body)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "response body larger than %zu bytes", r->max_body);
    evbuffer_remove_buffer(in, r->body, want);
    return FG_OK;
}

/* Chunked transfer coding: size lines, data, CRLFs, then the trailer up to an empty line. */
static enum fg_err read_chunks(struct fg__http_response *r, struct evbuffer *in, char *errmsg)
{
    for (;;) {
        size_t n = 0;
        char *line;
        if (r->trailers || r->chunk_left < 0) {
            if (!(line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF)))
                return FG_E_BUSY;
            if (r->trailers) {
                free(line);
                if (n == 0)
                    return FG_OK;
                continue;
            }
            char *end = NULL;
            long long size = strtoll(line, &end, 16);
            bool ok = end != line && size >= 0;
            free(line);
            if (!ok)
                return fg_errmsg(errmsg, FG_E_PARSE, "malformed chunk size in HTTP response");
            r->trailers = size == 0;
            r->chunk_left = size;
            continue;
        }
        if (r->chunk_left > 0) {
            size_t before = evbuffer_get_length(r->body);
            enum fg_err err = take(r, in, r->chunk_left, errmsg);
            if (err)
                return err;
            r->chunk_left -= (long long)(evbuffer_get_length(r->body) - before);
            if (r->chunk_left > 0)
                return FG_E_BUSY;
        }
        if (evbuffer_get_length(in) < 2)
            return FG_E_BUSY;
        evbuffer_drain(in, 2); /* the CRLF after the chunk's data */
        r->chunk_left = -1;
    }
}

enum fg_err fg__http_response_feed(struct fg__http_response *r, struct evbuffer *in, bool eof, char *errmsg)
{
    enum fg_err err = read_head(r, in, errmsg);
    if (!err && r->chunked) {
        err = read_chunks(r, in, errmsg);
    } else if (!err && r->content_length >= 0) {
        err = take(r, in, r->content_length - (long long)evbuffer_get_length(r->body), errmsg);
        if (!err && (long long)evbuffer_get_length(r->body) < r->content_length)
            err = FG_E_BUSY;
    } else if (!err) { /* no framing: the body runs to the end of the stream */
        r->keep_alive = false;
        err = take(r, in, -1, errmsg);
        if (!err && !eof)
            err = FG_E_BUSY;
    }
    if (err == FG_E_BUSY && eof)
        err = fg_errmsg(errmsg, FG_E_PARSE, "EOF");
    return err;
}
