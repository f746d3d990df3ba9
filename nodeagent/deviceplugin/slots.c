/* The slots the device plugin advertises (slots.h). */
#include "nodeagent/deviceplugin/slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fg_dp_slot_id(const char *gpu_uuid, unsigned n, char out[FG_DP_SLOT_ID_MAX])
{
    snprintf(out, FG_DP_SLOT_ID_MAX, "%s::%u", gpu_uuid, n);
}

bool fg_dp_slot_gpu(const char *id, unsigned slots, char uuid[FG_DP_UUID_MAX])
{
    const char *sep = id ? strstr(id, "::") : NULL;
    if (!sep || sep == id || (size_t)(sep - id) >= FG_DP_UUID_MAX)
        return false;
    const char *num = sep + 2;
    if (!*num || strspn(num, "0123456789") != strlen(num) || strlen(num) > 4 || (num[0] == '0' && num[1]))
        return false;
    if ((unsigned)atoi(num) >= slots)
        return false;
    memcpy(uuid, id, (size_t)(sep - id));
    uuid[sep - id] = '\0';
    return true;
}

const struct fg_dp_gpu *fg_dp_gpus_find(const struct fg_dp_gpu *gpus, size_t n, const char *uuid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(gpus[i].uuid, uuid) == 0)
            return &gpus[i];
    return NULL;
}

bool fg_dp_gpus_equal(const struct fg_dp_gpu *a, size_t na, const struct fg_dp_gpu *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        const struct fg_dp_gpu *o = fg_dp_gpus_find(b, nb, a[i].uuid);
        if (!o || o->healthy != a[i].healthy)
            return false;
    }
    return true;
}
