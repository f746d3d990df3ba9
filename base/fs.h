/*
 * fs — directory trees on the local file system: made as `mkdir -p` makes them, removed as
 * `rm -rf` removes them, without a shell (so a path with a quote or a space in it is only a path);
 * and files replaced whole, so that a reader polling one never sees it half written. Used by the
 * simulated cluster for its hosts' directories and files and by tests for their scratch space.
 */
#ifndef FG_BASE_FS_H
#define FG_BASE_FS_H

#include <stddef.h>

/* Makes path and every missing directory above it (mode 0755): 0, or -1 with errno set. A path
 * already there as a directory is success; one there as anything else fails with ENOTDIR. */
int fg_mkdir_p(const char *path);

/* Removes path and everything below it, links themselves not followed: 0, or -1 with errno set
 * for the first entry that could not go (the rest are still tried). A path that does not exist is
 * success. */
int fg_remove_tree(const char *path);

/* Replaces the file at path with len bytes of data, atomically for readers: the bytes go to a
 * temporary file beside it (unique per process and call), which is then renamed over path. 0, or
 * -1 with errno set and path untouched (the temporary file removed). Not synced to disk: it guards
 * against readers, not against a crash of the machine. */
int fg_write_file_atomic(const char *path, const void *data, size_t len);

#endif
