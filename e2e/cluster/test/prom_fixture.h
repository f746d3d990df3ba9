/*
 * prom_fixture — a real Prometheus for an end-to-end test: started on 127.0.0.1 (a port the kernel
 * picked) with a scrape configuration of one job whose static targets are given, every second, its
 * TSDB and log in a directory of the test's; queried through its HTTP API (/api/v1/query) as
 * Grafana or a person would; stopped with SIGTERM (SIGKILL after 10 s).
 *
 * The binary is FG_PROMETHEUS (CMake finds it; the test is not built where it is missing).
 */
#ifndef FG_SIM_PROM_FIXTURE_H
#define FG_SIM_PROM_FIXTURE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/buf.h"

struct promtest {
    pid_t pid;
    unsigned port;
    char dir[192];
    char log[256];
};

/* Starts Prometheus in dir scraping targets ("host:port", ntargets of them) as job `job`; fails the
 * test when it cannot be spawned. */
void promtest_start(struct promtest *p, const char *dir, const char *job, const char *const *targets, size_t ntargets);
/* Stops it (nothing when not started). */
void promtest_stop(struct promtest *p);
/* The instant query's data.result (a new reference), or NULL when Prometheus did not answer with
 * status success. */
json_object *promtest_query(struct promtest *p, const char *promql);
/* Prometheus' log into out (replacing it). */
void promtest_log(const struct promtest *p, struct fg_buf *out);

#endif
