/*
 * Tests of exec credential plugins at work: running one (arguments, environment, stdin, descriptors,
 * signals; every way it can fail, time out or be cancelled), the credential cache (one run for many
 * callers, expiry, invalidation by generation, failed runs, the loop's non-waiting path, freeing
 * while a plugin runs), and a plugin-issued client certificate through the client and the loop
 * against a server that demands one. The plugins are shell scripts written into a temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "fake_server.h"
#include "operator/kube/client.h"
#include "operator/kube/exec_internal.h"
#include "operator/kube/loop.h"
#include "test_tls.h"

#define V1 "client.authentication.k8s.io/v1"

static char root[64];
static char *dir;   /* this test's own directory under root */

static int make_root(void **state)
{
    (void)state;
    strcpy(root, "/tmp/fg_kube_exec_XXXXXX");
    signal(SIGPIPE, SIG_IGN);   /* as the client sets it: plugins must not inherit it */
    fg_log_set_level(FG_LOG_ERROR);
    return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state)
{
    (void)state;
    int rc = fg_remove_tree(root);
    free(dir);
    return rc;
}

static void fresh_dir(const char *name)
{
    free(dir);
    dir = fg_asprintf("%s/%s", root, name);
    assert_int_equal(mkdir(dir, 0700), 0);
}

static char *write_file(const char *name, const char *text, mode_t mode)
{
    char *path = fg_asprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
    return path;
}

static char *read_text(const char *name)
{
    char *path = fg_asprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f)
        return fg_strdup("");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return fg_strdup(buf);
}

static int count_runs(void)
{
    char *runs = read_text("runs");
    int n = 0;
    for (char *p = runs; *p; p++)
        n += *p == '\n';
    free(runs);
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A plugin at `path` (owned by the returned struct). */
static struct fg_kube_exec *plugin(char *path)
{
    struct fg_kube_exec *x = fg_calloc(1, sizeof *x);
    x->command = path;
    x->api_version = fg_strdup(V1);
    return x;
}

/* ---- running a plugin ---- */

static void run_gets_args_env_info_and_nothing_else(void **state)
{
    (void)state;
    fresh_dir("env");
    setenv("FG_TEST_FOO", "parent", 1);
    setenv("FG_TEST_KEEP", "kept", 1);
    int fd = open("/dev/null", O_RDONLY);   /* not close-on-exec: the plugin must not see it anyway */
    assert_int_equal(dup2(fd, 50), 50);
    close(fd);
    struct fg_kube_exec *x = plugin(write_file("p.sh",
        "#!/bin/sh\nprintf '%s|' \"$@\"; echo\necho \"FOO=$FG_TEST_FOO KEEP=$FG_TEST_KEEP\"\n"
        "echo \"INFO=$KUBERNETES_EXEC_INFO\"\necho \"STDIN=$(cat)\"\n[ -e /proc/$$/fd/50 ] && echo LEAKED\n"
        "grep SigIgn /proc/$$/status\n", 0755));
    x->nargs = 3;
    x->args = fg_calloc(4, sizeof *x->args);
    x->args[0] = fg_strdup("a b");
    x->args[1] = fg_strdup("--flag=1");
    x->args[2] = fg_strdup("");
    x->nenv = 1;
    x->env = fg_calloc(2, sizeof *x->env);
    x->env[0] = (struct fg_kube_exec_env){ fg_strdup("FG_TEST_FOO"), fg_strdup("plugin") };
    struct fg_buf out = FG_BUF_INIT;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg__kube_exec_run(x, "{\"kind\":\"ExecCredential\"}", 5000, -1, &out, err), FG_OK);
    const char *text = fg_buf_str(&out);
    if (!strstr(text, "a b|--flag=1||\n") || !strstr(text, "FOO=plugin KEEP=kept\n") ||
        !strstr(text, "INFO={\"kind\":\"ExecCredential\"}\n") || !strstr(text, "STDIN=\n") || strstr(text, "LEAKED"))
        fail_msg("plugin saw:\n%s", text);
    const char *sigign = strstr(text, "SigIgn:");
    assert_non_null(sigign);
    unsigned long long ignored = strtoull(sigign + 7, NULL, 16);
    assert_int_equal(ignored & (1ull << (SIGPIPE - 1)), 0);   /* SIGPIPE back to default */
    fg_buf_cleanup(&out);
    close(50);
    unsetenv("FG_TEST_FOO");
    unsetenv("FG_TEST_KEEP");
    fg_kube_exec_free(x);
}

static void run_failures_say_why(void **state)
{
    (void)state;
    fresh_dir("fail");
    static const struct {
        const char *name, *body;   /* body NULL: the command is `name` as it stands */
        mode_t mode;
        enum fg_err want;
        const char *fragment;
    } cases[] = {
        { "fg-no-such-plugin", NULL, 0, FG_E_NOT_FOUND_LOCAL, "not found on PATH; Install it from example.com" },
        { "/nonexistent/plugin", NULL, 0, FG_E_NOT_FOUND_LOCAL, "no such file; Install it from example.com" },
        { "noexec.sh", "#!/bin/sh\necho hi\n", 0644, FG_E_IO, "cannot start it: Permission denied" },
        { "exit3.sh", "#!/bin/sh\necho 'line one' >&2\nprintf '\\tline two\\n\\n' >&2\nexit 3\n", 0755, FG_E_IO,
          "exited with status 3: line one line two" },
        { "silent.sh", "#!/bin/sh\nexit 1\n", 0755, FG_E_IO, "exited with status 1 and wrote nothing to stderr" },
        { "killed.sh", "#!/bin/sh\necho dying >&2\nkill -KILL $$\n", 0755, FG_E_IO, "was killed by signal 9" },
        { "big.sh", "#!/bin/sh\nhead -c 3000000 /dev/zero\n", 0755, FG_E_TOO_BIG, "wrote more than 1048576 bytes" },
        { "chatty.sh", "#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\0' x >&2\nexit 2\n", 0755, FG_E_IO,
          "exited with status 2: xxxxx" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *cmd = cases[i].body ? write_file(cases[i].name, cases[i].body, cases[i].mode) : fg_strdup(cases[i].name);
        struct fg_kube_exec *x = plugin(cmd);
        x->install_hint = fg_strdup("Install it from example.com");
        struct fg_buf out = FG_BUF_INIT;
        char err[FG_ERRMSG_MAX] = "";
        enum fg_err rc = fg__kube_exec_run(x, "{}", 5000, -1, &out, err);
        if (rc != cases[i].want || !strstr(err, cases[i].fragment))
            fail_msg("%s: %s \"%s\", want %s \"%s\"", cases[i].name, fg_err_name(rc), err, fg_err_name(cases[i].want),
                     cases[i].fragment);
        assert_true(strlen(err) < 400);   /* a long stderr is cut, not the message */
        fg_buf_cleanup(&out);
        fg_kube_exec_free(x);
    }
}

/* Gone or a zombie nobody reaped yet: either way no longer running. */
static bool process_gone(pid_t pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static void run_timeout_kills_the_whole_group(void **state)
{
    (void)state;
    fresh_dir("hang");
    struct fg_kube_exec *x = plugin(write_file("hang.sh",
        "#!/bin/sh\nsleep 30 &\necho $! > \"$(dirname \"$0\")/child\"\nwait\n", 0755));
    struct fg_buf out = FG_BUF_INIT;
    char err[FG_ERRMSG_MAX] = "";
    double t0 = now_s();
    assert_int_equal(fg__kube_exec_run(x, "{}", 300, -1, &out, err), FG_E_TIMEOUT);
    double took = now_s() - t0;
    assert_true(took >= 0.25 && took < 3);
    assert_non_null(strstr(err, "did not finish within 300 ms and was killed"));
    char *child = read_text("child");
    pid_t pid = (pid_t)atoi(child);
    free(child);
    assert_true(pid > 0);
    bool gone = false;
    for (int i = 0; i < 200 && !(gone = process_gone(pid)); i++)
        usleep(10000);
    assert_true(gone);   /* the plugin's child died with it */
    fg_kube_exec_free(x);

    /* one that closes its output and lingers is timed out too */
    x = plugin(write_file("linger.sh", "#!/bin/sh\nexec >&- 2>&-\nsleep 30\n", 0755));
    t0 = now_s();
    assert_int_equal(fg__kube_exec_run(x, "{}", 300, -1, &out, err), FG_E_TIMEOUT);
    assert_true(now_s() - t0 < 3);
    fg_buf_cleanup(&out);
    fg_kube_exec_free(x);
}

static void run_is_cancelled_through_its_descriptor(void **state)
{
    (void)state;
    fresh_dir("cancel");
    struct fg_kube_exec *x = plugin(write_file("hang.sh", "#!/bin/sh\nsleep 30\n", 0755));
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "x", 1), 1);
    struct fg_buf out = FG_BUF_INIT;
    char err[FG_ERRMSG_MAX] = "";
    double t0 = now_s();
    assert_int_equal(fg__kube_exec_run(x, "{}", 30000, p[0], &out, err), FG_E_SHUTDOWN);
    assert_true(now_s() - t0 < 3);
    close(p[0]);
    close(p[1]);
    fg_buf_cleanup(&out);
    fg_kube_exec_free(x);
}

static void log_sink(void *ud, const char *line, unsigned long len)
{
    struct fg_buf *b = ud;
    assert_int_equal(fg_buf_append(b, line, len), FG_OK);
}

static void stderr_of_a_good_run_is_logged_and_stdout_never(void **state)
{
    (void)state;
    fresh_dir("warn");
    struct fg_kube_exec *x = plugin(write_file("p.sh",
        "#!/bin/sh\necho 'flag --x is deprecated' >&2\n"
        "echo '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"s3cr3t\"}}'\n", 0755));
    struct fg_buf log = FG_BUF_INIT, out = FG_BUF_INIT;
    fg_log_set_level(FG_LOG_DEBUG);
    fg_log_set_sink(log_sink, &log);
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg__kube_exec_run(x, "{}", 5000, -1, &out, err), FG_OK);
    fg_log_set_sink(NULL, NULL);
    fg_log_set_level(FG_LOG_ERROR);
    assert_non_null(strstr(fg_buf_str(&log), "flag --x is deprecated"));
    assert_null(strstr(fg_buf_str(&log), "s3cr3t"));
    assert_non_null(strstr(fg_buf_str(&out), "s3cr3t"));
    fg_buf_cleanup(&log);
    fg_buf_cleanup(&out);
    fg_kube_exec_free(x);
}

/* ---- the credential cache ---- */

/* A plugin that counts its runs, prints tok-<run>, and obeys the files `mode` and `ttl` beside it. */
#define COUNTING_PLUGIN                                                                                  \
    "#!/bin/sh\nd=$(dirname \"$0\")\necho run >> \"$d/runs\"\nn=$(wc -l < \"$d/runs\")\n"               \
    "case \"$(cat \"$d/mode\" 2>/dev/null)\" in\n"                                                       \
    "fail) echo 'identity provider unreachable' >&2; exit 1;;\nslow) sleep 0.3;;\nhang) sleep 30;;\nesac\n" \
    "exp=''\nif [ -f \"$d/ttl\" ]; then\n"                                                               \
    "  exp=\",\\\"expirationTimestamp\\\":\\\"$(date -u -d \"@$(( $(date +%s) + $(cat \"$d/ttl\") ))\" "  \
    "+%Y-%m-%dT%H:%M:%SZ)\\\"\"\nfi\n"                                                                   \
    "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-%d\"%s}}\\n' " \
    "\"$n\" \"$exp\"\n"

struct cache_env {
    struct fg_kube_config cfg;
    struct fg__kube_creds *cr;
};

static void cache_up(struct cache_env *e, const char *name, unsigned timeout_ms)
{
    fresh_dir(name);
    e->cfg = (struct fg_kube_config){ .server = fg_strdup("https://127.0.0.1:1"),
                                      .exec = plugin(write_file("plugin.sh", COUNTING_PLUGIN, 0755)) };
    e->cr = fg__kube_creds_new(&e->cfg, timeout_ms);
}

static void cache_down(struct cache_env *e)
{
    fg__kube_creds_free(e->cr);
    fg_kube_config_cleanup(&e->cfg);
}

/* get with waiting; returns the token (caller frees) and the generation. */
static char *get_token(struct cache_env *e, uint64_t *gen)
{
    uint64_t ticket = 0, g = 0;
    struct fg__kube_cred cred;
    char err[FG_ERRMSG_MAX] = "";
    enum fg_err rc = fg__kube_creds_get(e->cr, true, &ticket, &cred, &g, err);
    if (rc)
        fail_msg("get: %s %s", fg_err_name(rc), err);
    assert_true(g > 0);
    if (gen)
        *gen = g;
    char *tok = fg_strdup(cred.token);
    fg__kube_cred_cleanup(&cred);
    return tok;
}

static void set_file(const char *name, const char *text)
{
    if (text)
        free(write_file(name, text, 0644));
    else {
        char *path = fg_asprintf("%s/%s", dir, name);
        unlink(path);
        free(path);
    }
}

static void *get_in_thread(void *ud)
{
    return get_token(ud, NULL);
}

static void cache_runs_the_plugin_once_for_many_callers(void **state)
{
    (void)state;
    struct cache_env e;
    cache_up(&e, "burst", 5000);
    set_file("mode", "slow");
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, get_in_thread, &e);
    for (int i = 0; i < 8; i++) {
        char *tok;
        pthread_join(t[i], (void **)&tok);
        assert_string_equal(tok, "tok-1");
        free(tok);
    }
    assert_int_equal(count_runs(), 1);
    char *tok = get_token(&e, NULL);   /* cached: no run */
    assert_string_equal(tok, "tok-1");
    free(tok);
    assert_int_equal(count_runs(), 1);
    cache_down(&e);
}

static void cache_expiry_and_invalidation(void **state)
{
    (void)state;
    struct cache_env e;
    cache_up(&e, "expiry", 5000);
    uint64_t g1, g2, g3;
    /* already expired when issued: used once (as client-go does), then the plugin runs again */
    set_file("ttl", "-10");
    char *t1 = get_token(&e, &g1), *t2 = get_token(&e, &g2);
    assert_string_equal(t1, "tok-1");
    assert_string_equal(t2, "tok-2");
    assert_true(g2 > g1);
    free(t1), free(t2);
    /* valid for an hour: cached */
    set_file("ttl", "3600");
    t1 = get_token(&e, &g1);
    t2 = get_token(&e, &g2);
    assert_string_equal(t1, "tok-3");
    assert_string_equal(t2, "tok-3");
    assert_true(g1 == g2);
    free(t1), free(t2);
    /* a 401 to an older generation changes nothing; to the current one, it forces a run */
    fg__kube_creds_invalidate(e.cr, g1 - 1);
    t1 = get_token(&e, &g2);
    assert_string_equal(t1, "tok-3");
    free(t1);
    fg__kube_creds_invalidate(e.cr, g1);
    t1 = get_token(&e, &g3);
    assert_string_equal(t1, "tok-4");
    assert_true(g3 > g1);
    fg__kube_creds_invalidate(e.cr, g1);   /* a late 401 to the old one keeps the new */
    t2 = get_token(&e, NULL);
    assert_string_equal(t2, "tok-4");
    free(t1), free(t2);
    assert_int_equal(count_runs(), 4);
    cache_down(&e);
}

static void cache_failed_run_reaches_its_waiters_and_is_retried(void **state)
{
    (void)state;
    struct cache_env e;
    cache_up(&e, "failed", 5000);
    set_file("mode", "fail");
    uint64_t ticket = 0, gen = 0;
    struct fg__kube_cred cred;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg__kube_creds_get(e.cr, true, &ticket, &cred, &gen, err), FG_E_IO);
    char *want = fg_asprintf("exec plugin \"%s/plugin.sh\": exited with status 1: identity provider unreachable", dir);
    assert_string_equal(err, want);
    free(want);
    assert_null(cred.token);
    assert_int_equal(count_runs(), 1);
    assert_int_equal(fg__kube_creds_get(e.cr, true, &ticket, &cred, &gen, err), FG_E_IO);   /* runs again */
    assert_int_equal(count_runs(), 2);
    set_file("mode", NULL);
    char *tok = get_token(&e, NULL);
    assert_string_equal(tok, "tok-3");
    free(tok);
    cache_down(&e);
}

static void post_sem(void *ud)
{
    sem_post(ud);
}

static void wait_sem(sem_t *s)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    assert_int_equal(sem_timedwait(s, &deadline), 0);
}

static void cache_without_waiting_tells_listeners(void **state)
{
    (void)state;
    struct cache_env e;
    cache_up(&e, "nowait", 5000);
    sem_t ran;
    sem_init(&ran, 0, 0);
    fg__kube_creds_listen(e.cr, post_sem, &ran);
    uint64_t ticket = 0, gen = 0;
    struct fg__kube_cred cred;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg__kube_creds_get(e.cr, false, &ticket, &cred, &gen, err), FG_E_BUSY);
    assert_true(ticket > 0);
    wait_sem(&ran);
    assert_int_equal(fg__kube_creds_get(e.cr, false, &ticket, &cred, &gen, err), FG_OK);
    assert_string_equal(cred.token, "tok-1");
    assert_int_equal(ticket, 0);
    fg__kube_cred_cleanup(&cred);

    /* a failed run answers the ticket with its error instead of starting another */
    fg__kube_creds_invalidate(e.cr, gen);
    set_file("mode", "fail");
    assert_int_equal(fg__kube_creds_get(e.cr, false, &ticket, &cred, &gen, err), FG_E_BUSY);
    wait_sem(&ran);
    assert_int_equal(fg__kube_creds_get(e.cr, false, &ticket, &cred, &gen, err), FG_E_IO);
    assert_non_null(strstr(err, "identity provider unreachable"));
    assert_int_equal(count_runs(), 2);
    fg__kube_creds_unlisten(e.cr, &ran);
    cache_down(&e);
    sem_destroy(&ran);
}

static void freeing_the_cache_kills_a_running_plugin(void **state)
{
    (void)state;
    struct cache_env e;
    cache_up(&e, "free", 60000);
    set_file("mode", "hang");
    uint64_t ticket = 0, gen = 0;
    struct fg__kube_cred cred;
    assert_int_equal(fg__kube_creds_get(e.cr, false, &ticket, &cred, &gen, NULL), FG_E_BUSY);
    for (int i = 0; i < 300 && count_runs() == 0; i++)
        usleep(10000);
    double t0 = now_s();
    cache_down(&e);
    assert_true(now_s() - t0 < 3);
}

/* ---- through the client and the loop ---- */

static void reply_ok(struct fake_server *s, struct evhttp_request *req, const char *uri, void *ud)
{
    (void)s;
    (void)uri;
    (void)ud;
    fake_reply(req, 200, "{\"kind\":\"Status\",\"status\":\"Success\"}", NULL, NULL);
}

struct loop_get {
    struct fg_kube_loop *loop;
    sem_t done;
    enum fg_err err;
};

static void loop_get_done(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct loop_get *g = ud;
    g->err = err;
    if (err)
        fprintf(stderr, "loop GET: %s\n", st && st->message ? st->message : "");
    sem_post(&g->done);
}

static void loop_get_start(void *ud)
{
    struct loop_get *g = ud;
    fg_kube_loop_request(g->loop, "GET", "/ok", NULL, NULL, 0, loop_get_done, g);
}

static enum fg_err get_through_loop(struct fg_kube_client *c)
{
    struct loop_get g = { .err = FG_E_INTERNAL };
    char err[FG_ERRMSG_MAX];
    sem_init(&g.done, 0, 0);
    assert_int_equal(fg_kube_loop_new(c, &g.loop, err), FG_OK);
    assert_int_equal(fg_kube_loop_start(g.loop), FG_OK);
    fg_kube_loop_call(g.loop, loop_get_start, &g);
    wait_sem(&g.done);
    fg_kube_loop_free(g.loop);
    sem_destroy(&g.done);
    return g.err;
}

static void plugin_client_certificate_reaches_the_handshake(void **state)
{
    (void)state;
    fresh_dir("mtls");
    struct test_tls tls;
    test_tls_init(&tls);
    free(write_file("cert.pem", tls.cert_pem, 0600));
    free(write_file("key.pem", tls.key_pem, 0600));
    struct fg_kube_exec *x = plugin(write_file("p.sh",
        "#!/bin/sh\nd=$(dirname \"$0\")\necho run >> \"$d/runs\"\n"
        "pem() { awk '{ printf \"%s\\\\n\", $0 }' \"$1\"; }\n"
        "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"
        "{\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}}' \"$(pem \"$d/cert.pem\")\" \"$(pem \"$d/key.pem\")\"\n",
        0755));
    struct fake_server *mtls = fake_server_start(reply_ok, NULL, tls.mtls_ctx);
    struct fg_kube_config cfg = { .server = (char *)fake_server_url(mtls), .ca_pem = tls.cert_pem, .exec = x };
    struct fg_kube_client *c;
    struct fg_kube_status st;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_OK);
    if (fg_kube_get(c, "/ok", NULL, &st) != FG_OK)
        fail_msg("GET with the plugin's certificate: %s", st.message);
    assert_int_equal(get_through_loop(c), FG_OK);
    assert_int_equal(count_runs(), 1);
    fg_kube_client_free(c);
    fake_server_stop(mtls);

    /* a static token in the same user wins, and the plugin never runs */
    struct fake_server *plain = fake_server_start(reply_ok, NULL, NULL);
    struct fg_kube_config with_token = { .server = (char *)fake_server_url(plain), .token = "static", .exec = x };
    assert_int_equal(fg_kube_client_new(&with_token, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    struct fake_request r;
    fake_server_request(plain, 0, &r);
    assert_string_equal(r.authorization, "Bearer static");
    fake_request_cleanup(&r);
    assert_int_equal(count_runs(), 1);
    fg_kube_client_free(c);
    fake_server_stop(plain);

    /* a hand-built config without an apiVersion is refused by the client */
    free(x->api_version);
    x->api_version = NULL;
    cfg.server = "https://127.0.0.1:1";
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_E_INVAL);
    assert_non_null(strstr(err, "apiVersion"));
    fg_kube_exec_free(x);
    test_tls_cleanup(&tls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_gets_args_env_info_and_nothing_else),
        cmocka_unit_test(run_failures_say_why),
        cmocka_unit_test(run_timeout_kills_the_whole_group),
        cmocka_unit_test(run_is_cancelled_through_its_descriptor),
        cmocka_unit_test(stderr_of_a_good_run_is_logged_and_stdout_never),
        cmocka_unit_test(cache_runs_the_plugin_once_for_many_callers),
        cmocka_unit_test(cache_expiry_and_invalidation),
        cmocka_unit_test(cache_failed_run_reaches_its_waiters_and_is_retried),
        cmocka_unit_test(cache_without_waiting_tells_listeners),
        cmocka_unit_test(freeing_the_cache_kills_a_running_plugin),
        cmocka_unit_test(plugin_client_certificate_reaches_the_handshake),
    };
    return cmocka_run_group_tests(tests, make_root, remove_root);
}
