/* gpuusage — usage profiles from pod annotations, constant or replayed from a trace; see gpuusage.h. */
#include "e2e/cluster/gpuusage.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "operator/kube/quantity.h"

void fg_sim_trace_source_init(struct fg_sim_trace_source *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
}

void fg_sim_trace_source_cleanup(struct fg_sim_trace_source *s)
{
    fg_gentd26_cleanup(&s->trace);
    pthread_mutex_destroy(&s->mu);
}

/* The trace, read on the first call; NULL with why in errmsg when it cannot be. */
static const struct fg_gentd26 *trace_get(struct fg_sim_trace_source *s, char *errmsg)
{
    pthread_mutex_lock(&s->mu);
    if (!s->tried) {
        char why[FG_ERRMSG_MAX] = "";
        if (fg_gentd26_load(&s->trace, s->dir, why) != FG_OK)
            snprintf(s->failure, sizeof s->failure, "the GenTD26 trace cannot be read: %s", why);
        s->tried = true;
    }
    const struct fg_gentd26 *t = s->failure[0] ? NULL : &s->trace;
    if (!t)
        snprintf(errmsg, FG_ERRMSG_MAX, "%s", s->failure);
    pthread_mutex_unlock(&s->mu);
    return t;
}

/* Appends "; annotation NAME: why" (the first without "; ") to problem. */
__attribute__((format(printf, 4, 5))) static void refuse(char *problem, size_t size, const char *name, const char *fmt,
                                                          ...)
{
    size_t len = strlen(problem);
    if (len + 1 >= size)
        return;
    int n = snprintf(problem + len, size - len, "%sannotation %s: ", len ? "; " : "", name);
    if (n < 0 || (size_t)n >= size - len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem + len + (size_t)n, size - len - (size_t)n, fmt, ap);
    va_end(ap);
}

static bool read_sm(const char *s, double *out)
{
    errno = 0;
    char *end;
    double v = *s ? strtod(s, &end) : -1;
    if (!*s || errno || *end || !(v >= 0 && v <= 100))
        return false;
    *out = v;
    return true;
}

bool fg_sim_usage_parse(json_object *pod, struct fg_sim_trace_source *traces, struct fg_sim_usage *u, char *problem,
                        size_t size)
{
    *u = (struct fg_sim_usage){ .sm = -1, .mem = -1 };
    problem[0] = '\0';
    json_object *ann = fg_json_get(pod, "metadata", "annotations", NULL);
    const char *sm = fg_json_get_str(ann, FG_SIM_ANN_GPU_SM, NULL);
    const char *mem = fg_json_get_str(ann, FG_SIM_ANN_GPU_MEMORY, NULL);
    const char *trace = fg_json_get_str(ann, FG_SIM_ANN_USAGE_TRACE, NULL);
    if (sm && !read_sm(sm, &u->sm))
        refuse(problem, size, FG_SIM_ANN_GPU_SM, "\"%s\" is not a percentage from 0 to 100", sm);
    int64_t milli = 0;
    char why[FG_ERRMSG_MAX] = "";
    if (mem && (fg_quantity_parse(mem, &milli, why) != FG_OK || milli < 0))
        refuse(problem, size, FG_SIM_ANN_GPU_MEMORY, "\"%s\" is not a quantity of bytes such as 20Gi", mem);
    else if (mem)
        u->mem = (double)(milli / 1000);
    if (trace && strncmp(trace, FG_SIM_TRACE_GENTD26, strlen(FG_SIM_TRACE_GENTD26))) {
        refuse(problem, size, FG_SIM_ANN_USAGE_TRACE, "\"%s\" names no trace (gentd26/<pod> is expected)", trace);
    } else if (trace) {
        const struct fg_gentd26 *t = trace_get(traces, why);
        u->trace = t ? fg_gentd26_find(t, trace + strlen(FG_SIM_TRACE_GENTD26), why) : NULL;
        if (!u->trace)
            refuse(problem, size, FG_SIM_ANN_USAGE_TRACE, "%s", why);
    }
    u->given = u->sm >= 0 || u->mem >= 0 || u->trace;
    return !problem[0];
}

void fg_sim_usage_at(const struct fg_sim_usage *u, double seconds, double time_scale, double *sm, double *mem)
{
    double tsm = 0, tmem = 0;
    if (u->trace)
        fg_gentd26_at(u->trace, seconds * time_scale, &tsm, &tmem);
    *sm = u->sm >= 0 ? u->sm : tsm;
    *mem = u->mem >= 0 ? u->mem : tmem;
}
