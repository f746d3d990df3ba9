/* process — process_* metrics from /proc/self; see process.h. */
#include "operator/manager/process.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/prom.h"

struct stat_fields {
    unsigned long long utime, stime, starttime, vsize;
    long long rss_pages;
};

/* Fields 14, 15, 22, 23 and 24 of /proc/self/stat; the command name (field 2) may hold spaces and
 * parentheses, so parsing starts after its last ')'. */
static bool read_stat(struct stat_fields *f)
{
    char text[1024];
    FILE *fp = fopen("/proc/self/stat", "r");
    if (!fp)
        return false;
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    const char *p = strrchr(text, ')');
    return p && sscanf(p + 2,
                       "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
                       &f->utime, &f->stime, &f->starttime, &f->vsize, &f->rss_pages) == 5;
}

static bool boot_time(unsigned long long *out)
{
    char line[256];
    FILE *fp = fopen("/proc/stat", "r");
    bool found = false;
    while (fp && !found && fgets(line, sizeof line, fp))
        found = sscanf(line, "btime %llu", out) == 1;
    if (fp)
        fclose(fp);
    return found;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;   /* the directory stream's own descriptor */
}

static void gauge(struct fg_buf *out, const char *name, enum fg_prom_type type, const char *help, double v)
{
    fg_prom_family(out, name, type, help);
    fg_prom_sample(out, name, NULL, v);
}

void fg_process_collect(void *ud, struct fg_buf *out)
{
    (void)ud;
    struct stat_fields f;
    double ticks = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
    if (read_stat(&f) && ticks > 0) {
        gauge(out, "process_cpu_seconds_total", FG_PROM_COUNTER, "Total user and system CPU time spent in seconds.",
              (double)(f.utime + f.stime) / ticks);
        gauge(out, "process_resident_memory_bytes", FG_PROM_GAUGE, "Resident memory size in bytes.",
              (double)f.rss_pages * page);
        gauge(out, "process_virtual_memory_bytes", FG_PROM_GAUGE, "Virtual memory size in bytes.", (double)f.vsize);
        unsigned long long btime;
        if (boot_time(&btime))
            gauge(out, "process_start_time_seconds", FG_PROM_GAUGE,
                  "Start time of the process since unix epoch in seconds.", (double)btime + (double)f.starttime / ticks);
    }
    long fds = open_fds();
    if (fds >= 0)
        gauge(out, "process_open_fds", FG_PROM_GAUGE, "Number of open file descriptors.", (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        gauge(out, "process_max_fds", FG_PROM_GAUGE, "Maximum number of open file descriptors.", (double)rl.rlim_cur);
}
