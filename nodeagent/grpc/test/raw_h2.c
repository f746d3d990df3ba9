/* A hand-driven HTTP/2 peer on a thread (raw_h2.h). */
#include "raw_h2.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nodeagent/grpc/metadata_int.h"

#define WAIT_MS 5000

struct body_source {
    const uint8_t *data;
    size_t len, at;
};

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                         nghttp2_data_source *source, void *ud)
{
    (void)s;
    (void)id;
    (void)ud;
    struct body_source *b = source->ptr;
    size_t n = b->len - b->at < length ? b->len - b->at : length;
    memcpy(buf, b->data + b->at, n);
    b->at += n;
    if (b->at == b->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    (void)s;
    (void)f;
    (void)flags;
    struct raw_exchange *x = ud;
    char v[512];
    snprintf(v, sizeof(v), "%.*s", (int)valuelen, (const char *)value);
    if (fg__grpc_name_is(name, namelen, ":status")) {
        x->http_status = atoi(v);
    } else if (fg__grpc_name_is(name, namelen, "grpc-status")) {
        x->grpc_status = atoi(v);
    } else if (fg__grpc_name_is(name, namelen, "grpc-message")) {
        char *d = fg__grpc_percent_decode(value, valuelen);
        snprintf(x->grpc_message, sizeof(x->grpc_message), "%s", d);
        free(d);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud)
{
    (void)s;
    (void)id;
    (void)code;
    ((struct raw_exchange *)ud)->stream_closed = true;
    return 0;
}

static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads what is there within WAIT_MS: > 0 bytes, 0 at the server's close, -1 on a timeout or error. */
static ssize_t read_some(int fd, uint8_t *buf, size_t n)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, WAIT_MS) <= 0)
        return -1;
    ssize_t r = read(fd, buf, n);
    return r < 0 && errno == ECONNRESET ? 0 : r;
}

static void exchange_garbage(struct raw_exchange *x, int fd)
{
    if (!write_all(fd, x->garbage, strlen(x->garbage))) {
        x->closed_by_server = true; /* it may close before we finish writing */
        return;
    }
    uint8_t buf[4096];
    ssize_t r;
    while ((r = read_some(fd, buf, sizeof(buf))) > 0)
        ;
    if (r == 0)
        x->closed_by_server = true;
    else
        snprintf(x->error, sizeof(x->error), "the server kept the connection open");
}

static void exchange_http2(struct raw_exchange *x, int fd)
{
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session *s;
    nghttp2_session_client_new(&s, cbs, x);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    nghttp2_nv nv[8];
    size_t n = 0;
#define NV(k, v) nv[n++] = (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), NGHTTP2_NV_FLAG_NONE }
    NV(":method", "POST");
    NV(":scheme", "http");
    NV(":path", x->path);
    NV(":authority", "localhost");
    NV("content-type", x->content_type);
    NV("te", "trailers");
    if (x->extra_name)
        NV(x->extra_name, x->extra_value);
#undef NV
    struct body_source b = { x->body, x->body_len, 0 };
    nghttp2_data_provider prov = { .source.ptr = &b, .read_callback = read_body };
    nghttp2_submit_request(s, NULL, nv, n, &prov, NULL);
    uint8_t buf[16384];
    while (!x->stream_closed) {
        const uint8_t *out;
        ssize_t w;
        while ((w = nghttp2_session_mem_send(s, &out)) > 0)
            if (!write_all(fd, out, (size_t)w))
                break;
        if (x->hang_up)
            break;
        ssize_t r = read_some(fd, buf, sizeof(buf));
        if (r <= 0) {
            if (r == 0)
                x->closed_by_server = true;
            else
                snprintf(x->error, sizeof(x->error), "no answer within %d ms", WAIT_MS);
            break;
        }
        if (nghttp2_session_mem_recv(s, buf, (size_t)r) < 0) {
            snprintf(x->error, sizeof(x->error), "the server broke HTTP/2");
            break;
        }
    }
    nghttp2_session_del(s);
}

static void *run(void *arg)
{
    struct raw_exchange *x = arg;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", x->socket_path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        snprintf(x->error, sizeof(x->error), "connect: %s", strerror(errno));
    else if (x->garbage)
        exchange_garbage(x, fd);
    else
        exchange_http2(x, fd);
    close(fd);
    atomic_store(&x->done, true);
    return NULL;
}

void raw_start(struct raw_exchange *x)
{
    x->grpc_status = -1;
    atomic_store(&x->done, false);
    pthread_create(&x->thread, NULL, run, x);
}

void raw_join(struct raw_exchange *x)
{
    pthread_join(x->thread, NULL);
}
