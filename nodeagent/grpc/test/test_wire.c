/* gRPC's wire formats without a connection: length-prefixed messages cut anywhere, refused when
 * over the limit, compressed or cut short; grpc-message percent-encoding both ways; grpc-timeout
 * parsed and written; content-type recognised; status names and the HTTP mapping; and the
 * generated device-plugin messages carrying the published field numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nodeagent/grpc/deviceplugin.pb-c.h"
#include "nodeagent/grpc/message_int.h"
#include "nodeagent/grpc/metadata_int.h"
#include "nodeagent/grpc/podresources.pb-c.h"
#include "nodeagent/grpc/status.h"

struct got {
    size_t n;
    char msgs[8][64];
    size_t lens[8];
    size_t stop_after; /* 0: never */
};

static bool collect(void *ud, const uint8_t *msg, size_t len)
{
    struct got *g = ud;
    assert_true(g->n < 8 && len < 64);
    memcpy(g->msgs[g->n], msg, len);
    g->lens[g->n++] = len;
    return g->stop_after == 0 || g->n < g->stop_after;
}

static size_t frame(uint8_t *out, uint8_t flags, const char *body, size_t len)
{
    out[0] = flags;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
    memcpy(out + 5, body, len);
    return len + 5;
}

static void reader_reassembles_messages_cut_anywhere(void **state)
{
    (void)state;
    uint8_t wire[64];
    size_t n = frame(wire, 0, "hello", 5);
    n += frame(wire + n, 0, "", 0);
    n += frame(wire + n, 0, "world!", 6);
    for (size_t cut = 1; cut <= n; cut++) { /* every chunk size, down to a byte at a time */
        struct fg__grpc_reader r;
        fg__grpc_reader_init(&r, 100);
        struct got g = { 0 };
        char why[FG_ERRMSG_MAX] = "";
        for (size_t at = 0; at < n; at += cut) {
            size_t len = n - at < cut ? n - at : cut;
            assert_int_equal(fg__grpc_reader_feed(&r, wire + at, len, collect, &g, why), FG_GRPC_OK);
        }
        assert_int_equal(fg__grpc_reader_end(&r, why), FG_GRPC_OK);
        assert_int_equal(g.n, 3);
        assert_int_equal(r.count, 3);
        assert_memory_equal(g.msgs[0], "hello", 5);
        assert_int_equal(g.lens[1], 0);
        assert_int_equal(g.lens[2], 6);
        assert_memory_equal(g.msgs[2], "world!", 6);
        fg__grpc_reader_cleanup(&r);
    }
}

static void reader_refuses_oversized_before_the_body(void **state)
{
    (void)state;
    struct fg__grpc_reader r;
    fg__grpc_reader_init(&r, 10);
    struct got g = { 0 };
    char why[FG_ERRMSG_MAX] = "";
    const uint8_t prefix[] = { 0, 0, 0, 0, 11 }; /* 11 bytes declared, none sent */
    assert_int_equal(fg__grpc_reader_feed(&r, prefix, 5, collect, &g, why), FG_GRPC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(why, "11 bytes exceeds the limit of 10"));
    assert_int_equal(g.n, 0);
    /* exactly the limit is fine */
    struct fg__grpc_reader ok;
    fg__grpc_reader_init(&ok, 10);
    uint8_t wire[32];
    size_t n = frame(wire, 0, "0123456789", 10);
    assert_int_equal(fg__grpc_reader_feed(&ok, wire, n, collect, &g, why), FG_GRPC_OK);
    assert_int_equal(g.n, 1);
    fg__grpc_reader_cleanup(&ok);
    fg__grpc_reader_cleanup(&r);
}

static void reader_refuses_compressed_and_reserved_flags(void **state)
{
    (void)state;
    uint8_t wire[16];
    char why[FG_ERRMSG_MAX] = "";
    struct got g = { 0 };
    struct fg__grpc_reader r;
    fg__grpc_reader_init(&r, 100);
    size_t n = frame(wire, 1, "x", 1);
    assert_int_equal(fg__grpc_reader_feed(&r, wire, n, collect, &g, why), FG_GRPC_UNIMPLEMENTED);
    assert_non_null(strstr(why, "compress"));
    fg__grpc_reader_cleanup(&r);
    fg__grpc_reader_init(&r, 100);
    n = frame(wire, 0x80, "x", 1);
    assert_int_equal(fg__grpc_reader_feed(&r, wire, n, collect, &g, why), FG_GRPC_INTERNAL);
    assert_int_equal(g.n, 0);
    fg__grpc_reader_cleanup(&r);
}

static void reader_reports_a_stream_cut_mid_message(void **state)
{
    (void)state;
    char why[FG_ERRMSG_MAX] = "";
    struct got g = { 0 };
    struct fg__grpc_reader r;
    fg__grpc_reader_init(&r, 100);
    const uint8_t cut[] = { 0, 0, 0, 0, 16, 'a', 'b', 'c' };
    assert_int_equal(fg__grpc_reader_feed(&r, cut, sizeof(cut), collect, &g, why), FG_GRPC_OK);
    assert_int_equal(fg__grpc_reader_end(&r, why), FG_GRPC_INTERNAL);
    assert_non_null(strstr(why, "3 of its 16 bytes"));
    fg__grpc_reader_cleanup(&r);
    fg__grpc_reader_init(&r, 100);
    assert_int_equal(fg__grpc_reader_feed(&r, cut, 2, collect, &g, why), FG_GRPC_OK);
    assert_int_equal(fg__grpc_reader_end(&r, why), FG_GRPC_INTERNAL);
    assert_non_null(strstr(why, "prefix"));
    fg__grpc_reader_cleanup(&r);
}

static void reader_stops_when_the_callback_says_so(void **state)
{
    (void)state;
    uint8_t wire[32];
    size_t n = frame(wire, 0, "a", 1);
    n += frame(wire + n, 0, "b", 1);
    struct got g = { .stop_after = 1 };
    char why[FG_ERRMSG_MAX] = "";
    struct fg__grpc_reader r;
    fg__grpc_reader_init(&r, 100);
    assert_int_equal(fg__grpc_reader_feed(&r, wire, n, collect, &g, why), FG_GRPC_OK);
    assert_int_equal(g.n, 1);
    assert_int_equal(fg__grpc_reader_feed(&r, wire, n, collect, &g, why), FG_GRPC_OK);
    assert_int_equal(g.n, 1); /* takes nothing more */
    fg__grpc_reader_cleanup(&r);
}

static void pack_writes_prefix_and_protobuf(void **state)
{
    (void)state;
    V1beta1__CDIDevice dev = V1BETA1__CDIDEVICE__INIT;
    dev.name = "nvidia.com/gpu=GPU-1";
    struct evbuffer *out = evbuffer_new();
    size_t n = fg__grpc_message_pack(out, &dev.base);
    assert_int_equal(n, 5 + 2 + 20);
    const uint8_t *p = evbuffer_pullup(out, -1);
    const uint8_t want[] = { 0, 0, 0, 0, 22, 0x0a, 20 };
    assert_memory_equal(p, want, sizeof(want));
    assert_memory_equal(p + 7, "nvidia.com/gpu=GPU-1", 20);
    evbuffer_free(out);
}

static void percent_encoding_round_trips(void **state)
{
    (void)state;
    const char *text = "grant for pod ml/llm-0 100% forged: \xc3\xbc\n\ttab";
    char *enc = fg__grpc_percent_encode(text);
    assert_string_equal(enc, "grant for pod ml/llm-0 100%25 forged: %C3%BC%0A%09tab");
    char *dec = fg__grpc_percent_decode((const uint8_t *)enc, strlen(enc));
    assert_string_equal(dec, text);
    free(enc);
    free(dec);
    /* malformed escapes stay as they are */
    const char *bad = "50% %zz %4";
    dec = fg__grpc_percent_decode((const uint8_t *)bad, strlen(bad));
    assert_string_equal(dec, bad);
    free(dec);
    /* cut at the limit, never inside a UTF-8 character */
    char long_text[FG__GRPC_MESSAGE_MAX + 8];
    memset(long_text, 'a', sizeof(long_text));
    long_text[FG__GRPC_MESSAGE_MAX - 1] = '\xc3';
    long_text[FG__GRPC_MESSAGE_MAX] = '\xbc';
    long_text[sizeof(long_text) - 1] = 0;
    enc = fg__grpc_percent_encode(long_text);
    assert_int_equal(strlen(enc), FG__GRPC_MESSAGE_MAX - 1);
    free(enc);
}

static void timeouts_parse_and_format(void **state)
{
    (void)state;
    uint64_t ns = 0;
    assert_true(fg__grpc_timeout_parse((const uint8_t *)"250m", 4, &ns));
    assert_int_equal(ns, 250000000ull);
    assert_true(fg__grpc_timeout_parse((const uint8_t *)"3S", 2, &ns));
    assert_int_equal(ns, 3000000000ull);
    assert_true(fg__grpc_timeout_parse((const uint8_t *)"99999999H", 9, &ns));
    assert_int_equal(ns, UINT64_MAX); /* 11,000 years of nanoseconds do not fit: saturated */
    assert_true(fg__grpc_timeout_parse((const uint8_t *)"5000H", 5, &ns));
    assert_int_equal(ns, 5000ull * 3600 * 1000000000ull);
    assert_true(fg__grpc_timeout_parse((const uint8_t *)"7n", 2, &ns));
    assert_int_equal(ns, 7);
    const char *bad[] = { "", "m", "10", "123456789S", "10x", "-5S", "1 S" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_false(fg__grpc_timeout_parse((const uint8_t *)bad[i], strlen(bad[i]), &ns));
    char out[FG__GRPC_TIMEOUT_MAX];
    fg__grpc_timeout_format(1500, out);
    assert_string_equal(out, "1500m");
    fg__grpc_timeout_format(100000000ull, out); /* nine digits of ms: seconds, rounded up */
    assert_string_equal(out, "100000S");
    fg__grpc_timeout_format(UINT64_MAX, out);
    assert_string_equal(out, "99999999H");
}

static void content_types(void **state)
{
    (void)state;
    const char *ok[] = { "application/grpc", "application/grpc+proto", "application/grpc;charset=utf-8" };
    const char *bad[] = { "application/json", "application/grpcx", "application/grp", "text/plain" };
    for (size_t i = 0; i < 3; i++)
        assert_true(fg__grpc_content_type_ok((const uint8_t *)ok[i], strlen(ok[i])));
    for (size_t i = 0; i < 4; i++)
        assert_false(fg__grpc_content_type_ok((const uint8_t *)bad[i], strlen(bad[i])));
}

static void status_names_and_http_mapping(void **state)
{
    (void)state;
    assert_string_equal(fg_grpc_status_name(FG_GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
    assert_int_equal(FG_GRPC_UNIMPLEMENTED, 12);
    assert_int_equal(FG_GRPC_RESOURCE_EXHAUSTED, 8);
    assert_string_equal(fg_grpc_status_name(99), "UNKNOWN");
    assert_int_equal(fg_grpc_status_from_http(404), FG_GRPC_UNIMPLEMENTED);
    assert_int_equal(fg_grpc_status_from_http(503), FG_GRPC_UNAVAILABLE);
    assert_int_equal(fg_grpc_status_from_http(415), FG_GRPC_UNKNOWN);
}

/* Bytes written by hand from the published field numbers, decoded by the generated code. */
static void generated_messages_use_the_published_field_numbers(void **state)
{
    (void)state;
    /* RegisterRequest{version=1 "v1beta1", endpoint=2 "a.sock", resource_name=3 "x/y",
     * options=4 {get_preferred_allocation_available=2 true}} */
    const uint8_t reg[] = { 0x0a, 7, 'v', '1', 'b', 'e', 't', 'a', '1', 0x12, 6, 'a', '.', 's', 'o', 'c', 'k',
                            0x1a, 3, 'x', '/', 'y', 0x22, 2, 0x10, 1 };
    V1beta1__RegisterRequest *r = v1beta1__register_request__unpack(NULL, sizeof(reg), reg);
    assert_non_null(r);
    assert_string_equal(r->version, "v1beta1");
    assert_string_equal(r->endpoint, "a.sock");
    assert_string_equal(r->resource_name, "x/y");
    assert_non_null(r->options);
    assert_true(r->options->get_preferred_allocation_available);
    assert_false(r->options->pre_start_required);
    v1beta1__register_request__free_unpacked(r, NULL);
    /* ContainerAllocateResponse{envs=1 {"K":"V"}, cdi_devices=5 {name=1 "n"}} */
    const uint8_t car[] = { 0x0a, 6, 0x0a, 1, 'K', 0x12, 1, 'V', 0x2a, 3, 0x0a, 1, 'n' };
    V1beta1__ContainerAllocateResponse *c = v1beta1__container_allocate_response__unpack(NULL, sizeof(car), car);
    assert_non_null(c);
    assert_int_equal(c->n_envs, 1);
    assert_string_equal(c->envs[0]->key, "K");
    assert_string_equal(c->envs[0]->value, "V");
    assert_int_equal(c->n_cdi_devices, 1);
    assert_string_equal(c->cdi_devices[0]->name, "n");
    v1beta1__container_allocate_response__free_unpacked(c, NULL);
    /* ListPodResourcesResponse{pod_resources=1 {name=1 "p", namespace=2 "ns", containers=3 {name=1 "c",
     * devices=2 {resource_name=1 "r", device_ids=2 "d"}, memory=4 {size=2 1}}}}: memory is not
     * declared here, and is skipped */
    const uint8_t lpr[] = { 0x0a, 24, 0x0a, 1, 'p', 0x12, 2, 'n', 's', 0x1a, 15, 0x0a, 1, 'c', 0x12, 6,
                                         0x0a, 1, 'r', 0x12, 1, 'd', 0x22, 2, 0x10, 0x01 };
    V1__ListPodResourcesResponse *l =
        v1__list_pod_resources_response__unpack(NULL, sizeof(lpr), lpr);
    assert_non_null(l);
    assert_int_equal(l->n_pod_resources, 1);
    assert_string_equal(l->pod_resources[0]->name, "p");
    assert_string_equal(l->pod_resources[0]->namespace_, "ns");
    assert_int_equal(l->pod_resources[0]->n_containers, 1);
    V1__ContainerResources *cr = l->pod_resources[0]->containers[0];
    assert_string_equal(cr->name, "c");
    assert_int_equal(cr->n_devices, 1);
    assert_string_equal(cr->devices[0]->resource_name, "r");
    assert_int_equal(cr->devices[0]->n_device_ids, 1);
    assert_string_equal(cr->devices[0]->device_ids[0], "d");
    v1__list_pod_resources_response__free_unpacked(l, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_reassembles_messages_cut_anywhere),
        cmocka_unit_test(reader_refuses_oversized_before_the_body),
        cmocka_unit_test(reader_refuses_compressed_and_reserved_flags),
        cmocka_unit_test(reader_reports_a_stream_cut_mid_message),
        cmocka_unit_test(reader_stops_when_the_callback_says_so),
        cmocka_unit_test(pack_writes_prefix_and_protobuf),
        cmocka_unit_test(percent_encoding_round_trips),
        cmocka_unit_test(timeouts_parse_and_format),
        cmocka_unit_test(content_types),
        cmocka_unit_test(status_names_and_http_mapping),
        cmocka_unit_test(generated_messages_use_the_published_field_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
