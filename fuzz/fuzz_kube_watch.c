/*
 * fuzz_kube_watch — the kube client's watch-stream decoder and what the informers do with each event.
 *
 * The bytes are a watch reply body: newline-separated JSON events from the API server. They go
 * through fg_watch_decoder three times: whole, then cut into chunks of changing sizes (as curl hands
 * them over, splitting lines and UTF-8 sequences anywhere), then in chunks again with
 * object.metadata.managedFields cut out of each line before parsing, as the informers that drop the
 * field ask. Decoding must not depend on where the stream was cut, so the first two runs are checked
 * to agree (events, result) and a disagreement aborts. Each event takes the path an informer's takes:
 * an ERROR event's Status through fg_kube_status_from_object; any other object through the pod
 * transform (fg_transform_keep) into a cached fg_kobj, parsed back once. The same bytes are also read
 * as what the loop keeps of a refused watch or request (fg_kube_status_from_reply) and as one page of
 * a list reply (fg__kube_list_page, module-internal), the list half of list-watch, which must hand out
 * no resourceVersion or continue token for a page it refuses.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "base/json.h"
#include "fuzz/fuzz.h"
#include "operator/cache/kobj.h"
#include "operator/cache/transform.h"
#include "operator/kube/client_internal.h"
#include "operator/kube/status.h"
#include "operator/kube/watch.h"

/* Lines longer than this are refused; small, so that the limit's edges are reached. */
#define MAX_LINE (64u << 10)

static struct fg_fieldset *pod_fields;

struct counts {
    unsigned long long events, errors, cached;
};

/* What an informer does with an object it receives (borrowed here): transform, then cache. */
static void cache(struct counts *c, json_object *object)
{
    /* the transform edits in place and the caller drops its reference afterwards, as informers do */
    json_object *in = json_object_get(object);
    json_object *kept = fg_transform_keep(pod_fields, in);
    json_object_put(in);
    if (!kept)
        return;
    struct fg_kobj *ko;
    if (fg_kobj_new(kept, 0, &ko, NULL) == FG_OK) {
        json_object *copy = NULL;
        if (fg_kobj_parse(ko, &copy, NULL) == FG_OK)
            c->cached++;
        json_object_put(copy);
        fg_kobj_unref(ko);
    }
    json_object_put(kept);
}

static bool on_event(void *ud, enum fg_watch_type type, json_object *object)
{
    struct counts *c = ud;
    c->events++;
    (void)fg_watch_type_str(type);
    if (type == FG_WATCH_ERROR) {
        struct fg_kube_status st;
        if (fg_kube_status_from_object(object, &st) != FG_OK)
            c->errors++;
        fg_kube_status_cleanup(&st);
        return true;
    }
    cache(c, object);
    return true;
}

/* Feeds the stream whole or in chunks of 1 to 200 bytes (a pseudo-random sequence that the input's
 * length seeds, so a run is repeatable); returns the decoder's result (feed, then finish). */
static enum fg_err decode(const char *data, size_t size, bool chunked, bool cut, struct counts *c)
{
    struct fg_watch_decoder d;
    fg_watch_decoder_init(&d, MAX_LINE, on_event, c);
    if (cut)
        fg_watch_decoder_cut(&d, fg_watch_managed_fields);
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = FG_OK;
    unsigned seed = (unsigned)size * 2654435761u;
    for (size_t off = 0; off < size && !err;) {
        size_t n = size - off;
        if (chunked) {
            seed = seed * 1103515245u + 12345u;
            size_t want = (seed >> 16) % 4 == 0 ? 1 + (seed >> 8) % 3 : 1 + (seed >> 8) % 200;
            n = n < want ? n : want;
        }
        err = fg_watch_decoder_feed(&d, data + off, n, msg);
        off += n;
    }
    if (!err)
        err = fg_watch_decoder_finish(&d, msg);
    fg_watch_decoder_cleanup(&d);
    return err;
}

static void on_item(void *ud, json_object *item)
{
    struct counts *c = ud;
    if (json_object_is_type(item, json_type_object))
        cache(c, item);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!pod_fields)
        pod_fields = fg_fieldset_new(fg_transform_pod_paths);
    const char *text = (const char *)data;

    struct counts whole = { 0 }, chunked = { 0 }, cut = { 0 };
    enum fg_err a = decode(text, size, false, false, &whole);
    enum fg_err b = decode(text, size, true, false, &chunked);
    if (a != b || whole.events != chunked.events || whole.cached != chunked.cached)
        abort(); /* the decoder's result depends on how the stream was cut */
    (void)decode(text, size, true, true, &cut);

    struct fg_kube_status st;
    (void)fg_kube_status_from_reply(size % 2 ? 410 : 422, text, size, size % 3 ? NULL : "7", &st);
    fg_kube_status_cleanup(&st);

    char *rv = NULL, *cont = NULL;
    if (fg__kube_list_page(text, size, MAX_LINE, on_item, &cut, &rv, &cont, NULL) != FG_OK && (rv || cont))
        abort(); /* a page that failed still handed out its tokens */
    free(rv);
    free(cont);
    return 0;
}
