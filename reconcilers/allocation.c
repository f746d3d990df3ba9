/* How much of a GPU a workload's next pod gets (allocation.h). */
#include "reconcilers/allocation.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "operator/kube/quantity.h"
#include "reconcilers/podcontract.h"

/* A whole decimal number from lo to hi, digits only. */
static bool parse_bounded(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s || strlen(s) > 18)
        return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_compute(const char *s, int64_t *milli)
{
    return parse_bounded(s, 1, FG_POLICY_MILLI_MAX, milli);
}

/* A memory quantity ("20Gi", "512Mi", "1G") in MiB, rounded up; 1 MiB to FG_POLICY_MIB_MAX. */
static bool parse_memory(const char *s, int64_t *mib)
{
    int64_t milli;
    if (!s || fg_quantity_parse(s, &milli, NULL) != FG_OK || milli <= 0)
        return false;
    int64_t v = milli / FG_MIB_MILLI + (milli % FG_MIB_MILLI != 0);
    if (v > FG_POLICY_MIB_MAX)
        return false;
    *mib = v;
    return true;
}

enum fg_err fg_allocation_resolve(json_object *workload, const struct fg_recommendation *rec,
                                  enum fg_update_mode mode, struct fg_allocation *out, char *errmsg)
{
    bool applies = rec && mode != FG_UPDATE_OFF;
    out->compute_milli = applies && rec->has_compute ? rec->compute_milli : FG_POLICY_MILLI_MAX;
    out->memory_mib = applies && rec->has_memory ? rec->memory_mib : 0;
    enum fg_err err = FG_OK;
    json_object *ann = fg_json_get(workload, "metadata", "annotations", NULL);
    json_object *v = fg_json_get(ann, FG_ANN_GPU_COMPUTE, NULL);
    if (v) {
        const char *s = json_object_get_string(v);
        if (!json_object_is_type(v, json_type_string) || !parse_compute(s, &out->compute_milli))
            err = fg_errmsg(errmsg, FG_E_INVAL,
                            "annotation " FG_ANN_GPU_COMPUTE ": \"%s\" is not a whole number of milli-GPUs from 1 to "
                            "1000 (\"300\" is 30%% of a GPU); ignored",
                            s);
    }
    v = fg_json_get(ann, FG_ANN_GPU_MEMORY, NULL);
    if (v) {
        const char *s = json_object_get_string(v);
        if (!json_object_is_type(v, json_type_string) || !parse_memory(s, &out->memory_mib))
            err = fg_errmsg(errmsg, FG_E_INVAL,
                            "annotation " FG_ANN_GPU_MEMORY ": \"%s\" is not a memory size from 1Mi to 1Ti (such as "
                            "\"20Gi\"); ignored",
                            s);
    }
    return err;
}

void fg_allocation_format(const struct fg_allocation *a, char compute[24], char memory[24])
{
    snprintf(compute, 24, "%" PRId64, a->compute_milli);
    if (a->memory_mib == 0)
        snprintf(memory, 24, "%s", FG_ALLOC_WHOLE_MEMORY);
    else
        snprintf(memory, 24, "%" PRId64, a->memory_mib);
}

enum fg_err fg_allocation_from_pod(json_object *pod, struct fg_allocation *out, char *errmsg)
{
    const char *c = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_COMPUTE_MILLI, NULL);
    const char *m = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_MEMORY_MIB, NULL);
    struct fg_allocation a;
    if (!parse_compute(c, &a.compute_milli))
        return fg_errmsg(errmsg, FG_E_PARSE, "annotation " FG_ANN_COMPUTE_MILLI ": %s%s%s", c ? "\"" : "",
                         c ? c : "missing", c ? "\" is not a number from 1 to 1000" : "");
    if (m && !strcmp(m, FG_ALLOC_WHOLE_MEMORY))
        a.memory_mib = 0;
    else if (!parse_bounded(m, 1, FG_POLICY_MIB_MAX, &a.memory_mib))
        return fg_errmsg(errmsg, FG_E_PARSE, "annotation " FG_ANN_MEMORY_MIB ": %s%s%s", m ? "\"" : "",
                         m ? m : "missing", m ? "\" is neither a number of MiB nor \"" FG_ALLOC_WHOLE_MEMORY "\"" : "");
    *out = a;
    return FG_OK;
}
