/*
 * prices — the cutting-stock LP of the mix's sharing pods and the gap values its dual gives (see
 * prices_int.h).
 *
 * Clp is loaded with dlopen on the first solve, not linked: every role of fracgpu is one binary, and
 * linking Clp (with CoinUtils, libstdc++, LAPACK, BLAS and libgfortran behind it) raised the node
 * exporter's RSS from 13.0 to 16.1 MiB though the exporter never solves an LP. Where the library
 * cannot be loaded, no price is valid and fracgpu places without the price term.
 */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <Clp_C_Interface.h>

#include "base/mem.h"
#include "scheduler/policies/prices_int.h"

/* Distinct sharing sizes of a mix with their summed shares. */
struct sizes {
    int milli[FG_SCHED_MILLI];
    double demand[FG_SCHED_MILLI];
    int n;
};

static void collect(const struct fg_sched_mix *mix, struct sizes *sz)
{
    double by_milli[FG_SCHED_MILLI] = { 0 };
    for (size_t t = 0; t < mix->n; t++) {
        const struct fg_sched_mix_type *ty = &mix->types[t];
        if (ty->n_gpus == 1 && ty->gpu_milli > 0 && ty->gpu_milli < FG_SCHED_MILLI && ty->p > 0)
            by_milli[ty->gpu_milli] += ty->p;
    }
    sz->n = 0;
    for (int s = 1; s < FG_SCHED_MILLI; s++)
        if (by_milli[s] > 0) {
            sz->milli[sz->n] = s;
            sz->demand[sz->n++] = by_milli[s];
        }
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The arc-flow LP in column-major form (Clp_loadProblem's arguments). */
struct lp {
    int cols, rows;
    CoinBigIndex *start;
    int *index;
    double *value, *obj, *row_lo, *row_hi;
};

static void add_col(struct lp *lp, CoinBigIndex *nz, double cost, int r0, double v0, int r1, double v1, int r2)
{
    lp->start[lp->cols] = *nz;
    lp->obj[lp->cols++] = cost;
    lp->index[*nz] = r0;
    lp->value[(*nz)++] = v0;
    lp->index[*nz] = r1;
    lp->value[(*nz)++] = v1;
    if (r2 >= 0) {
        lp->index[*nz] = r2;
        lp->value[(*nz)++] = 1;
    }
}

/* Rows 0..levels: flow conservation at each fill level (in = out); rows levels+1..: one per size,
 * its arcs' flow ≥ its demand. Columns: the arcs of each size, the loss arcs, then the GPU count
 * (flow from level `levels` back to 0), the objective. */
static void build(const struct sizes *sz, int step, struct lp *lp)
{
    int levels = FG_SCHED_MILLI / step;
    size_t max_cols = (size_t)(sz->n + 1) * (size_t)levels + 1;
    lp->start = fg_malloc((max_cols + 1) * sizeof *lp->start);
    lp->index = fg_malloc(3 * max_cols * sizeof *lp->index);
    lp->value = fg_malloc(3 * max_cols * sizeof *lp->value);
    lp->obj = fg_malloc(max_cols * sizeof *lp->obj);
    lp->rows = levels + 1 + sz->n;
    lp->row_lo = fg_calloc((size_t)lp->rows, sizeof *lp->row_lo);
    lp->row_hi = fg_calloc((size_t)lp->rows, sizeof *lp->row_hi);
    for (int k = 0; k < sz->n; k++) {
        lp->row_lo[levels + 1 + k] = sz->demand[k];
        lp->row_hi[levels + 1 + k] = DBL_MAX;
    }
    lp->cols = 0;
    CoinBigIndex nz = 0;
    for (int k = 0; k < sz->n; k++) {
        int len = sz->milli[k] / step;
        for (int h = 0; h + len <= levels; h++)
            add_col(lp, &nz, 0, h, -1, h + len, 1, levels + 1 + k);
    }
    for (int h = 0; h < levels; h++)
        add_col(lp, &nz, 0, h, -1, h + 1, 1, -1);
    add_col(lp, &nz, 1, levels, -1, 0, 1, -1);
    lp->start[lp->cols] = nz;
}

static void lp_free(struct lp *lp)
{
    free(lp->start);
    free(lp->index);
    free(lp->value);
    free(lp->obj);
    free(lp->row_lo);
    free(lp->row_hi);
}

#define CLP_LIB "libClp.so.1"

/* The slice of Clp's C interface that solve() calls, typed from its header. */
static struct {
    __typeof__(&Clp_newModel) new_model;
    __typeof__(&Clp_deleteModel) delete_model;
    __typeof__(&Clp_setLogLevel) set_log_level;
    __typeof__(&Clp_loadProblem) load_problem;
    __typeof__(&Clp_dual) dual;
    __typeof__(&Clp_isProvenOptimal) is_proven_optimal;
    __typeof__(&Clp_getRowPrice) row_price;
    bool loaded;
} clp;
static pthread_once_t clp_once = PTHREAD_ONCE_INIT;

/* Function pointers from dlsym: POSIX guarantees the object/function pointer round trip. */
#define CLP_SYM(field, name) (*(void **)(&clp.field) = dlsym(dl, name)) != NULL

static void clp_load(void)
{
    void *dl = dlopen(CLP_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return;
    clp.loaded = CLP_SYM(new_model, "Clp_newModel") && CLP_SYM(delete_model, "Clp_deleteModel") &&
                 CLP_SYM(set_log_level, "Clp_setLogLevel") && CLP_SYM(load_problem, "Clp_loadProblem") &&
                 CLP_SYM(dual, "Clp_dual") && CLP_SYM(is_proven_optimal, "Clp_isProvenOptimal") &&
                 CLP_SYM(row_price, "Clp_getRowPrice");
}

/* Solves for the dual prices, in GPU milli, of the size rows; false without an optimal solution. */
static bool solve(const struct sizes *sz, double *price)
{
    pthread_once(&clp_once, clp_load);
    if (!clp.loaded)
        return false;
    int step = FG_SCHED_MILLI;
    for (int k = 0; k < sz->n; k++)
        step = gcd(step, sz->milli[k]);
    struct lp lp;
    build(sz, step, &lp);
    Clp_Simplex *model = clp.new_model();
    clp.set_log_level(model, 0);
    clp.load_problem(model, lp.cols, lp.rows, lp.start, lp.index, lp.value, NULL, NULL, lp.obj, lp.row_lo,
                     lp.row_hi);
    clp.dual(model, 0);
    bool ok = clp.is_proven_optimal(model);
    if (ok) {
        const double *dual = clp.row_price(model);
        for (int k = 0; k < sz->n; k++) {
            price[k] = dual[FG_SCHED_MILLI / step + 1 + k] * FG_SCHED_MILLI;
            ok = ok && isfinite(price[k]) && price[k] > -1e-6 && price[k] < FG_SCHED_MILLI + 1e-6;
            price[k] = price[k] < 0 ? 0 : price[k];
        }
    }
    clp.delete_model(model);
    lp_free(&lp);
    return ok;
}

bool fg__prices_set_mix(struct fg__prices *pr, const struct fg_sched_mix *mix)
{
    struct sizes sz;
    double price[FG_SCHED_MILLI];
    memset(pr, 0, sizeof *pr);
    collect(mix, &sz);
    if (sz.n == 0 || !solve(&sz, price))
        return false;
    for (int f = 1; f <= FG_SCHED_MILLI; f++) {
        double v = pr->value[f - 1];
        for (int k = 0; k < sz.n && sz.milli[k] <= f; k++)
            if (price[k] + pr->value[f - sz.milli[k]] > v)
                v = price[k] + pr->value[f - sz.milli[k]];
        pr->value[f] = v;
    }
    if (pr->value[FG_SCHED_MILLI] > FG_SCHED_MILLI + 1e-6)  /* not dual feasible: no set may beat a GPU */
        return false;
    for (int s = 1; s <= FG_SCHED_MILLI; s++) {
        double lo = INFINITY;
        for (int f = s; f <= FG_SCHED_MILLI; f++)
            if (pr->value[f] - pr->value[f - s] < lo)
                lo = pr->value[f] - pr->value[f - s];
        pr->floor[s] = lo;
    }
    pr->valid = true;
    return true;
}
