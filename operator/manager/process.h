/*
 * process — the standard process_* metrics of Prometheus client libraries, for every fracgpu role:
 * CPU seconds, resident and virtual memory, open and maximum file descriptors, start time. Read from
 * /proc/self at each scrape (Linux), so a dashboard built for any Prometheus-instrumented process
 * reads fracgpu's too.
 */
#ifndef FG_MANAGER_PROCESS_H
#define FG_MANAGER_PROCESS_H

#include "base/buf.h"

/* A metrics collector (base/metrics.h); ud is unused. Families it cannot read are left out. */
void fg_process_collect(void *ud, struct fg_buf *out);

#endif
