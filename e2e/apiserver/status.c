/* status — metav1.Status objects for error replies; see status.h. */
#include "e2e/apiserver/status.h"

#include "base/json.h"

const char *fg__status_reason(int code)
{
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "InternalError";
    }
}

json_object *fg__status_new(int code, const char *reason, const char *message, json_object *details)
{
    json_object *s = json_object_new_object();
    json_object_object_add(s, "kind", json_object_new_string("Status"));
    json_object_object_add(s, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(s, "metadata", json_object_new_object());
    json_object_object_add(s, "status", json_object_new_string("Failure"));
    json_object_object_add(s, "message", json_object_new_string(message ? message : ""));
    json_object_object_add(s, "reason", json_object_new_string(reason ? reason : fg__status_reason(code)));
    if (details)
        json_object_object_add(s, "details", details);
    json_object_object_add(s, "code", json_object_new_int(code));
    return s;
}

json_object *fg__status_success(int code)
{
    json_object *s = json_object_new_object();
    json_object_object_add(s, "kind", json_object_new_string("Status"));
    json_object_object_add(s, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(s, "metadata", json_object_new_object());
    json_object_object_add(s, "status", json_object_new_string("Success"));
    json_object_object_add(s, "code", json_object_new_int(code));
    return s;
}

json_object *fg__status_details(const char *name, const char *group, const char *kind)
{
    json_object *d = json_object_new_object();
    if (name)
        json_object_object_add(d, "name", json_object_new_string(name));
    if (group && *group)
        json_object_object_add(d, "group", json_object_new_string(group));
    if (kind)
        json_object_object_add(d, "kind", json_object_new_string(kind));
    return d;
}

void fg__status_add_cause(json_object *details, const char *reason, const char *message, const char *field)
{
    json_object *causes = fg_json_get(details, "causes", NULL);
    if (!causes) {
        causes = json_object_new_array();
        json_object_object_add(details, "causes", causes);
    }
    json_object *c = json_object_new_object();
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(message));
    json_object_object_add(c, "field", json_object_new_string(field));
    json_object_array_add(causes, c);
}

int fg__status_code(enum fg_err err)
{
    switch (err) {
    case FG_E_KUBE_BAD_REQUEST: return 400;
    case FG_E_KUBE_UNAUTHORIZED: return 401;
    case FG_E_KUBE_FORBIDDEN: return 403;
    case FG_E_KUBE_NOT_FOUND: return 404;
    case FG_E_KUBE_METHOD_NOT_ALLOWED: return 405;
    case FG_E_KUBE_ALREADY_EXISTS: return 409;
    case FG_E_KUBE_CONFLICT: return 409;
    case FG_E_KUBE_GONE: return 410;
    case FG_E_TOO_BIG: return 413;
    case FG_E_KUBE_UNSUPPORTED_MEDIA: return 415;
    case FG_E_KUBE_INVALID: return 422;
    case FG_E_KUBE_TOO_MANY_REQUESTS: return 429;
    case FG_E_KUBE_UNAVAILABLE: return 503;
    case FG_E_KUBE_TIMEOUT: return 504;
    default: return 500;
    }
}

json_object *fg__status_from_err(enum fg_err err, const char *message, json_object *details)
{
    const char *reason = err == FG_E_KUBE_ALREADY_EXISTS ? "AlreadyExists" : NULL;
    return fg__status_new(fg__status_code(err), reason, message, details);
}
