/* mps — start, limits, health and quit of one GPU's MPS control daemon; see mps.h. */
#include "nodeagent/holder/mps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "nodeagent/holder/mps_paths.h"

#define START_TIMEOUT_MS 5000u   /* `-d` returns once the daemon is set up; then it must answer within this */

unsigned fg_mps_thread_percentage(uint64_t compute_milli)
{
    uint64_t pct = compute_milli / 10;
    return pct < 1 ? 1 : pct > 100 ? 100 : (unsigned)pct;
}

static enum fg_err make_dir(const char *root, const char *uuid, const char *kind, char *out, size_t size,
                            char *errmsg)
{
    enum fg_err err = fg_mps_dir(root, uuid, kind, out, size, errmsg);
    if (err)
        return err;
    if (fg_mkdir_p(out) != 0)
        return fg_errmsg(errmsg, FG_E_IO, "cannot create %s: %s", out, strerror(errno));
    return FG_OK;
}

enum fg_err fg_holder_mps_init(struct fg_holder_mps *m, const char *root, const char *bin, const char *uuid,
                               const struct fg_mps_limits *limits, char *errmsg)
{
    memset(m, 0, sizeof *m);
    if (strlen(uuid) >= sizeof m->uuid)
        return fg_errmsg(errmsg, FG_E_INVAL, "GPU UUID too long");
    snprintf(m->uuid, sizeof m->uuid, "%s", uuid);
    m->limits = *limits;
    m->timeout_ms = 2000;
    enum fg_err err = make_dir(root, uuid, "pipe", m->pipe_dir, sizeof m->pipe_dir, errmsg);
    if (!err)
        err = make_dir(root, uuid, "log", m->log_dir, sizeof m->log_dir, errmsg);
    if (!err)
        err = make_dir(root, uuid, "shm", m->shm_dir, sizeof m->shm_dir, errmsg);
    if (err)
        return err;
    fg_mps_control_init(&m->ctl, bin, m->pipe_dir, m->log_dir, uuid);
    return FG_OK;
}

void fg_holder_mps_cleanup(struct fg_holder_mps *m)
{
    fg_mps_control_cleanup(&m->ctl);
}

enum fg_err fg_holder_mps_check(struct fg_holder_mps *m, char *errmsg)
{
    return fg_mps_control_command(&m->ctl, "get_server_list", m->timeout_ms, NULL, errmsg);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Runs `-d` and waits until the daemon answers. */
static enum fg_err launch(struct fg_holder_mps *m, char *errmsg)
{
    struct fg_buf out = FG_BUF_INIT;
    int status = 0;
    enum fg_err err = fg_mps_control_run(&m->ctl, "-d", NULL, START_TIMEOUT_MS, &out, &status, errmsg);
    if (!err && status != 0)
        err = fg_errmsg(errmsg, FG_E_IO, "%s -d exited with %d: %.200s", m->ctl.bin, status,
                        out.len ? fg_buf_str(&out) : "(no output)");
    fg_buf_cleanup(&out);
    if (err)
        return err;
    uint64_t deadline = fg_clock_real_ns() + START_TIMEOUT_MS * FG_NS_PER_MS;
    while ((err = fg_holder_mps_check(m, errmsg)) && fg_clock_real_ns() < deadline)
        sleep_ms(20);
    return err;
}

/* Sends the limits and reads the percentage back. */
static enum fg_err apply_limits(struct fg_holder_mps *m, char *errmsg)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "set_default_active_thread_percentage %u", m->limits.thread_percentage);
    enum fg_err err = fg_mps_control_command(&m->ctl, cmd, m->timeout_ms, NULL, errmsg);
    if (err)
        return err;
    snprintf(cmd, sizeof cmd, "set_default_device_pinned_mem_limit %s %lluM", m->uuid,
             (unsigned long long)m->limits.pinned_mem_mib);
    if ((err = fg_mps_control_command(&m->ctl, cmd, m->timeout_ms, NULL, errmsg)))
        return err;
    struct fg_buf reply = FG_BUF_INIT;
    err = fg_mps_control_command(&m->ctl, "get_default_active_thread_percentage", m->timeout_ms, &reply, errmsg);
    if (!err) {
        char *end = NULL;
        double held = strtod(fg_buf_str(&reply), &end);
        if (end == fg_buf_str(&reply) || held < m->limits.thread_percentage - 0.5 ||
            held > m->limits.thread_percentage + 0.5)
            err = fg_errmsg(errmsg, FG_E_INTERNAL, "the daemon reports an active thread percentage of \"%.40s\", "
                            "not %u", fg_buf_str(&reply), m->limits.thread_percentage);
    }
    fg_buf_cleanup(&reply);
    return err;
}

enum fg_err fg_holder_mps_start(struct fg_holder_mps *m, bool *adopted, char *errmsg)
{
    *adopted = fg_holder_mps_check(m, NULL) == FG_OK;
    if (!*adopted) {
        enum fg_err err = launch(m, errmsg);
        if (err)
            return err;
    }
    return apply_limits(m, errmsg);
}

enum fg_err fg_holder_mps_quit(struct fg_holder_mps *m, unsigned timeout_ms, char *errmsg)
{
    uint64_t deadline = fg_clock_real_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    if (fg_mps_control_command(&m->ctl, "quit", timeout_ms, NULL, NULL) != FG_OK)
        return FG_OK;   /* nothing answered: nothing to stop */
    while (fg_clock_real_ns() < deadline) {
        if (fg_holder_mps_check(m, NULL) != FG_OK)
            return FG_OK;
        sleep_ms(10);
    }
    return fg_errmsg(errmsg, FG_E_TIMEOUT, "the MPS control daemon still answers %u ms after quit", timeout_ms);
}
