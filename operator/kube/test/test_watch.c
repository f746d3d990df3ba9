/* Tests for the watch-stream decoder: arbitrary chunking, bad lines, limits, truncation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "operator/kube/watch.h"

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\xc3\xa9-1\",\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p2\",\"resourceVersion\":\"11\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"p\xe2\x82\xac\",\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n";

struct collect {
    struct fg_buf log;
    int stop_after;   /* 0 = never */
    int seen;
};

static bool on_event(void *ud, enum fg_watch_type type, json_object *obj)
{
    struct collect *c = ud;
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    const char *rv = fg_json_get_str(obj, "metadata", "resourceVersion", NULL);
    const char *reason = fg_json_get_str(obj, "reason", NULL);
    assert_int_equal(fg_buf_printf(&c->log, "%s %s %s %s|", fg_watch_type_str(type), name ? name : "-",
                                   rv ? rv : "-", reason ? reason : "-"), FG_OK);
    c->seen++;
    return !(c->stop_after && c->seen >= c->stop_after);
}

static const char *expected =
    "ADDED p\xc3\xa9-1 10 -|MODIFIED p2 11 -|BOOKMARK - 12 -|DELETED p\xe2\x82\xac 13 -|ERROR - - Expired|";

static void split_at_every_byte(void **state)
{
    (void)state;
    size_t n = strlen(stream);
    for (size_t cut = 0; cut <= n; cut++) {
        struct collect c = { .log = FG_BUF_INIT };
        struct fg_watch_decoder d;
        char err[FG_ERRMSG_MAX];
        fg_watch_decoder_init(&d, 4096, on_event, &c);
        assert_int_equal(fg_watch_decoder_feed(&d, stream, cut, err), FG_OK);
        assert_int_equal(fg_watch_decoder_feed(&d, stream + cut, n - cut, err), FG_OK);
        assert_int_equal(fg_watch_decoder_finish(&d, err), FG_OK);
        assert_string_equal(fg_buf_str(&c.log), expected);
        assert_int_equal(d.events, 5);
        fg_watch_decoder_cleanup(&d);
        fg_buf_cleanup(&c.log);
    }
    /* One byte at a time. */
    struct collect c = { .log = FG_BUF_INIT };
    struct fg_watch_decoder d;
    fg_watch_decoder_init(&d, 4096, on_event, &c);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(fg_watch_decoder_feed(&d, stream + i, 1, NULL), FG_OK);
    assert_int_equal(fg_watch_decoder_finish(&d, NULL), FG_OK);
    assert_string_equal(fg_buf_str(&c.log), expected);
    fg_watch_decoder_cleanup(&d);
    fg_buf_cleanup(&c.log);
}

/* Feeds one good event then `bad`; expects `want` with `frag` in the message and exactly one event. */
#define GOOD "{\"type\":\"ADDED\",\"object\":{}}\n"

static void expect_bad_line(const char *bad, size_t max_line, enum fg_err want, const char *frag)
{
    struct collect c = { .log = FG_BUF_INIT };
    struct fg_watch_decoder d;
    char err[FG_ERRMSG_MAX] = "";
    fg_watch_decoder_init(&d, max_line, on_event, &c);
    assert_int_equal(fg_watch_decoder_feed(&d, GOOD, strlen(GOOD), err), FG_OK);
    assert_int_equal(fg_watch_decoder_feed(&d, bad, strlen(bad), err), want);
    if (!strstr(err, frag))
        fail_msg("message \"%s\" lacks \"%s\"", err, frag);
    assert_int_equal(c.seen, 1);
    /* The decoder stays stopped with the same error class; nothing more is delivered. */
    assert_int_equal(fg_watch_decoder_feed(&d, GOOD, strlen(GOOD), err), want);
    assert_int_equal(fg_watch_decoder_finish(&d, err), want);
    assert_int_equal(c.seen, 1);
    fg_watch_decoder_cleanup(&d);
    fg_buf_cleanup(&c.log);
}

static void bad_lines_stop_the_decoder(void **state)
{
    (void)state;
    expect_bad_line("<html>gateway timeout</html>\n", 4096, FG_E_PARSE, "watch event 2");
    expect_bad_line("{\"type\":\"ADDED\",\"object\":{}} trailing\n", 4096, FG_E_PARSE, "at byte 29");
    expect_bad_line("{\"object\":{}}\n", 4096, FG_E_PARSE, "no \"type\"");
    expect_bad_line("{\"type\":\"RENAMED\",\"object\":{}}\n", 4096, FG_E_PARSE, "unknown type \"RENAMED\"");
    expect_bad_line("{\"type\":\"ADDED\"}\n", 4096, FG_E_PARSE, "no \"object\"");
    expect_bad_line("{\"type\":\"ADDED\",\"object\":\"x\"}\n", 4096, FG_E_PARSE, "no \"object\"");
    expect_bad_line("[1,2]\n", 4096, FG_E_PARSE, "no \"type\"");
}

static void oversized_line_is_too_big(void **state)
{
    (void)state;
    char line[200];
    memset(line, ' ', sizeof line);
    memcpy(line, "{\"type\":\"ADDED\",\"object\":{\"a\":\"", 31);
    line[sizeof line - 1] = '\0';
    /* No newline yet: the limit applies to the partial line already. */
    expect_bad_line(line, 64, FG_E_TOO_BIG, "64-byte line limit");
    /* Exactly at the limit is accepted. */
    struct collect c = { .log = FG_BUF_INIT };
    struct fg_watch_decoder d;
    const char *ev = "{\"type\":\"ADDED\",\"object\":{}}";
    fg_watch_decoder_init(&d, strlen(ev), on_event, &c);
    assert_int_equal(fg_watch_decoder_feed(&d, ev, strlen(ev), NULL), FG_OK);
    assert_int_equal(fg_watch_decoder_feed(&d, "\n", 1, NULL), FG_OK);
    assert_int_equal(c.seen, 1);
    fg_watch_decoder_cleanup(&d);
    fg_buf_cleanup(&c.log);
}

static void truncated_stream(void **state)
{
    (void)state;
    struct collect c = { .log = FG_BUF_INIT };
    struct fg_watch_decoder d;
    char err[FG_ERRMSG_MAX];
    fg_watch_decoder_init(&d, 0, on_event, &c);
    assert_int_equal(fg_watch_decoder_feed(&d, stream, 70, err), FG_OK);
    assert_int_equal(fg_watch_decoder_finish(&d, err), FG_E_CLOSED);
    assert_non_null(strstr(err, "truncated"));
    assert_int_equal(c.seen, 0);
    fg_watch_decoder_cleanup(&d);
    fg_buf_cleanup(&c.log);
}

static void consumer_can_stop(void **state)
{
    (void)state;
    struct collect c = { .log = FG_BUF_INIT, .stop_after = 2 };
    struct fg_watch_decoder d;
    fg_watch_decoder_init(&d, 0, on_event, &c);
    assert_int_equal(fg_watch_decoder_feed(&d, stream, strlen(stream), NULL), FG_E_CLOSED);
    assert_int_equal(c.seen, 2);
    fg_watch_decoder_cleanup(&d);
    fg_buf_cleanup(&c.log);
    assert_string_equal(fg_watch_type_str(FG_WATCH_BOOKMARK), "BOOKMARK");
    assert_string_equal(fg_watch_type_str((enum fg_watch_type)99), "UNKNOWN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_at_every_byte),
        cmocka_unit_test(bad_lines_stop_the_decoder),
        cmocka_unit_test(oversized_line_is_too_big),
        cmocka_unit_test(truncated_stream),
        cmocka_unit_test(consumer_can_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
