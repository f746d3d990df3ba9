/*
 * message — gRPC's length-prefixed messages, the payload of every request and response stream.
 *
 * On the wire each message is one flag byte (bit 0: compressed; the others reserved), a 4-byte
 * big-endian length and that many bytes of protobuf. HTTP/2 cuts the stream into DATA frames
 * wherever it likes, so the reader is fed arbitrary chunks and hands out whole messages; it holds
 * at most one incomplete message, and refuses one whose declared length is over its limit as soon
 * as the five bytes of the prefix have arrived, before the body is buffered. Compression is never
 * negotiated here, so a compressed message is refused as UNIMPLEMENTED.
 *
 * The reader owns its buffer; messages handed to the callback are borrowed for the callback's
 * duration. Internal to nodeagent/grpc.
 */
#ifndef FG_GRPC_MESSAGE_INT_H
#define FG_GRPC_MESSAGE_INT_H

#include <event2/buffer.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nodeagent/grpc/status.h"

#define FG__GRPC_PREFIX 5

/* Appends msg as one length-prefixed, uncompressed message to out; returns the bytes appended. */
size_t fg__grpc_message_pack(struct evbuffer *out, const ProtobufCMessage *msg);

/* One whole message; returns false to stop the reader (the caller's call has ended). */
typedef bool fg__grpc_message_cb(void *ud, const uint8_t *msg, size_t len);

struct fg__grpc_reader {
    struct fg_buf pending;   /* the start of a message not yet whole */
    size_t max;              /* the largest message accepted */
    size_t count;            /* messages handed out */
    bool failed;             /* a feed returned an error: the reader takes nothing more */
};

void fg__grpc_reader_init(struct fg__grpc_reader *r, size_t max);
void fg__grpc_reader_cleanup(struct fg__grpc_reader *r);

/* Takes the next len bytes of the stream and calls cb for each message they complete. FG_GRPC_OK,
 * or the status the call must end with, explained in why (FG_ERRMSG_MAX): RESOURCE_EXHAUSTED for
 * a message over max, UNIMPLEMENTED for a compressed one, INTERNAL for reserved flag bits. */
enum fg_grpc_status fg__grpc_reader_feed(struct fg__grpc_reader *r, const uint8_t *data, size_t len,
                                         fg__grpc_message_cb *cb, void *ud, char *why);

/* The stream ended: FG_GRPC_OK, or INTERNAL when it ended inside a message. */
enum fg_grpc_status fg__grpc_reader_end(const struct fg__grpc_reader *r, char *why);

#endif
