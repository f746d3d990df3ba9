/* gRPC status codes and their names (status.h). */
#include "nodeagent/grpc/status.h"

const char *fg_grpc_status_name(int status)
{
    switch (status) {
#define FG__GRPC_STATUS_CASE(name, code, str) \
    case code: return str;
        FG_GRPC_STATUS_LIST(FG__GRPC_STATUS_CASE)
#undef FG__GRPC_STATUS_CASE
    }
    return "UNKNOWN";
}

enum fg_grpc_status fg_grpc_status_from_http(int http_status)
{
    switch (http_status) {
    case 400: return FG_GRPC_INTERNAL;
    case 401: return FG_GRPC_UNAUTHENTICATED;
    case 403: return FG_GRPC_PERMISSION_DENIED;
    case 404: return FG_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504: return FG_GRPC_UNAVAILABLE;
    default: return FG_GRPC_UNKNOWN;
    }
}
