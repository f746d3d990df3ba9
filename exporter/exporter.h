/*
 * exporter — background sampling and the snapshot a scrape serves.
 *
 * A sampler thread wakes every `interval`, reads NVML (sample.c), attributes processes to pods
 * (usage.c) and renders the whole exposition (metrics.c) into a new text, which then replaces the
 * published one under a mutex. A scrape only copies that text, so it never waits on NVML, /proc or
 * the API server, and costs the same however slow the driver is.
 *
 * NVML is opened lazily and reopened after failures: no library, no driver, or a device count that
 * fails all leave the exporter running with its health metrics saying so (fracgpu_exporter_nvml_up
 * 0), a log line when the condition starts or changes, one when it clears, and a new attempt every
 * interval. Meanwhile the exporter is not ready (fg_exporter_ready, the node agent's /readyz check
 * "nvml", saying why) but alive: /healthz stays ok, since restarting the process would not load a
 * driver; it is ready again from the first sample that reads NVML.
 *
 * On the node agent, fg_exporter_setup declares it on the manager: this node's pods (pods.h), the
 * sampler as a runnable of every replica, the published exposition as a collector of the manager's
 * metrics registry, so /metrics serves it after the process's own families, and fg_exporter_ready as
 * the readiness check "nvml".
 *
 * Ownership: the exporter owns its NVML handle, sampler and texts, and borrows `pods` (may be NULL)
 * and the option strings, which must outlive it.
 */
#ifndef FG_EXPORTER_EXPORTER_H
#define FG_EXPORTER_EXPORTER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "exporter/pods.h"
#include "exporter/sample.h"
#include "operator/manager/manager.h"

struct fg_exporter_opts {
    const char *node;          /* required */
    const char *nvml_lib;      /* NULL: libnvidia-ml.so.1 */
    const char *proc_root;     /* NULL: /proc */
    uint64_t interval_ns;      /* 0: 10 s */
    bool dcgm_aliases;
};

struct fg_exporter;

struct fg_exporter *fg_exporter_new(const struct fg_exporter_opts *opts, struct fg_pods *pods);
/* Stops the sampler (if started) and frees everything. NULL is ignored. */
void fg_exporter_free(struct fg_exporter *e);
/* Takes one sample now and publishes it (on the caller's thread; not while the sampler runs). */
void fg_exporter_sample(struct fg_exporter *e);
/* Takes a first sample, then starts the sampler thread. */
enum fg_err fg_exporter_start(struct fg_exporter *e, char *errmsg) FG_MUST_USE;
/* Stops the sampler thread, if running; it may be started again. */
void fg_exporter_stop(struct fg_exporter *e);
/* FG_OK when the last sample read NVML; FG_E_BUSY before the first sample and after one that could
 * not (errmsg says why: no library, no driver, a failing device count). Any thread. */
enum fg_err fg_exporter_ready(struct fg_exporter *e, char *errmsg) FG_MUST_USE;
/* Appends the published exposition to out. Any thread. */
void fg_exporter_scrape(struct fg_exporter *e, struct fg_buf *out);

/* Told after every sample which devices NVML showed (nvml_up false: NVML could not be read, devs
 * empty), on the sampler thread: how the device plugin learns the node's GPUs and their health from
 * the one reader of NVML. */
typedef void fg_exporter_devices_fn(void *ud, const struct fg_device_sample *devs, size_t n, bool nvml_up);
/* Sets the observer (one; before fg_exporter_start). */
void fg_exporter_on_devices(struct fg_exporter *e, fg_exporter_devices_fn *fn, void *ud);

/* Declares the exporter on m (see above); opts' strings must outlive m. *out (may be NULL) gets the
 * exporter, which belongs to m. errmsg says what failed. */
enum fg_err fg_exporter_setup(struct fg_manager *m, const struct fg_exporter_opts *opts, struct fg_exporter **out,
                              char *errmsg) FG_MUST_USE;

#endif
