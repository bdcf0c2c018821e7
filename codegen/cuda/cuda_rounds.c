/*
 * cuda_rounds.c: the rounds of the hoisted work.  A hoisted linear whose x
 * is not the cell's input (linear(layernorm(x), W), linear(tanh(linear(x,
 * W1)), W2), a linear of x dropped beside one of x itself) needs that x
 * made for every row before its GEMM runs.  So the hoisted launches come in
 * rounds: round r runs its GEMMs, then its row kernel; a GEMM whose x is
 * made in round r runs in round r + 1, a row-kernel value in the first
 * round after everything it reads.  A cell whose linears all read x has
 * one round: the GEMMs, then the row kernel, as before.
 * Requires: the roles (cu_analyse's placement: c->role, c->gemm, every
 * hoisted linear's x a buffer or the input).  Keeps: c->round, c->n_rounds;
 * a row-kernel temporary that a later round reads becomes a buffer in hz
 * (shared memory lasts one kernel).
 */
#include "codegen/cuda/cuda_gen.h"

static int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

bool cu_is_hoisted_gemm(const cu_ctx *c, int32_t v)
{
    return c->f->nodes[v].op == IR_LINEAR && c->s->hoist.part[v] == IR_PART_HOIST &&
           (c->role[v] == CU_HOIST_BUF || c->role[v] == CU_HOIST_TMP);
}

/* The round after which v can be read: 0 for what every launch reads (x,
 * folds, literals). */
static int32_t ready(const cu_ctx *c, int32_t v)
{
    int r = c->role[v];
    if (r == CU_LEAF_INPUT || r == CU_LEAF_CONST || r == CU_LEAF_FOLD ||
        c->s->hoist.part[v] == IR_PART_FOLD)
        return 0;
    return c->round[v];
}

/* The round of hoisted node v, from its operands' (node order is
 * topological). */
static int32_t round_of(const cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    if (cu_is_hoisted_gemm(c, v))
        return ready(c, n->a[0]) + 1;
    if (c->gemm[v] >= 0)
        return c->round[c->gemm[v]]; /* its epilogue reads only that GEMM and folds */
    int32_t r = 1;
    for (int k = 0; k < 3; k++)
        if (n->a[k] >= 0)
            r = max32(r, ready(c, n->a[k]));
    return r;
}

/* Whether a hoisted value lives only in a row kernel's shared memory. */
static bool row_temporary(const cu_ctx *c, int32_t v)
{
    return c->role[v] == CU_HOIST_TMP && c->f->nodes[v].op != IR_LINEAR;
}

/* Stores in hz every row temporary that node u (of round r) reads from an
 * earlier round, through the chunks and concats it reads through. */
static void keep_read(cu_ctx *c, int32_t u, int32_t r)
{
    for (int k = 0; k < 3; k++) {
        int32_t o = c->f->nodes[u].a[k];
        if (o < 0 || c->s->hoist.part[o] != IR_PART_HOIST)
            continue;
        int op = c->f->nodes[o].op;
        if (row_temporary(c, o) && (cu_is_view_op(op) || op == IR_CONCAT)) {
            keep_read(c, o, r); /* read through, never made */
            continue;
        }
        if (row_temporary(c, o) && c->round[o] < r) {
            c->role[o] = CU_HOIST_BUF;
            c->gemm[o] = -1;
            c->off[o] = c->plan->hz_cols;
            c->plan->hz_cols += (c->cols[o] + 3) & ~(int64_t)3;
        }
    }
}

void cu_place_rounds(cu_ctx *c)
{
    const uint8_t *part = c->s->hoist.part;
    c->n_rounds = 0;
    for (int32_t v = 0; v < c->f->n; v++) {
        c->round[v] = 0;
        int r = c->role[v];
        if (part[v] != IR_PART_HOIST || (r != CU_HOIST_BUF && r != CU_HOIST_TMP && r != CU_HOIST_VIEW))
            continue;
        c->round[v] = round_of(c, v);
        keep_read(c, v, c->round[v]);
        if (r != CU_HOIST_VIEW)
            c->n_rounds = max32(c->n_rounds, c->round[v]);
    }
}
