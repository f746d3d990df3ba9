/* fake_state — test helpers: state files for e2e/fake-nvml, fake proc trees, and the small pieces the
 * e2e test and the benchmark share for driving an exporter process. */
#ifndef FG_EXPORTER_TEST_FAKE_STATE_H
#define FG_EXPORTER_TEST_FAKE_STATE_H

#include <stddef.h>

/* Creates a temporary directory (dir must hold 64 bytes) and sets FG_FAKE_NVML_STATE to dir/state.json. */
void fg_test_fake_dir(char *dir);
/* Replaces the state file's content atomically (write + rename), with a fresh mtime. */
void fg_test_fake_state(const char *dir, const char *json);
/* Writes dir/proc/<pid>/cgroup with `text`. */
void fg_test_fake_cgroup(const char *dir, unsigned pid, const char *text);
/* Writes dir/proc/<pid>/cmdline as the kernel does: exe and arg, each ending in a NUL. */
void fg_test_fake_cmdline(const char *dir, unsigned pid, const char *exe, const char *arg);
/* Removes the directory tree. */
void fg_test_fake_rm(const char *dir);

void fg_test_sleep_ms(unsigned ms);
/* A libcurl write callback appending to the struct fg_buf in ud. */
size_t fg_test_curl_body(char *data, size_t size, size_t n, void *ud);
/* The port in an exporter's "listening on 127.0.0.1:PORT" log line, polling log_path for up to 10 s;
 * 0 when it never appears. */
unsigned fg_test_exporter_port(const char *log_path);

#endif
