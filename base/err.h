/*
 * err — the one error type of fracgpu.
 *
 * Everything that can fail returns an `enum fg_err` and delivers its results through out-params.
 * The codes are generated from one X-macro list, so the enum and its strings never drift apart.
 * Kubernetes API failures map onto the FG_E_KUBE_* codes exactly once, where the HTTP reply is
 * decoded (operator/kube); everything above passes the code up unchanged. A human-readable detail,
 * when one exists, travels in a caller-provided `char errmsg[FG_ERRMSG_MAX]` that may be NULL.
 */
#ifndef FG_BASE_ERR_H
#define FG_BASE_ERR_H

#include <stddef.h>

#define FG_MUST_USE __attribute__((warn_unused_result))

#define FG_ERR_LIST(X)                                                                 \
    X(FG_OK, "ok")                                                                     \
    X(FG_E_NOMEM, "out of memory")                                                     \
    X(FG_E_INVAL, "invalid argument")                                                  \
    X(FG_E_PARSE, "malformed input")                                                   \
    X(FG_E_TOO_BIG, "input exceeds size limit")                                        \
    X(FG_E_IO, "input/output error")                                                   \
    X(FG_E_NOT_FOUND_LOCAL, "not found")                                               \
    X(FG_E_CONNECT, "cannot connect to server")                                        \
    X(FG_E_TLS, "TLS failure")                                                         \
    X(FG_E_TIMEOUT, "timed out")                                                       \
    X(FG_E_CLOSED, "connection or stream closed")                                      \
    X(FG_E_UNSUPPORTED, "not supported")                                               \
    X(FG_E_BUSY, "busy")                                                               \
    X(FG_E_SHUTDOWN, "shutting down")                                                  \
    X(FG_E_KUBE_BAD_REQUEST, "bad request (400)")                                      \
    X(FG_E_KUBE_UNAUTHORIZED, "unauthorized (401)")                                    \
    X(FG_E_KUBE_FORBIDDEN, "forbidden (403)")                                          \
    X(FG_E_KUBE_NOT_FOUND, "not found (404)")                                          \
    X(FG_E_KUBE_METHOD_NOT_ALLOWED, "method not allowed (405)")                        \
    X(FG_E_KUBE_ALREADY_EXISTS, "already exists (409)")                                \
    X(FG_E_KUBE_CONFLICT, "conflict (409)")                                            \
    X(FG_E_KUBE_GONE, "resource version expired (410)")                                \
    X(FG_E_KUBE_UNSUPPORTED_MEDIA, "unsupported media type (415)")                     \
    X(FG_E_KUBE_INVALID, "invalid (422)")                                              \
    X(FG_E_KUBE_TOO_MANY_REQUESTS, "too many requests (429)")                          \
    X(FG_E_KUBE_INTERNAL, "internal server error (500)")                               \
    X(FG_E_KUBE_UNAVAILABLE, "service unavailable (503)")                              \
    X(FG_E_KUBE_TIMEOUT, "server timeout (504)")                                       \
    X(FG_E_KUBE_OTHER, "unexpected HTTP status")                                       \
    X(FG_E_INTERNAL, "internal error")

#define FG__ERR_ENUM(name, str) name,
enum fg_err { FG_ERR_LIST(FG__ERR_ENUM) FG_ERR__COUNT };
#undef FG__ERR_ENUM

#define FG_ERRMSG_MAX 512

/* Returns the static description of `err`; never NULL, also for out-of-range values. */
const char *fg_err_str(enum fg_err err);

/* Returns the enum's identifier ("FG_E_KUBE_CONFLICT"); never NULL. */
const char *fg_err_name(enum fg_err err);

/* Formats into errmsg (FG_ERRMSG_MAX bytes) when errmsg is not NULL; returns `err` for tail calls:
 *   return fg_errmsg(errmsg, FG_E_PARSE, "line %d: %s", n, why); */
enum fg_err fg_errmsg(char *errmsg, enum fg_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
