/*
 * fuzz_cgroup — the exporter's reading of /proc/<pid>/cgroup: which pod and container a process is in.
 *
 * The bytes are the file's text, given to fg_cgroup_parse as the exporter gives it (text and length).
 * What it returns must hold what cgroup.h promises, whatever the text: a pod UID in the dashed form
 * (or a static pod's 32 hex digits), and a container ID that is empty or 12 to 128 hex digits;
 * otherwise the target aborts, since the exporter puts both in metric labels and matches them
 * against pods.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/cgroup.h"
#include "fuzz/fuzz.h"

static bool pod_uid(const char *s)
{
    size_t n = strlen(s);
    if (n == 32) /* a static pod's: its config hash */
        return strspn(s, "0123456789abcdefABCDEF") == n;
    if (n != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

static bool container_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return true;
    if (n < 12 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fg_cgroup_ident id;
    char msg[FG_ERRMSG_MAX];
    if (fg_cgroup_parse((const char *)data, size, &id, msg) != FG_OK)
        return 0;
    if (!pod_uid(id.pod_uid) || !container_id(id.container_id))
        abort(); /* an identity the exporter would publish and match, not what the header promises */
    return 0;
}
