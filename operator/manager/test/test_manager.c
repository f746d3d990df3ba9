/*
 * The manager against the test API server: listen addresses parsed and refused as they should be;
 * runnables started in registration order, leader-only ones once the informers have listed, and all
 * stopped in reverse; a runnable that cannot start undoes what started before it and says why; a
 * leader-only runnable that cannot start ends fg_manager_run with status 1; readiness and liveness
 * checks answered as kube-apiserver answers them, and nothing but GET and HEAD (the node agent and
 * the operator serve read-only endpoints); nothing registered or started twice; periodic
 * work runs at once, then on its period, on a thread of its own, and stops mid-wait.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "base/buf.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "operator/manager/manager.h"
#include "operator/manager/periodic.h"

static struct fg_harness h;


static int setup(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    return 0;
}

static struct fg_manager *new_manager(const char *listen)
{
    struct fg_manager_opts o = FG_MANAGER_OPTS_DEFAULT;
    o.component = "test";
    o.kubeconfig = h.kubeconfig;
    o.listen = listen;
    o.leader.enabled = false;
    struct fg_manager *m = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_manager_new(&o, &m, msg) != FG_OK)
        fail_msg("manager: %s", msg);
    return m;
}

static void test_listen_addresses(void **state)
{
    (void)state;
    char host[64], msg[FG_ERRMSG_MAX];
    unsigned port = 1;
    assert_int_equal(fg_manager_parse_listen(":0", host, sizeof host, &port, msg), FG_OK);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(port, 0);
    assert_int_equal(fg_manager_parse_listen("[::1]:8080", host, sizeof host, &port, msg), FG_OK);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 8080);
    assert_int_equal(fg_manager_parse_listen("127.0.0.1:65535", host, sizeof host, &port, msg), FG_OK);

    /* ":PORT" serves IPv4 and, where the machine has it, IPv6 on one socket. */
    struct fg_manager *every = new_manager(":0");
    assert_int_equal(fg_manager_start(every, msg), FG_OK);
    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(fg_harness_http(NULL, fg_manager_http_port(every), "GET", "/healthz", &body), 200);
    assert_string_equal(fg_buf_str(&body), "ok\n");
    fg_buf_cleanup(&body);
    fg_manager_free(every);
    const char *bad[] = { "nonsense", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:12x", "[::1:5", "::1:80",
                          ":-1", ":+80", "", NULL };
    for (size_t i = 0; bad[i]; i++) {
        msg[0] = '\0';
        if (fg_manager_parse_listen(bad[i], host, sizeof host, &port, msg) != FG_E_INVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_non_null(strstr(msg, bad[i]));
    }
    assert_int_equal(fg_manager_parse_listen(NULL, host, sizeof host, &port, msg), FG_E_INVAL);

    /* An address that is not this machine's: start fails, saying where, and leaves nothing behind. */
    struct fg_manager *m = new_manager("203.0.113.7:0");
    assert_int_equal(fg_manager_start(m, msg), FG_E_IO);
    assert_non_null(strstr(msg, "203.0.113.7:0"));
    assert_non_null(strstr(msg, "no interface of this host has that address"));
    fg_manager_free(m);

    /* A port another process holds: the message says so. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    char held[64];
    snprintf(held, sizeof held, "127.0.0.1:%u", ntohs(sa.sin_port));
    m = new_manager(held);
    assert_int_equal(fg_manager_start(m, msg), FG_E_IO);
    assert_non_null(strstr(msg, held));
    assert_non_null(strstr(msg, "Address already in use (another process holds that port"));
    fg_manager_free(m);
    close(fd);
}

/* A runnable that records its starts and stops in a shared log (the supervisor thread writes to it
 * too: under a lock). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

struct step {
    const char *name;
    struct fg_buf *log;
    enum fg_err fail;       /* what start returns */
};

static enum fg_err step_start(void *ud, char *errmsg)
{
    struct step *s = ud;
    if (s->fail)
        return fg_errmsg(errmsg, s->fail, "%s refuses", s->name);
    pthread_mutex_lock(&log_lock);
    enum fg_err err = fg_buf_printf(s->log, "+%s ", s->name);
    pthread_mutex_unlock(&log_lock);
    return err;
}

static void step_stop(void *ud)
{
    struct step *s = ud;
    pthread_mutex_lock(&log_lock);
    enum fg_err err = fg_buf_printf(s->log, "-%s ", s->name);
    pthread_mutex_unlock(&log_lock);
    assert_int_equal(err, FG_OK);
}

static void add_step(struct fg_manager *m, struct step *s, bool leader_only)
{
    struct fg_runnable r = { .name = s->name, .leader_only = leader_only, .start = step_start, .stop = step_stop,
                             .ud = s };
    assert_int_equal(fg_manager_add_runnable(m, &r), FG_OK);
}

static bool log_has(struct fg_buf *log, const char *text)
{
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&log_lock);
        bool found = strstr(fg_buf_str(log), text) != NULL;
        pthread_mutex_unlock(&log_lock);
        if (found)
            return true;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_runnables_in_order(void **state)
{
    (void)state;
    struct fg_buf log = FG_BUF_INIT;
    struct step a = { "a", &log, FG_OK }, b = { "b", &log, FG_OK }, l = { "leader", &log, FG_OK };
    struct fg_manager *m = new_manager(NULL);
    add_step(m, &l, true);
    add_step(m, &a, false);
    add_step(m, &b, false);
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    assert_true(log_has(&log, "+leader "));   /* no informers, no election: it leads at once */
    assert_string_equal(fg_buf_str(&log), "+a +b +leader ");
    assert_true(fg_manager_is_leader(m));
    assert_null(fg_manager_identity(m));
    assert_int_equal(fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "late", .start = step_start,
                                                                      .stop = step_stop, .ud = &a }),
                     FG_E_BUSY);
    fg_manager_stop(m);
    assert_string_equal(fg_buf_str(&log), "+a +b +leader -leader -b -a ");
    assert_int_equal(fg_manager_start(m, msg), FG_E_BUSY);   /* a manager starts once */
    fg_manager_free(m);

    /* b cannot start: a is stopped again and the error names b. */
    fg_buf_reset(&log);
    b.fail = FG_E_IO;
    m = new_manager(NULL);
    add_step(m, &a, false);
    add_step(m, &b, false);
    assert_int_equal(fg_manager_start(m, msg), FG_E_IO);
    assert_non_null(strstr(msg, "b: b refuses"));
    assert_string_equal(fg_buf_str(&log), "+a -a ");
    fg_manager_free(m);
    fg_buf_cleanup(&log);
}

static void test_failing_leader_work_ends_run(void **state)
{
    (void)state;
    struct fg_buf log = FG_BUF_INIT;
    struct step a = { "a", &log, FG_OK }, l = { "leader", &log, FG_E_INTERNAL };
    struct fg_manager *m = new_manager(NULL);
    add_step(m, &a, false);
    add_step(m, &l, true);
    assert_int_equal(fg_manager_run(m), 1);
    assert_string_equal(fg_buf_str(&log), "+a -a ");
    fg_manager_free(m);
    fg_buf_cleanup(&log);
}

static enum fg_err failing_check(void *ud, char *errmsg)
{
    return atomic_load((atomic_bool *)ud) ? FG_OK : fg_errmsg(errmsg, FG_E_BUSY, "not warm yet");
}

static enum fg_err passing_check(void *ud, char *errmsg)
{
    (void)ud;
    (void)errmsg;
    return FG_OK;
}

static void test_checks(void **state)
{
    (void)state;
    atomic_bool warm = false;
    struct fg_manager *m = new_manager("127.0.0.1:0");
    assert_int_equal(fg_manager_add_readyz(m, "warm", failing_check, &warm), FG_OK);
    assert_int_equal(fg_manager_add_healthz(m, "alive", passing_check, NULL), FG_OK);
    assert_int_equal(fg_manager_add_readyz(m, "", passing_check, NULL), FG_E_INVAL);
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    unsigned port = fg_manager_http_port(m);
    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/readyz", &body), 503);
    assert_string_equal(fg_buf_str(&body), "[+]informers ok\n[-]warm failed: not warm yet\nreadyz check failed\n");
    atomic_store(&warm, true);
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/readyz", &body), 200);
    assert_string_equal(fg_buf_str(&body), "ok\n");
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/healthz?verbose", &body), 200);
    assert_string_equal(fg_buf_str(&body), "[+]alive ok\nhealthz check passed\n");
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/metrics", &body), 200);
    assert_non_null(strstr(fg_buf_str(&body), "\nprocess_open_fds "));
    /* read-only: every other method is refused on every path (libevent: 501 Not Implemented) */
    static const char *const writes[] = { "POST", "PUT", "PATCH", "DELETE" };
    for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++) {
        assert_int_equal(fg_harness_http(NULL, port, writes[i], "/metrics", &body), 501);
        assert_int_equal(fg_harness_http(NULL, port, writes[i], "/healthz", &body), 501);
    }
    assert_int_equal(fg_manager_add_healthz(m, "late", passing_check, NULL), FG_E_BUSY);
    fg_buf_cleanup(&body);
    fg_manager_free(m);
}

struct ticks {
    atomic_uint n;
    atomic_bool on_owner_thread;
    pthread_t owner;
};

static void count_tick(void *ud)
{
    struct ticks *t = ud;
    if (pthread_equal(pthread_self(), t->owner))
        atomic_store(&t->on_owner_thread, true);
    atomic_fetch_add(&t->n, 1);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_periodic(void **state)
{
    (void)state;
    struct ticks fast = { .owner = pthread_self() }, slow = { .owner = pthread_self() };
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m = new_manager(NULL);
    assert_int_equal(fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "zero", .run = count_tick, .ud = &fast },
                                             msg),
                     FG_E_INVAL);
    assert_non_null(strstr(msg, "a period above 0"));
    assert_int_equal(fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "none", .period_ns = 1000 }, msg),
                     FG_E_INVAL);
    assert_int_equal(fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "fast", .period_ns = 20 * 1000 * 1000,
                                                                         .run = count_tick, .ud = &fast },
                                             msg),
                     FG_OK);
    assert_int_equal(fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "hourly", .leader_only = true,
                                                                         .period_ns = 3600ull * 1000 * 1000 * 1000,
                                                                         .run = count_tick, .ud = &slow },
                                             msg),
                     FG_OK);
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    uint64_t deadline = now_ms() + 5000;
    while ((atomic_load(&fast.n) < 3 || atomic_load(&slow.n) < 1) && now_ms() < deadline)
        nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
    assert_true(atomic_load(&fast.n) >= 3);
    assert_int_equal(atomic_load(&slow.n), 1);   /* at once, then not for an hour */
    assert_int_equal(fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "late", .period_ns = 1,
                                                                         .run = count_tick, .ud = &fast },
                                             msg),
                     FG_E_BUSY);
    uint64_t stop_started = now_ms();
    fg_manager_stop(m);
    assert_true(now_ms() - stop_started < 2000);   /* the hourly one woke from its wait */
    unsigned after_stop = atomic_load(&fast.n);
    nanosleep(&(struct timespec){ 0, 60 * 1000 * 1000 }, NULL);
    assert_int_equal(atomic_load(&fast.n), after_stop);
    assert_false(atomic_load(&fast.on_owner_thread));
    assert_false(atomic_load(&slow.on_owner_thread));
    fg_manager_free(m);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listen_addresses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runnables_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_leader_work_ends_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_periodic, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
