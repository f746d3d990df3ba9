/* fake_state — files for e2e/fake-nvml and fake proc trees; see fake_state.h. */
#include "base/fs.h"
#include "fake_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"

void fg_test_fake_dir(char *dir)
{
    snprintf(dir, 64, "/tmp/fg-exporter-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char path[128];
    snprintf(path, sizeof path, "%s/state.json", dir);
    setenv("FG_FAKE_NVML_STATE", path, 1);
    snprintf(path, sizeof path, "%s/proc", dir);
    mkdir(path, 0755);
}

void fg_test_fake_state(const char *dir, const char *json)
{
    char tmp[128], path[128];
    snprintf(tmp, sizeof tmp, "%s/state.json.tmp", dir);
    snprintf(path, sizeof path, "%s/state.json", dir);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(json, f) < 0 || fclose(f) != 0)
        abort();
    if (rename(tmp, path) != 0)
        abort();
}

/* Writes dir/proc/<pid>/<name> with len bytes of data, creating the PID's directory. */
static void fake_proc_file(const char *dir, unsigned pid, const char *name, const char *data, size_t len)
{
    char path[160];
    snprintf(path, sizeof path, "%s/proc/%u", dir, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/proc/%u/%s", dir, pid, name);
    FILE *f = fopen(path, "w");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        abort();
}

void fg_test_fake_cgroup(const char *dir, unsigned pid, const char *text)
{
    fake_proc_file(dir, pid, "cgroup", text, strlen(text));
}

void fg_test_fake_cmdline(const char *dir, unsigned pid, const char *exe, const char *arg)
{
    char cmdline[512];
    int n = snprintf(cmdline, sizeof cmdline, "%s%c%s", exe, '\0', arg);
    fake_proc_file(dir, pid, "cmdline", cmdline, (size_t)n + 1);
}

void fg_test_fake_rm(const char *dir)
{
    if (fg_remove_tree(dir) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

void fg_test_sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

size_t fg_test_curl_body(char *data, size_t size, size_t n, void *ud)
{
    return fg_buf_append(ud, data, size * n) ? 0 : size * n;
}

unsigned fg_test_exporter_port(const char *log_path)
{
    static const char marker[] = "/metrics on 127.0.0.1:";   /* the manager logs where it serves */
    struct fg_buf b;
    fg_buf_init(&b, 0);
    unsigned port = 0;
    for (int i = 0; i < 200 && !port; i++) {
        fg_buf_reset(&b);
        if (fg_buf_read_file(&b, log_path, NULL) == FG_OK && strstr(fg_buf_str(&b), marker))
            port = (unsigned)atoi(strstr(fg_buf_str(&b), marker) + sizeof marker - 1);
        if (!port)
            fg_test_sleep_ms(50);
    }
    fg_buf_cleanup(&b);
    return port;
}
