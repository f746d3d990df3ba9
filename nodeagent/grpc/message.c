/* gRPC's length-prefixed messages (message_int.h). */
#include "nodeagent/grpc/message_int.h"

#include <string.h>

#include "base/assert.h"
#include "base/err.h"

#define FLAG_COMPRESSED 0x01u

size_t fg__grpc_message_pack(struct evbuffer *out, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    fg_assert(n <= UINT32_MAX);
    struct evbuffer_iovec v;
    int extents = evbuffer_reserve_space(out, (ev_ssize_t)(FG__GRPC_PREFIX + n), &v, 1);
    fg_assert(extents == 1); /* one extent is contiguous */
    uint8_t *p = v.iov_base;
    p[0] = 0;
    p[1] = (uint8_t)(n >> 24);
    p[2] = (uint8_t)(n >> 16);
    p[3] = (uint8_t)(n >> 8);
    p[4] = (uint8_t)n;
    size_t packed = protobuf_c_message_pack(msg, p + FG__GRPC_PREFIX);
    fg_assert(packed == n);
    v.iov_len = FG__GRPC_PREFIX + n;
    int committed = evbuffer_commit_space(out, &v, 1);
    fg_assert(committed == 0);
    return FG__GRPC_PREFIX + n;
}

void fg__grpc_reader_init(struct fg__grpc_reader *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    fg_buf_init(&r->pending, 0);
    r->max = max;
}

void fg__grpc_reader_cleanup(struct fg__grpc_reader *r)
{
    fg_buf_cleanup(&r->pending);
}

static uint32_t length_of(const uint8_t *prefix)
{
    return (uint32_t)prefix[1] << 24 | (uint32_t)prefix[2] << 16 | (uint32_t)prefix[3] << 8 | prefix[4];
}

/* Checks the prefix at p: FG_GRPC_OK when a message of that kind and size may follow. */
static enum fg_grpc_status check_prefix(const struct fg__grpc_reader *r, const uint8_t *p, char *why)
{
    if (p[0] & FLAG_COMPRESSED) {
        fg_errmsg(why, FG_E_UNSUPPORTED, "compressed message, but no compression was negotiated");
        return FG_GRPC_UNIMPLEMENTED;
    }
    if (p[0] != 0) {
        fg_errmsg(why, FG_E_PARSE, "message flags 0x%02x: reserved bits set", p[0]);
        return FG_GRPC_INTERNAL;
    }
    uint32_t n = length_of(p);
    if (n > r->max) {
        fg_errmsg(why, FG_E_TOO_BIG, "message of %u bytes exceeds the limit of %zu bytes", n, r->max);
        return FG_GRPC_RESOURCE_EXHAUSTED;
    }
    return FG_GRPC_OK;
}

enum fg_grpc_status fg__grpc_reader_feed(struct fg__grpc_reader *r, const uint8_t *data, size_t len,
                                         fg__grpc_message_cb *cb, void *ud, char *why)
{
    if (r->failed)
        return FG_GRPC_OK;
    fg_buf_put(&r->pending, data, len);
    const uint8_t *p = (const uint8_t *)r->pending.data;
    size_t have = r->pending.len, at = 0;
    enum fg_grpc_status st = FG_GRPC_OK;
    while (have - at >= FG__GRPC_PREFIX) {
        st = check_prefix(r, p + at, why);
        if (st != FG_GRPC_OK) {
            r->failed = true;
            break;
        }
        size_t n = length_of(p + at);
        if (have - at - FG__GRPC_PREFIX < n)
            break;
        r->count++;
        bool more = cb(ud, p + at + FG__GRPC_PREFIX, n);
        at += FG__GRPC_PREFIX + n;
        if (!more) {
            r->failed = true;
            break;
        }
    }
    fg_buf_consume(&r->pending, r->failed ? r->pending.len : at);
    return st;
}

enum fg_grpc_status fg__grpc_reader_end(const struct fg__grpc_reader *r, char *why)
{
    size_t have = r->pending.len;
    if (r->failed || have == 0)
        return FG_GRPC_OK;
    if (have < FG__GRPC_PREFIX)
        fg_errmsg(why, FG_E_PARSE, "stream ended inside a message prefix (%zu of %d bytes)", have, FG__GRPC_PREFIX);
    else
        fg_errmsg(why, FG_E_PARSE, "stream ended inside a message: %zu of its %u bytes arrived",
                  have - FG__GRPC_PREFIX, length_of((const uint8_t *)r->pending.data));
    return FG_GRPC_INTERNAL;
}
