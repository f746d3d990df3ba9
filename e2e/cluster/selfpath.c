/*
 * selfpath — this program's place on disk (selfpath.h).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "e2e/cluster/selfpath.h"

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
