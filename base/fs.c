/*
 * fs — `mkdir -p`, `rm -rf` without a shell, and whole-file replacement (fs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

static int make_one(const char *path)
{
    struct stat st;
    if (mkdir(path, 0755) == 0)
        return 0;
    if (errno != EEXIST || stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int fg_mkdir_p(const char *path)
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

static _Thread_local int first_error;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
    if (rc && errno != ENOENT && !first_error)
        first_error = errno;
    return 0;   /* go on with the rest */
}

int fg_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    first_error = 0;
    if (nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0)
        return -1;
    if (first_error) {
        errno = first_error;
        return -1;
    }
    return 0;
}

int fg_write_file_atomic(const char *path, const void *data, size_t len)
{
    static atomic_uint serial;
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%d-%u", path, (int)getpid(), atomic_fetch_add(&serial, 1)) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto out_unlink;
        p += n;
        left -= (size_t)n;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto out_unlink;
    }
    fd = -1;
    if (rename(tmp, path) == 0)
        return 0;
out_unlink:;
    int saved = errno ? errno : EIO;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    errno = saved;
    return -1;
}
