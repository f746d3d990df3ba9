/*
 * status — gRPC's status codes, the outcome of every call on either side of nodeagent/grpc, and
 * the one limit both sides share.
 *
 * A gRPC call ends with one of the seventeen codes of the gRPC specification (doc/statuscodes.md)
 * and an optional human-readable message; on the wire they are the grpc-status and grpc-message
 * trailers. The codes are not fracgpu errors (enum fg_err): a failed Allocate is an answer of the
 * device plugin, not a failure of the library that carried it. The list is one X-macro, so the enum
 * and the names never drift apart; the numbers are the wire values and never change.
 *
 * Where a peer answers with an HTTP status instead of a grpc-status (a proxy, a server that is not
 * gRPC), fg_grpc_status_from_http maps it as the specification's http-grpc-status-mapping says.
 */
#ifndef FG_GRPC_STATUS_H
#define FG_GRPC_STATUS_H

#define FG_GRPC_STATUS_LIST(X)                                \
    X(FG_GRPC_OK, 0, "OK")                                    \
    X(FG_GRPC_CANCELLED, 1, "CANCELLED")                      \
    X(FG_GRPC_UNKNOWN, 2, "UNKNOWN")                          \
    X(FG_GRPC_INVALID_ARGUMENT, 3, "INVALID_ARGUMENT")        \
    X(FG_GRPC_DEADLINE_EXCEEDED, 4, "DEADLINE_EXCEEDED")      \
    X(FG_GRPC_NOT_FOUND, 5, "NOT_FOUND")                      \
    X(FG_GRPC_ALREADY_EXISTS, 6, "ALREADY_EXISTS")            \
    X(FG_GRPC_PERMISSION_DENIED, 7, "PERMISSION_DENIED")      \
    X(FG_GRPC_RESOURCE_EXHAUSTED, 8, "RESOURCE_EXHAUSTED")    \
    X(FG_GRPC_FAILED_PRECONDITION, 9, "FAILED_PRECONDITION")  \
    X(FG_GRPC_ABORTED, 10, "ABORTED")                         \
    X(FG_GRPC_OUT_OF_RANGE, 11, "OUT_OF_RANGE")               \
    X(FG_GRPC_UNIMPLEMENTED, 12, "UNIMPLEMENTED")             \
    X(FG_GRPC_INTERNAL, 13, "INTERNAL")                       \
    X(FG_GRPC_UNAVAILABLE, 14, "UNAVAILABLE")                 \
    X(FG_GRPC_DATA_LOSS, 15, "DATA_LOSS")                     \
    X(FG_GRPC_UNAUTHENTICATED, 16, "UNAUTHENTICATED")

#define FG__GRPC_STATUS_ENUM(name, code, str) name = code,
enum fg_grpc_status { FG_GRPC_STATUS_LIST(FG__GRPC_STATUS_ENUM) };
#undef FG__GRPC_STATUS_ENUM

#define FG_GRPC_STATUS_MAX 16

/* The largest message either side accepts unless told otherwise (gRPC's own default); a larger
 * one ends its call with RESOURCE_EXHAUSTED. */
#define FG_GRPC_DEFAULT_MAX_MESSAGE (4u * 1024 * 1024)

/* "DEADLINE_EXCEEDED"; "UNKNOWN" for a value outside the list (a peer may send any number). Never
 * NULL. */
const char *fg_grpc_status_name(int status);

/* The status a client reports for an HTTP response without grpc-status: 400 INTERNAL, 401
 * UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429 502 503 504 UNAVAILABLE, any other
 * UNKNOWN. */
enum fg_grpc_status fg_grpc_status_from_http(int http_status);

#endif
