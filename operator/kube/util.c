/* util — the helpers declared in internal.h. */
#include "operator/kube/internal.h"

#include "base/buf.h"
#include "base/mem.h"

char *fg__kube_dup_opt(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

enum fg_err fg__kube_read_small_file(const char *path, const char *what, char **out, char *errmsg)
{
    struct fg_buf b;
    fg_buf_init(&b, FG__KUBE_FILE_MAX);
    char why[FG_ERRMSG_MAX];
    enum fg_err err = fg_buf_read_file(&b, path, why);
    if (err) {
        fg_buf_cleanup(&b);
        return fg_errmsg(errmsg, err, "%s: %s", what, why);
    }
    *out = fg_buf_take(&b);
    return FG_OK;
}
