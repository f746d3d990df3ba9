/* probe — the leader-only diagnostic; see probe.h. */
#include "operator/manager/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"

#define PROBE_PERIOD_NS (10 * FG_NS_PER_MS)

struct probe {
    struct fg_manager *m;
    char *path;
    int fd;
    pthread_t thread;
    atomic_bool stopping;
};

static void *probe_main(void *arg)
{
    struct probe *p = arg;
    const char *who = fg_manager_identity(p->m) ? fg_manager_identity(p->m) : fg_manager_component(p->m);
    while (!atomic_load(&p->stopping)) {
        uint64_t now = fg_clock_mono_ns();
        if (fg_manager_is_leader(p->m)) {
            char line[320];
            int n = snprintf(line, sizeof line, "%s %llu\n", who, (unsigned long long)now);
            if (write(p->fd, line, (size_t)n) != n)
                fg_log(FG_LOG_WARN, "leader-probe", "cannot write %s: %s", p->path, strerror(errno));
        }
        struct timespec ts = { 0, (long)PROBE_PERIOD_NS };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct probe *p = ud;
    p->fd = open(p->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (p->fd < 0)
        return fg_errmsg(errmsg, FG_E_IO, "cannot open %s: %s", p->path, strerror(errno));
    atomic_store(&p->stopping, false);
    if (pthread_create(&p->thread, NULL, probe_main, p) != 0) {
        close(p->fd);
        return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the probe thread");
    }
    return FG_OK;
}

static void stop(void *ud)
{
    struct probe *p = ud;
    atomic_store(&p->stopping, true);
    pthread_join(p->thread, NULL);
    close(p->fd);
}

static void probe_free(void *ud)
{
    struct probe *p = ud;
    free(p->path);
    free(p);
}

enum fg_err fg_leader_probe_setup(struct fg_manager *m, const char *path, char *errmsg)
{
    struct probe *p = fg_calloc(1, sizeof *p);
    p->m = m;
    p->path = fg_strdup(path);
    p->fd = -1;
    fg_manager_on_free(m, probe_free, p);
    enum fg_err err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "leader-probe", .leader_only = true,
                                                                       .start = start, .stop = stop, .ud = p });
    if (err)
        return fg_errmsg(errmsg, err, "cannot register the leader probe");
    return FG_OK;
}
