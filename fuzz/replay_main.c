/*
 * replay_main — a fuzz target without libFuzzer: runs it once on every input it is given.
 *
 * The normal build (FG_FUZZ=OFF, gcc, ASan and UBSan) links each fuzz_<name>.c with this driver and
 * registers it as the test fuzz_replay_<name>, with the target's seed corpus and its regressions as
 * arguments. Each argument is a file, or a directory whose regular files are run in name order (not
 * descending into subdirectories); one that does not exist is skipped, since a target may have no
 * regressions yet. The target's result is ignored, as libFuzzer ignores it: a failure is a sanitizer
 * report or the target's own abort(), either of which ends the run, the input named on the line
 * before.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "fuzz/fuzz.h"

/* Inputs are small; anything bigger is not one of ours. */
#define INPUT_MAX (16u << 20)

static int run_file(const char *path)
{
    struct fg_buf b;
    fg_buf_init(&b, INPUT_MAX);
    char why[FG_ERRMSG_MAX] = "";
    if (fg_buf_read_file(&b, path, why) != FG_OK) {
        fprintf(stderr, "replay: %s: %s\n", path, why);
        fg_buf_cleanup(&b);
        return -1;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, b.len);
    /* a copy of exactly b.len bytes, so reads past the input's end are caught as libFuzzer's are */
    uint8_t *copy = fg_malloc(b.len ? b.len : 1);
    if (b.len)
        memcpy(copy, b.data, b.len);
    (void)LLVMFuzzerTestOneInput(copy, b.len);
    free(copy);
    fg_buf_cleanup(&b);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir in name order; the count run into *n. */
static int run_dir(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        names = fg_realloc(names, (count + 1) * sizeof *names);
        names[count++] = fg_asprintf("%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) != 0)
                rc = -1;
            else
                ++*n;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    size_t n = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue; /* no regressions yet */
        if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &n) != 0 : run_file(argv[i]) != 0)
            rc = 1;
        else if (!S_ISDIR(st.st_mode))
            n++;
    }
    fprintf(stderr, "replay: %zu inputs run\n", n);
    return rc;
}
