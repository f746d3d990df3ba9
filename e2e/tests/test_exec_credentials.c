/*
 * Exec credentials end to end: the test API server serving HTTPS and demanding a bearer token, and a
 * kubeconfig whose user is an exec plugin — a shell script this test writes, which reads the token
 * to print from a file beside it and appends a line to `runs` each time it runs. The kubeconfig
 * loads through fg_kube_config_load_file as every fracgpu command loads it; the client and the loop
 * are built from it as the roles build them.
 *
 * Covered: the plugin's token is what the server sees (a wrong one ends in 401 after one re-run);
 * a credential is cached, re-fetched after its expirationTimestamp and after a 401 (the request then
 * succeeds); the plugin gets KUBERNETES_EXEC_INFO with the cluster, its args and env, and is found
 * relative to the kubeconfig or on PATH; a failing, a babbling, a mis-versioned, a missing and a
 * hanging plugin each give an error naming the plugin and the cause, without hanging the process
 * (the hanging one is killed at its deadline); lists and watches on the loop fetch the credential
 * without blocking the loop thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/apiserver/apiserver.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/loop.h"

#define TOKEN "e2e-good-token"
#define V1 "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"

/* Prints the token in `token` (moving `next-token` over it), for the apiVersion it was asked for,
 * expiring after `ttl` seconds when that file exists; `mode` makes it fail, babble, answer in the
 * wrong version or hang. */
static const char plugin_script[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "echo \"$*\" >> \"$d/runs\"\n"
    "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$d/info\"\n"
    "echo \"$FG_PLUGIN_GREETING\" > \"$d/greeting\"\n"
    "api=$(sed -n 's/^{\"apiVersion\":\"\\([^\"]*\\)\".*/\\1/p' \"$d/info\")\n"
    "case \"$(cat \"$d/mode\" 2>/dev/null)\" in\n"
    "fail) echo 'could not refresh the session: token revoked' >&2; exit 1;;\n"
    "garbage) echo '{\"apiVersion\": \"'$api'\", \"kind\": \"ExecCred'; exit 0;;\n"
    "wrongapi) api=" V1BETA1 ";;\n"
    "slow) sleep 1;;\n"
    "hang) sleep 30 & wait; exit 0;;\n"
    "esac\n"
    "tok=$(cat \"$d/token\")\n"
    "[ -f \"$d/next-token\" ] && mv \"$d/next-token\" \"$d/token\"\n"
    "exp=''\n"
    "[ -f \"$d/ttl\" ] && exp=\",\\\"expirationTimestamp\\\":\\\"$(date -u -d \"@$(( $(date +%s) + $(cat \"$d/ttl\") ))\" "
    "+%Y-%m-%dT%H:%M:%SZ)\\\"\"\n"
    "printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"%s}}\\n' \"$api\" \"$tok\" \"$exp\"\n";

static struct fg_apiserver *srv;
static char dir[64];
static char *kubeconfig;           /* exec: ./plugin.sh, v1, provideClusterInfo, args and env */
static char *kubeconfig_path;      /* exec: fg-e2e-plugin on PATH, v1beta1 */
static char *kubeconfig_missing;   /* exec: a command that exists nowhere, with an install hint */
static char *plugin_path;          /* the plugin as the first kubeconfig resolves it */

static char *in_dir(const char *name)
{
    return fg_asprintf("%s/%s", dir, name);
}

static void put_file(const char *name, const char *text, mode_t mode)
{
    char *path = in_dir(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
    free(path);
}

static void drop_file(const char *name)
{
    char *path = in_dir(name);
    unlink(path);
    free(path);
}

static char *read_text(const char *name)
{
    char *path = in_dir(name);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f)
        return fg_strdup("");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return fg_strdup(buf);
}

static int runs(void)
{
    char *text = read_text("runs");
    int n = 0;
    for (char *p = text; *p; p++)
        n += *p == '\n';
    free(text);
    return n;
}

/* The plugin's state for a fresh start: token, mode, ttl and run count. */
static void plugin_state(const char *token, const char *next_token, const char *mode, const char *ttl)
{
    put_file("token", token, 0600);
    static const char *const names[] = { "next-token", "mode", "ttl" };
    const char *values[] = { next_token, mode, ttl };
    for (size_t i = 0; i < 3; i++) {
        if (values[i])
            put_file(names[i], values[i], 0600);
        else
            drop_file(names[i]);
    }
    drop_file("runs");
}

/* The server's kubeconfig with its user replaced by `exec` (JSON text). */
static char *write_exec_kubeconfig(const char *name, const char *exec)
{
    char *path = in_dir(name);
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_apiserver_write_kubeconfig(srv, path, msg), FG_OK);
    char *text = read_text(name);
    json_object *cfg = NULL, *x = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &cfg, NULL), FG_OK);
    assert_int_equal(fg_json_parse(exec, strlen(exec), 0, &x, NULL), FG_OK);
    json_object *user = json_object_new_object();
    json_object_object_add(user, "exec", x);
    json_object_object_add(json_object_array_get_idx(fg_json_get(cfg, "users", NULL), 0), "user", user);
    put_file(name, fg_json_text(cfg, NULL), 0600);
    json_object_put(cfg);
    free(text);
    return path;
}

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_ERROR);
    strcpy(dir, "/tmp/fg_e2e_exec_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    struct fg_apiserver_opts opts = { .tls = true, .token = TOKEN };
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_apiserver_new(&opts, &srv, msg) != FG_OK || fg_apiserver_start(srv, msg) != FG_OK) {
        fprintf(stderr, "apiserver: %s\n", msg);
        return -1;
    }
    put_file("plugin.sh", plugin_script, 0755);
    char *bin = in_dir("bin");
    mkdir(bin, 0700);
    char *wrapper = fg_asprintf("#!/bin/sh\nexec '%s/plugin.sh' \"$@\"\n", dir);
    put_file("bin/fg-e2e-plugin", wrapper, 0755);
    char *path = fg_asprintf("%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    free(path), free(wrapper), free(bin);
    kubeconfig = write_exec_kubeconfig("kubeconfig", "{\"apiVersion\":\"" V1 "\",\"command\":\"./plugin.sh\","
        "\"args\":[\"--cluster\",\"fracgpu-test\"],\"env\":[{\"name\":\"FG_PLUGIN_GREETING\",\"value\":\"hello\"}],"
        "\"interactiveMode\":\"IfAvailable\",\"provideClusterInfo\":true}");
    kubeconfig_path = write_exec_kubeconfig("kubeconfig-path", "{\"apiVersion\":\"" V1BETA1 "\","
        "\"command\":\"fg-e2e-plugin\",\"env\":null}");
    kubeconfig_missing = write_exec_kubeconfig("kubeconfig-missing", "{\"apiVersion\":\"" V1 "\","
        "\"command\":\"fg-e2e-no-such-plugin\",\"interactiveMode\":\"Never\","
        "\"installHint\":\"fg-e2e-no-such-plugin comes with the e2e kit\"}");
    plugin_path = fg_asprintf("%s/plugin.sh", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_apiserver_stop(srv);
    fg_apiserver_free(srv);
    int rc = fg_remove_tree(dir);
    free(kubeconfig), free(kubeconfig_path), free(kubeconfig_missing), free(plugin_path);
    return rc == 0 ? 0 : -1;
}

static struct fg_kube_client *client_from(const char *path, unsigned exec_timeout_ms)
{
    struct fg_kube_config cfg;
    struct fg_kube_client *c = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_kube_config_load_file(path, NULL, &cfg, msg) != FG_OK)
        fail_msg("kubeconfig: %s", msg);
    assert_non_null(cfg.exec);
    struct fg_kube_client_opts o = FG_KUBE_CLIENT_OPTS_DEFAULT;
    o.exec_timeout_ms = exec_timeout_ms;
    assert_int_equal(fg_kube_client_new(&cfg, &o, &c, msg), FG_OK);
    fg_kube_config_cleanup(&cfg);
    return c;
}

/* GET the namespaces; returns the error, with st's message copied into msg. */
static enum fg_err get_namespaces(struct fg_kube_client *c, char *msg)
{
    struct fg_kube_status st;
    enum fg_err err = fg_kube_get(c, "/api/v1/namespaces", NULL, &st);
    snprintf(msg, FG_ERRMSG_MAX, "%s", st.message ? st.message : "");
    if (err == FG_E_KUBE_UNAUTHORIZED)
        assert_int_equal(st.http_code, 401);
    fg_kube_status_cleanup(&st);
    return err;
}

static void expect_ok(struct fg_kube_client *c)
{
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = get_namespaces(c, msg);
    if (err)
        fail_msg("GET: %s: %s", fg_err_name(err), msg);
}

static void plugin_token_is_used_and_cached(void **state)
{
    (void)state;
    plugin_state(TOKEN, NULL, NULL, NULL);
    struct fg_kube_client *c = client_from(kubeconfig, 5000);
    assert_int_equal(runs(), 0);   /* nothing runs before the first request */
    expect_ok(c);
    expect_ok(c);
    assert_int_equal(runs(), 1);   /* no expiry: cached until refused */
    char *args = read_text("runs"), *greeting = read_text("greeting"), *info = read_text("info");
    assert_string_equal(args, "--cluster fracgpu-test\n");
    assert_string_equal(greeting, "hello\n");
    /* KUBERNETES_EXEC_INFO: no terminal, and the cluster, CA included */
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(info, strlen(info), 0, &o, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(o, "apiVersion", NULL), V1);
    assert_string_equal(fg_json_get_str(o, "kind", NULL), "ExecCredential");
    assert_false(json_object_get_boolean(fg_json_get(o, "spec", "interactive", NULL)));
    assert_string_equal(fg_json_get_str(o, "spec", "cluster", "server", NULL), fg_kube_client_config(c)->server);
    const char *ca64 = fg_json_get_str(o, "spec", "cluster", "certificate-authority-data", NULL);
    assert_non_null(ca64);
    unsigned char *ca = fg_base64_decode(ca64, NULL);
    assert_non_null(ca);
    assert_string_equal((char *)ca, fg_apiserver_ca_pem(srv));
    free(ca);
    json_object_put(o);
    free(args), free(greeting), free(info);
    fg_kube_client_free(c);
}

static void wrong_token_is_unauthorized(void **state)
{
    (void)state;
    plugin_state("not-the-token", NULL, NULL, NULL);
    struct fg_kube_client *c = client_from(kubeconfig, 5000);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(get_namespaces(c, msg), FG_E_KUBE_UNAUTHORIZED);
    assert_int_equal(runs(), 2);   /* the refused token cost one more run and one retry, no more */
    fg_kube_client_free(c);
}

static void refused_token_runs_the_plugin_again(void **state)
{
    (void)state;
    plugin_state("stale-token", TOKEN, NULL, NULL);
    struct fg_kube_client *c = client_from(kubeconfig, 5000);
    expect_ok(c);                  /* 401 with the stale token, a new run, the retry succeeds */
    assert_int_equal(runs(), 2);
    expect_ok(c);
    assert_int_equal(runs(), 2);
    fg_kube_client_free(c);
}

static void expired_token_runs_the_plugin_again(void **state)
{
    (void)state;
    plugin_state(TOKEN, NULL, NULL, "2");   /* expires 1-2 s after the run (whole seconds) */
    struct fg_kube_client *c = client_from(kubeconfig, 5000);
    expect_ok(c);
    expect_ok(c);
    assert_int_equal(runs(), 1);
    usleep(2100 * 1000);
    expect_ok(c);
    assert_int_equal(runs(), 2);
    fg_kube_client_free(c);
}

static void found_on_path_speaking_v1beta1(void **state)
{
    (void)state;
    plugin_state(TOKEN, NULL, NULL, NULL);
    struct fg_kube_client *c = client_from(kubeconfig_path, 5000);
    expect_ok(c);
    assert_int_equal(runs(), 1);
    char *info = read_text("info");
    assert_string_equal(info, "{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}");
    free(info);
    fg_kube_client_free(c);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The plugin in `mode` fails the request with `want` and a message naming it and `cause`. */
static void expect_plugin_failure(const char *config, const char *mode, enum fg_err want, const char *plugin,
                                  const char *cause)
{
    plugin_state(TOKEN, NULL, mode, NULL);
    struct fg_kube_client *c = client_from(config, 500);
    char msg[FG_ERRMSG_MAX] = "";
    double t0 = now_s();
    enum fg_err err = get_namespaces(c, msg);
    double took = now_s() - t0;
    char *named = fg_asprintf("exec plugin \"%s\": ", plugin);
    if (err != want || !strstr(msg, named) || !strstr(msg, cause) || strstr(msg, TOKEN))
        fail_msg("mode %s: %s \"%s\", want %s with \"%s\" and \"%s\"", mode ? mode : "-", fg_err_name(err), msg,
                 fg_err_name(want), named, cause);
    print_message("  %-8s -> %s: %s (%.2f s)\n", mode ? mode : "missing", fg_err_name(err), msg, took);
    assert_true(took < 5);
    free(named);
    fg_kube_client_free(c);
}

static void broken_plugins_name_themselves_and_the_cause(void **state)
{
    (void)state;
    expect_plugin_failure(kubeconfig, "fail", FG_E_IO, plugin_path,
                          "exited with status 1: could not refresh the session: token revoked");
    expect_plugin_failure(kubeconfig, "garbage", FG_E_PARSE, plugin_path, "output is not an ExecCredential");
    expect_plugin_failure(kubeconfig, "wrongapi", FG_E_PARSE, plugin_path,
                          "apiVersion \"" V1BETA1 "\", but the kubeconfig asks for " V1);
    expect_plugin_failure(kubeconfig_missing, NULL, FG_E_NOT_FOUND_LOCAL, "fg-e2e-no-such-plugin",
                          "not found on PATH; fg-e2e-no-such-plugin comes with the e2e kit");
    /* killed with its `sleep 30` (test_kube_exec_run checks the child is gone) */
    expect_plugin_failure(kubeconfig, "hang", FG_E_TIMEOUT, plugin_path, "did not finish within 500 ms and was killed");
}

/* ---- lists and watches on the loop ---- */

struct loop_ctx {
    struct fg_kube_loop *loop;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool list_done;
    enum fg_err list_err;
    char list_msg[FG_ERRMSG_MAX];
    char *list_rv;
    int items, added;
    char *watch_path;
    struct fg_kube_call *watch;
};

static void count_item(void *ud, json_object *item)
{
    (void)item;
    struct loop_ctx *l = ud;
    pthread_mutex_lock(&l->lock);
    l->items++;
    pthread_mutex_unlock(&l->lock);
}

static void on_list_done(void *ud, enum fg_err err, const char *rv, const struct fg_kube_status *st,
                         const char *errmsg)
{
    (void)st;
    struct loop_ctx *l = ud;
    pthread_mutex_lock(&l->lock);
    l->list_done = true;
    l->list_err = err;
    l->list_rv = rv ? fg_strdup(rv) : NULL;
    snprintf(l->list_msg, sizeof l->list_msg, "%s", errmsg ? errmsg : "");
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static void start_list(void *ud)
{
    struct loop_ctx *l = ud;
    struct fg_kube_list_opts opts = { .limit = 2 };   /* several pages, each sent with the credential */
    fg_kube_loop_list(l->loop, &fg_kube_configmaps, "default", &opts, count_item, on_list_done, l);
}

static bool on_watch_event(void *ud, enum fg_watch_type type, json_object *obj)
{
    (void)obj;
    struct loop_ctx *l = ud;
    pthread_mutex_lock(&l->lock);
    if (type == FG_WATCH_ADDED)
        l->added++;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    return true;
}

static void on_watch_end(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *errmsg)
{
    (void)err, (void)st, (void)errmsg;
    struct loop_ctx *l = ud;
    l->watch = NULL;
}

static void start_watch(void *ud)
{
    struct loop_ctx *l = ud;
    l->watch = fg_kube_loop_watch(l->loop, l->watch_path, 1u << 20, on_watch_event, on_watch_end, l);
}

static void cancel_watch(void *ud)
{
    struct loop_ctx *l = ud;
    fg_kube_call_cancel(l->watch);
    l->watch = NULL;
}

static void nothing(void *ud)
{
    (void)ud;
}

/* Waits (at most 10 s) until *flag, or until *count reaches want. */
static bool wait_for(struct loop_ctx *l, const bool *flag, const int *count, int want)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&l->lock);
    while (!(flag ? *flag : *count >= want))
        if (pthread_cond_timedwait(&l->cond, &l->lock, &deadline))
            break;
    bool ok = flag ? *flag : *count >= want;
    pthread_mutex_unlock(&l->lock);
    return ok;
}

static void loop_up(struct loop_ctx *l, struct fg_kube_client *c)
{
    char msg[FG_ERRMSG_MAX];
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    assert_int_equal(fg_kube_loop_new(c, &l->loop, msg), FG_OK);
    assert_int_equal(fg_kube_loop_start(l->loop), FG_OK);
}

static void loop_down(struct loop_ctx *l)
{
    fg_kube_loop_free(l->loop);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l->list_rv);
    free(l->watch_path);
}

static void create_configmap(struct fg_kube_client *c, const char *name)
{
    char *text = fg_asprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
                             "\"data\":{\"k\":\"v\"}}", name);
    json_object *cm = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &cm, NULL), FG_OK);
    char *coll = fg_kube_path(&fg_kube_configmaps, "default", NULL, NULL, NULL);
    assert_int_equal(fg_kube_create(c, coll, cm, NULL, NULL), FG_OK);
    free(coll);
    json_object_put(cm);
    free(text);
}

static void list_and_watch_on_the_loop(void **state)
{
    (void)state;
    /* objects to list, made with a client of its own */
    plugin_state(TOKEN, NULL, NULL, NULL);
    struct fg_kube_client *writer = client_from(kubeconfig, 5000);
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "cm-%d", i);
        create_configmap(writer, name);
    }

    /* The loop is the first to need the credential, and the plugin takes a second, then hands out
     * a token the server refuses: the list waits for two runs and one 401 while the loop thread stays
     * free for other work. */
    plugin_state("stale-token", TOKEN, "slow", NULL);
    struct fg_kube_client *c = client_from(kubeconfig, 5000);
    struct loop_ctx l;
    loop_up(&l, c);
    fg_kube_loop_call(l.loop, start_list, &l);
    double t0 = now_s();
    assert_int_equal(fg_kube_loop_call_wait(l.loop, nothing, NULL, 600), FG_OK);
    assert_true(now_s() - t0 < 0.6);   /* the plugin (1 s) is not running on the loop thread */
    assert_true(wait_for(&l, &l.list_done, NULL, 0));
    if (l.list_err)
        fail_msg("list: %s: %s", fg_err_name(l.list_err), l.list_msg);
    assert_int_equal(l.items, 5);
    assert_int_equal(runs(), 2);

    /* a watch from the list's revision, with the cached credential, sees a new object */
    char *q = fg_asprintf("watch=true&resourceVersion=%s", l.list_rv);
    l.watch_path = fg_kube_path(&fg_kube_configmaps, "default", NULL, NULL, q);
    free(q);
    assert_int_equal(fg_kube_loop_call_wait(l.loop, start_watch, &l, 5000), FG_OK);
    create_configmap(writer, "cm-watched");
    assert_true(wait_for(&l, NULL, &l.added, 1));
    assert_int_equal(fg_kube_loop_call_wait(l.loop, cancel_watch, &l, 5000), FG_OK);
    assert_int_equal(runs(), 2);
    loop_down(&l);
    fg_kube_client_free(c);

    /* a failing plugin fails the list on the loop with the plugin's message */
    plugin_state(TOKEN, NULL, "fail", NULL);
    c = client_from(kubeconfig, 5000);
    loop_up(&l, c);
    fg_kube_loop_call(l.loop, start_list, &l);
    assert_true(wait_for(&l, &l.list_done, NULL, 0));
    assert_int_equal(l.list_err, FG_E_IO);
    assert_non_null(strstr(l.list_msg, "exec plugin \""));
    assert_non_null(strstr(l.list_msg, "token revoked"));
    loop_down(&l);
    fg_kube_client_free(c);
    fg_kube_client_free(writer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plugin_token_is_used_and_cached),
        cmocka_unit_test(wrong_token_is_unauthorized),
        cmocka_unit_test(refused_token_runs_the_plugin_again),
        cmocka_unit_test(expired_token_runs_the_plugin_again),
        cmocka_unit_test(found_on_path_speaking_v1beta1),
        cmocka_unit_test(broken_plugins_name_themselves_and_the_cause),
        cmocka_unit_test(list_and_watch_on_the_loop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
