/* mps_paths — the MPS directory scheme; see mps_paths.h. */
#include "nodeagent/holder/mps_paths.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum fg_err fg_mps_dir(const char *root, const char *uuid, const char *kind, char *out, size_t size,
                       char *errmsg)
{
    static const char *const kinds[] = { "pipe", "log", "shm", FG_MPS_PREVIOUS_MODE };
    if (!root || !root[0])
        return fg_errmsg(errmsg, FG_E_INVAL, "no MPS root directory");
    if (!uuid || !uuid[0] || !strcmp(uuid, ".") || !strcmp(uuid, "..") || strchr(uuid, '/'))
        return fg_errmsg(errmsg, FG_E_INVAL, "\"%s\" cannot name a GPU's MPS directory", uuid ? uuid : "");
    bool known = !kind;
    for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
        known = known || !strcmp(kind, kinds[i]);
    if (!known)
        return fg_errmsg(errmsg, FG_E_INVAL, "no MPS directory of kind \"%s\"", kind);
    int n = kind ? snprintf(out, size, "%s/%s/%s", root, uuid, kind) : snprintf(out, size, "%s/%s", root, uuid);
    if (n < 0 || (size_t)n >= size)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "MPS path under %s too long", root);
    return FG_OK;
}
