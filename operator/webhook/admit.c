/* The webhook's answer to one AdmissionReview, from the operator's caches (admit.h). */
#include "operator/webhook/admit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "reconcilers/mutation.h"
#include "reconcilers/podcontract.h"
#include "reconcilers/terms.h"

static const char *const outcome_names[FG_ADMIT_OUTCOMES] = {
    "not-pod-create", "no-gpu", "not-automated", "whole", "mutated",
};

const char *fg_admit_outcome_name(enum fg_admit_outcome o)
{
    return o < FG_ADMIT_OUTCOMES ? outcome_names[o] : "unknown";
}

/* fg_workload_of_pod's lookup, bound to the pod's namespace. */
struct ns_lookup {
    const struct fg_admit_sources *s;
    const char *ns;
};

static json_object *lookup_in_ns(void *ctx, const char *group, const char *kind, const char *name)
{
    const struct ns_lookup *l = ctx;
    return l->s->lookup(l->s->ctx, l->ns, group, kind, name);
}

/* Whether the pod asks for a GPU or carries an earlier pass's record: otherwise there is nothing to do. */
static bool concerns_fracgpu(json_object *pod)
{
    if (fg_json_get(pod, "metadata", "annotations", FG_ANN_ORIGINAL_REQUEST, NULL))
        return true;
    struct fg_eligibility e;
    fg_eligibility_check(pod, NULL, &e);
    return e.ask != FG_GPU_NONE;
}

static void set_outcome(struct fg_admit_result *out, enum fg_admit_outcome o, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_outcome(struct fg_admit_result *out, enum fg_admit_outcome o, const char *reason, const char *fmt, ...)
{
    out->outcome = o;
    out->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->detail, sizeof(out->detail), fmt, ap);
    va_end(ap);
}

/* Plans and answers for an automated workload's pod. */
static void answer_for_workload(const struct fg_review *r, const struct fg_admit_sources *s, json_object *workload,
                                const struct fg_workload_kind *kind, struct fg_admit_result *out)
{
    char gw_name[FG_WORKLOAD_NAME_MAX + 1];
    fg_workload_name(s->kinds, kind, fg_json_get_str(workload, "metadata", "name", NULL), gw_name);
    json_object *gw = s->gpuworkload(s->ctx, r->ns, gw_name);
    const char *policy = fg_terms_policy_name(kind, workload, gw);
    struct fg_terms terms;
    char why[FG_ERRMSG_MAX] = "";
    fg_terms_resolve(policy, s->policy(s->ctx, policy), gw, &terms, why);
    if (!terms.policy_found) {
        set_outcome(out, FG_ADMIT_WHOLE, "policyNotFound", "workload %s: %s", gw_name, why);
        out->response = fg_review_allow(r->uid, NULL, NULL);
        return;
    }
    struct fg_mutation_target target = { gw_name, policy, terms.spec.sharing, terms.spec.isolation, { 0, 0 },
                                         terms.update_mode };
    /* a malformed fraction is the reconciler's to report */
    (void)fg_allocation_resolve(workload, &terms.rec, terms.update_mode, &target.allocation, NULL);
    struct fg_mutation m;
    fg_mutation_plan(r->object, &target, s->storage ? s->storage(s->ctx, r->ns) : NULL, &m);
    if (m.judged.ask == FG_GPU_ELIGIBLE)
        set_outcome(out, FG_ADMIT_MUTATED, NULL, "workload %s: %s compute %lld milli", gw_name, policy,
                    (long long)target.allocation.compute_milli);
    else if (m.judged.ask == FG_GPU_WHOLE)
        set_outcome(out, FG_ADMIT_WHOLE, m.judged.reason, "workload %s: %s", gw_name, m.judged.message);
    else
        set_outcome(out, FG_ADMIT_NO_GPU, NULL, "workload %s", gw_name);
    out->response = fg_review_allow(r->uid, m.patch, NULL);
    fg_mutation_cleanup(&m);
}

static void answer(const struct fg_review *r, const struct fg_admit_sources *s, struct fg_admit_result *out)
{
    memset(out, 0, sizeof(*out));
    if (!r->is_pod_create || !concerns_fracgpu(r->object)) {
        out->outcome = r->is_pod_create ? FG_ADMIT_NO_GPU : FG_ADMIT_NOT_POD_CREATE;
        out->response = fg_review_allow(r->uid, NULL, NULL);
        return;
    }
    struct ns_lookup l = { s, r->ns };
    const struct fg_workload_kind *kind = NULL;
    json_object *workload = fg_workload_of_pod(r->object, s->kinds, lookup_in_ns, &l, &kind);
    if (!workload || !fg_workload_automated(workload, s->name_space(s->ctx, r->ns))) {
        set_outcome(out, FG_ADMIT_NOT_AUTOMATED, NULL, "%s", workload ? "its workload is not automated"
                                                                      : "no workload fracgpu knows owns it");
        out->response = fg_review_allow(r->uid, NULL, NULL);
        return;
    }
    answer_for_workload(r, s, workload, kind, out);
}

void fg_admit(const struct fg_review *r, const struct fg_admit_sources *s, struct fg_admit_result *out)
{
    answer(r, s, out);
    if (s->done)
        s->done(s->ctx);
}

void fg_admit_result_cleanup(struct fg_admit_result *res)
{
    free(res->response);
    memset(res, 0, sizeof(*res));
}
