/* nvmlstate — a node's GPUs and their processes as the fake NVML's state file; see nvmlstate.h. */
#include "e2e/cluster/nvmlstate.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

/* What NVML reports for p: whole percent and bytes. */
static unsigned proc_sm(const struct fg_sim_gpu_process *p)
{
    return p->sm <= 0 ? 0 : p->sm >= 100 ? 100 : (unsigned)lround(p->sm);
}

static int64_t proc_mem(const struct fg_sim_gpu_process *p)
{
    return p->mem <= 0 ? 0 : (int64_t)llround(p->mem);
}

void fg_sim_gpu_totals(const struct fg_sim_gpu_snapshot *s, unsigned g, unsigned *util, int64_t *used)
{
    unsigned sum = 0;
    int64_t mem = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        if (!(s->procs[i].gpus >> g & 1u))
            continue;
        sum += proc_sm(&s->procs[i]);
        mem += proc_mem(&s->procs[i]);
    }
    *util = sum > 100 ? 100 : sum;
    *used = mem;
}

char *fg_sim_nvml_state(const struct fg_sim_gpu_snapshot *s)
{
    json_object *state = json_object_new_object(), *gpus = json_object_new_array();
    for (unsigned g = 0; g < s->ngpus; g++) {
        json_object *o = json_object_new_object(), *procs = json_object_new_array(), *samples = json_object_new_array();
        unsigned util;
        int64_t used;
        fg_sim_gpu_totals(s, g, &util, &used);
        fg_json_set_str(o, "uuid", s->uuids[g]);
        fg_json_set_str(o, "name", s->model);
        json_object_object_add(o, "total", json_object_new_int64(s->memory_bytes));
        json_object_object_add(o, "used", json_object_new_int64(used));
        json_object_object_add(o, "reserved", json_object_new_int64(FG_SIM_GPU_RESERVED_BYTES));
        json_object_object_add(o, "util", json_object_new_int((int)util));
        for (size_t i = 0; i < s->nprocs; i++) {
            const struct fg_sim_gpu_process *p = &s->procs[i];
            if (!(p->gpus >> g & 1u))
                continue;
            json_object *e = json_object_new_object(), *sample = json_object_new_object();
            json_object_object_add(e, "pid", json_object_new_int64(p->pid));
            json_object_object_add(e, "used", json_object_new_int64(proc_mem(p)));
            json_object_array_add(procs, e);
            json_object_object_add(sample, "pid", json_object_new_int64(p->pid));
            json_object_object_add(sample, "ts", json_object_new_int(0));
            json_object_object_add(sample, "sm", json_object_new_int((int)proc_sm(p)));
            json_object_array_add(samples, sample);
        }
        json_object_object_add(o, "procs", procs);
        json_object_object_add(o, "samples", samples);
        json_object_array_add(gpus, o);
    }
    json_object_object_add(state, "gpus", gpus);
    char *text = fg_strdup(json_object_to_json_string_ext(state, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(state);
    return text;
}

void fg_sim_gpu_snapshot_cleanup(struct fg_sim_gpu_snapshot *s)
{
    free(s->procs);
    s->procs = NULL;
    s->nprocs = 0;
}
