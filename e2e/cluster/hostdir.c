/*
 * hostdir — `mkdir -p` for the simulated hosts' directories, and this program's place (hostdir.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e/cluster/hostdir.h"

static int make_one(const char *path)
{
    struct stat st;
    if (mkdir(path, 0755) == 0)
        return 0;
    if (errno != EEXIST)
        return -1;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int fg_sim_mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp) {
        errno = len ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (make_one(tmp))
            return -1;
        *p = '/';
    }
    return make_one(tmp);
}

void fg_sim_self_path(char *out, size_t size, const char *name)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    if (!name) {
        snprintf(out, size, "%s", self);
        return;
    }
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, size, "%s/%s", self, name);
}
