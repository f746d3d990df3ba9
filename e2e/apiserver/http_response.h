/*
 * http_response — an HTTP/1.1 response read as it arrives, for the webhook client (hook_client.c).
 *
 * fg__http_response_feed is called with the connection's input buffer each time bytes arrive (and
 * once more at end of stream) and takes what it can: the status line and headers, then a body framed
 * by Content-Length, by chunked transfer coding, or by the end of the stream, into `body`. It says
 * whether the response is complete, needs more bytes, or is malformed, and whether the connection
 * may carry another request afterwards (HTTP/1.1 without `Connection: close`, and a framed body).
 */
#ifndef FG_E2E_APISERVER_HTTP_RESPONSE_H
#define FG_E2E_APISERVER_HTTP_RESPONSE_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct fg__http_response {
    int status;               /* 0 until the status line is read */
    bool headers_done;
    bool chunked;
    bool keep_alive;
    long long content_length; /* -1: not given */
    long long chunk_left;     /* bytes left in the current chunk; -1 between chunks */
    bool trailers;            /* reading the trailer after the last chunk */
    size_t max_body;
    struct evbuffer *body;
};

void fg__http_response_init(struct fg__http_response *r, size_t max_body);
void fg__http_response_cleanup(struct fg__http_response *r);
/* Takes what it can from in; eof: the stream has ended. FG_OK when the response is complete,
 * FG_E_BUSY while more is needed, FG_E_PARSE (malformed, or cut short by eof) or FG_E_TOO_BIG with
 * the reason in errmsg. */
enum fg_err fg__http_response_feed(struct fg__http_response *r, struct evbuffer *in, bool eof,
                                   char *errmsg) FG_MUST_USE;

#endif
