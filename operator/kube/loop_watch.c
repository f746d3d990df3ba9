/*
 * loop_watch — watch streams on the loop thread.
 *
 * The write callback checks the HTTP status on the first bytes: a 2xx stream is fed to the call's
 * watch decoder (watch.h), whose events reach the consumer unless the call was cancelled; anything
 * else is a refused watch whose Status body is kept (bounded) for status.c. A decoder error aborts
 * the transfer and becomes the stream's end reason.
 */
#include "operator/kube/loop_internal.h"

static bool on_watch_event(void *ud, enum fg_watch_type type, json_object *object)
{
    struct fg_kube_call *call = ud;
    return !call->cancelled && call->on_event(call->ud, type, object);
}

size_t fg__kube_watch_write(char *data, size_t size, size_t n, void *ud)
{
    struct fg_kube_call *call = ud;
    size_t len = size * n;
    if (call->cancelled)
        return 0;
    if (call->http_code == 0)
        curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &call->http_code);
    if (call->http_code < 200 || call->http_code >= 300) {
        /* a refused watch: keep the Status body (bounded) for fg_kube_status_from_reply */
        if (fg_buf_append(&call->reply, data, len))
            call->too_big = true;
        return len;
    }
    enum fg_err err = fg_watch_decoder_feed(&call->decoder, data, len, call->errmsg);
    if (err) {
        call->stream_err = err;
        return 0;
    }
    return len;
}

struct fg_kube_call *fg_kube_loop_watch(struct fg_kube_loop *loop, const char *path, size_t max_line,
                                        fg_watch_event_fn *on_event, fg_kube_watch_end_fn *on_end, void *ud)
{
    struct fg_kube_call *call = fg__kube_call_new(loop, CALL_WATCH, "GET", path, ud);
    call->on_event = on_event;
    call->on_end = on_end;
    fg_watch_decoder_init(&call->decoder, max_line, on_watch_event, call);
    fg__kube_call_schedule(call);
    return call;
}

void fg_kube_call_cut_member(struct fg_kube_call *call, const char *const *path)
{
    if (call && call->kind == CALL_WATCH)
        fg_watch_decoder_cut(&call->decoder, path);
}
