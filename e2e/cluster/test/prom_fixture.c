/* prom_fixture — a real Prometheus scraping a test's targets; see prom_fixture.h. */
#include "e2e/cluster/test/prom_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"

extern char **environ;

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

void promtest_start(struct promtest *p, const char *dir, const char *job, const char *const *targets, size_t ntargets)
{
    memset(p, 0, sizeof *p);
    snprintf(p->dir, sizeof p->dir, "%s", dir);
    snprintf(p->log, sizeof p->log, "%s/prometheus.log", dir);
    p->port = free_port();
    char cfg[256], cfgarg[300], data[300], listen[64];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", dir);
    snprintf(cfgarg, sizeof cfgarg, "--config.file=%s", cfg);
    snprintf(data, sizeof data, "--storage.tsdb.path=%s/tsdb", dir);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%u", p->port);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
               "  - job_name: %s\n    static_configs:\n      - targets: [", job);
    for (size_t i = 0; i < ntargets; i++)
        fprintf(f, "%s'%s'", i ? ", " : "", targets[i]);
    fprintf(f, "]\n");
    fclose(f);
    char *const argv[] = { FG_PROMETHEUS, cfgarg, data, listen, "--log.level=warn", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawn(&p->pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        p->pid = 0;
        fail_msg("cannot start %s: %s", FG_PROMETHEUS, strerror(rc));
    }
}

void promtest_stop(struct promtest *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGTERM);
    int st = 0;
    for (unsigned t = 0; t < 10000; t += 50) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            return;
        }
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    p->pid = 0;
}

static size_t body_cb(char *data, size_t size, size_t n, void *ud)
{
    fg_buf_put(ud, data, size * n);
    return size * n;
}

json_object *promtest_query(struct promtest *p, const char *promql)
{
    CURL *c = curl_easy_init();
    char *q = curl_easy_escape(c, promql, 0);
    char url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/query?query=%s", p->port, q);
    curl_free(q);
    struct fg_buf body;
    fg_buf_init(&body, 0);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    json_object *doc = NULL, *result = NULL;
    if (code == 200 && fg_json_parse(fg_buf_str(&body), body.len, 0, &doc, NULL) == FG_OK &&
        fg_str_eq(fg_json_get_str(doc, "status", NULL), "success"))
        result = json_object_get(fg_json_get(doc, "data", "result", NULL));
    json_object_put(doc);
    fg_buf_cleanup(&body);
    return result;
}

void promtest_log(const struct promtest *p, struct fg_buf *out)
{
    fg_buf_reset(out);
    if (fg_buf_read_file(out, p->log, NULL) != FG_OK)
        fg_buf_put_str(out, "(no log)");
}
