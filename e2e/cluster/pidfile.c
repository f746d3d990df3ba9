/* pidfile — finding simulated pods' processes again; see pidfile.h. */
#include "e2e/cluster/pidfile.h"

#include "base/fs.h"

#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool fg_sim_proc_stat(pid_t pid, struct fg_sim_proc_stat *out)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')');   /* the command name may hold spaces and parentheses */
    int ppid = 0;
    unsigned long long ut = 0, st = 0, start = 0;
    if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &ppid,
                     &ut, &st, &start) != 4)
        return false;
    *out = (struct fg_sim_proc_stat){ ppid, ut, st, start };
    return true;
}

uint64_t fg_sim_proc_starttime(pid_t pid)
{
    struct fg_sim_proc_stat st;
    return fg_sim_proc_stat(pid, &st) ? st.starttime : 0;
}

bool fg_sim_pidfile_write(const char *path, pid_t pid)
{
    char text[64];
    int n = snprintf(text, sizeof text, "%d %llu\n", (int)pid, (unsigned long long)fg_sim_proc_starttime(pid));
    return fg_write_file_atomic(path, text, (size_t)n) == 0;
}

bool fg_sim_pidfile_alive(const char *path, pid_t *pid)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    int p = 0;
    unsigned long long start = 0;
    bool ok = fscanf(f, "%d %llu", &p, &start) == 2 && p > 0;
    fclose(f);
    if (!ok || start == 0 || fg_sim_proc_starttime(p) != start)
        return false;
    *pid = p;
    return true;
}

void fg_sim_pidfile_sweep(const char *dir)
{
    char pattern[PATH_MAX];
    snprintf(pattern, sizeof pattern, "%s/nodes/*/pods/*/*.pid", dir);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        pid_t pid;
        if (fg_sim_pidfile_alive(g.gl_pathv[i], &pid))
            kill(-pid, SIGKILL);
        unlink(g.gl_pathv[i]);
    }
    globfree(&g);
}
