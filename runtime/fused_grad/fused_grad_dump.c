/*
 * fused_grad_dump.c: the fused backward of a cell as text, for `rnnc dump
 * --stage train`: the split (the record row, the pieces of G, the post
 * ops), then each of the record and recurrence cells and the CUDA source a
 * training call at batch B generates for it (layer 0, fp32 in the model's
 * math mode, one kernel on all 132 SMs of an H100 or H200).  Nothing is
 * compiled: no GPU is needed.
 * Requires: an optimised cell (ir_specialise).  Keeps: everything (reads only).
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/fused_grad/fused_grad.h"

/* The backward step's name for what piece p holds (d_output, h, next_c,
 * saved_gates: as `--stage backward` prints its inputs). */
static const char *piece_name(const fg_kind *k, const fg_piece *p)
{
    for (int j = 0; j < k->g.fn->n_inputs; j++)
        if ((int)k->g.in[j].src == p->src && k->g.in[j].ref == p->ref)
            return k->g.fn->inputs[j].name;
    return "?";
}

static const char *param_name(const ir_fn *f, int p)
{
    return p >= 0 && p < f->n_params ? f->params[p].name : "?";
}

static void put_operand(FILE *o, fg_operand a)
{
    static const char *const where[] = {"x", "G", "DG", "x dropped", "D", "R"}; /* FG_X .. FG_R */
    fprintf(o, "%s[%lld:%lld]", a.where >= 0 && a.where < 6 ? where[a.where] : "?",
            (long long)a.off, (long long)(a.off + a.cols));
}

static void put_split(FILE *o, const ir_fn *f, const fg_kind *k)
{
    fprintf(o, "# record row: [y | next states | saved], %lld columns\n", (long long)k->rec_cols);
    fprintf(o, "# G (the recurrence's input bin, per step): %lld columns\n", (long long)k->g_cols);
    for (int i = 0; i < k->n_pieces; i++) {
        const fg_piece *p = &k->piece[i];
        fprintf(o, "#   [%lld:%lld] %s\n", (long long)p->off, (long long)(p->off + p->cols),
                piece_name(k, p));
    }
    fprintf(o, "# DG (the recurrence's output, per step): %lld columns\n", (long long)k->dg_cols);
    if (k->row)
        fprintf(o, "# D (linear_t products the row cell reads): %lld columns; R (the row "
                   "cell's output): %lld columns\n",
                (long long)k->d_cols, (long long)k->row_cols);
    fprintf(o, "# post ops (GEMMs over all T x B rows after the recurrence%s):\n",
            k->row ? "; the row cell after the products into D" : "");
    for (int i = 0; i < k->n_ops; i++) {
        const fg_op *op = &k->op[i];
        fprintf(o, "#   ");
        if (op->kind == FG_OUTER) {
            fprintf(o, "d%s += ", param_name(f, op->param));
            put_operand(o, op->a);
            fprintf(o, "^T ");
            put_operand(o, op->b);
        } else if (op->kind == FG_ROWSUM) {
            fprintf(o, "d%s += colsum(", param_name(f, op->param));
            put_operand(o, op->a);
            fprintf(o, ")");
        } else if (op->kind == FG_ROWDX) {
            fprintf(o, "dx += ");
            put_operand(o, op->a);
        } else if (op->d_off >= 0) {
            fprintf(o, "D[%lld:] = ", (long long)op->d_off);
            put_operand(o, op->a);
            fprintf(o, " %s", param_name(f, op->wparam));
        } else {
            fprintf(o, "dx += %s", op->drop ? "mask(" : "");
            put_operand(o, op->a);
            fprintf(o, " %s%s", param_name(f, op->wparam), op->drop ? ")" : "");
        }
        fprintf(o, "\n");
    }
}

static rnnc_status put_cell(FILE *o, const char *what, const ir_fn *c, const ir_schedule *s,
                            const cg_cuda_config *cfg)
{
    char *ir = NULL, *src = NULL;
    rnnc_status st = ir_print(c, &ir);
    if (st == RNNC_OK)
        st = cg_cuda_source(s, cfg, &src);
    if (st == RNNC_OK)
        fprintf(o, "\n# ---------------- %s\n%s\n%s", what, ir, src);
    free(ir);
    free(src);
    return st;
}

/* The row cell: its outputs named by the backward step's nodes and its
 * kernel, parameters where a pseudo-layer's lie (fg_param_offsets). */
static rnnc_status put_rows(FILE *o, const ir_fn *f, ir_sizes s, const fg_kind *k)
{
    char *ir = NULL, *src = NULL, labels[FG_MAX][32];
    const char *lp[FG_MAX];
    int64_t *off = malloc(sizeof(int64_t) * ((size_t)f->n_params + 1));
    unsigned smem = 0;
    for (int i = 0; i < k->n_row; i++) {
        snprintf(labels[i], sizeof labels[i], "R[%lld:]", (long long)k->row_off[i]);
        lp[i] = labels[i];
    }
    rnnc_status st = off ? ir_print_results(k->row, lp, k->row_node, k->n_row, &ir)
                         : err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == RNNC_OK) {
        fg_param_offsets(f, s, off);
        st = fg_rows_source(k, s, off, &src, &smem);
    }
    if (st == RNNC_OK)
        fprintf(o, "\n# ---------------- row cell (after the post GEMMs, all T x B rows; "
                   "%u bytes of shared memory a row)\n%s\n%s",
                smem, ir, src);
    free(off);
    free(ir);
    free(src);
    return st;
}

rnnc_status fg_dump(const ir_fn *f, ir_sizes s, int64_t batch, int sm, int math, char **text)
{
    ir_arena *a = ir_arena_create();
    cg_cuda_config cfg = {.sizes = s, .batch = batch, .sm = sm, .math = math, .dtype = RNNC_F32};
    fg_kind k = {0};
    size_t n = 0;
    *text = NULL;
    FILE *o = open_memstream(text, &n);
    rnnc_status st = !a || !o ? err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory")
                              : fg_kind_build(f, s, a, &k);
    if (st != RNNC_OK)
        goto free_kind;
    fprintf(o, "# the fused backward of cell '%s' (I=%lld H=%lld P=%lld), batch %lld, sm_%d\n",
            f->name, (long long)s.I, (long long)s.H, (long long)s.P, (long long)batch, sm);
    put_split(o, f, &k);
    st = put_cell(o, "record cell (the training forward's)", k.rec, &k.rec_sched, &cfg);
    cfg.batch_tile = fg_bwd_batch_tile(batch);
    if (st == RNNC_OK)
        st = put_cell(o, "recurrence cell (the backward's step)", k.bwd, &k.bwd_sched, &cfg);
    if (st == RNNC_OK && k.row)
        st = put_rows(o, f, s, &k);
free_kind:
    fg_kind_free(&k); /* what a refused build made too */
    if (o)
        fclose(o);
    ir_arena_destroy(a);
    if (st != RNNC_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}
