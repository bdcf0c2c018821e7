/*
 * cuda_dropout.c: a cell's own dropout ops in the generated kernels.  In
 * inference a dropout op is the identity; in training (io.drop, set by the
 * runtime per launch) element (t, b, j) of dropout site k keeps its value,
 * scaled by 1 / (1 - p), iff word (t B + b) n + j of the Philox4x32-10
 * stream under the model's seed and counter_hi io.site + k is at least
 * ceil(p 2^32): docs/dropout.md's decision, so every mask bit is the
 * interpreter's.  The generator knows p and k; the seed, the site of the
 * launch's pseudo-layer and the time of the launch's first step (io.t0: a
 * wavefront chunk's start) are launch arguments, so one kernel serves
 * every layer, direction and chunk.
 * Requires: the schedule's roles (a dropout node is a step element or a
 * hoisted value); keeps: nothing but the text it writes.
 */
#include <math.h>
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* Whether the cell has a dropout op that can drop anything (p > 0). */
static bool has_dropout(const cu_ctx *c)
{
    for (int32_t v = 0; v < c->f->n; v++)
        if (c->f->nodes[v].op == IR_DROPOUT && c->f->nodes[v].f > 0.0 &&
            c->role[v] != CU_LEAF_INPUT) /* x comes dropped */
            return true;
    return false;
}

void cu_emit_dropout_helpers(const cu_ctx *c, cu_text *t)
{
    if (!has_dropout(c))
        return;
    /* the word is chosen by selects: an indexed local array would live in
     * local memory (rnnc_philox's w, indexed by constants, stays in registers) */
    cu_printf(t, "/* the cell's dropout ops in training: Philox4x32-10 as docs/dropout.md */\n");
    cu_printf(t, "%s", CG_CUDA_PHILOX);
    cu_printf(t,
              "__device__ __forceinline__ float rnnc_drop(float v, int on, unsigned long long seed,\n"
              "                                           unsigned long long site, unsigned long long i,\n"
              "                                           unsigned long long thr, float scale)\n{\n"
              "    if (!on) return v;\n"
              "    unsigned w[4];\n"
              "    rnnc_philox(i >> 2, seed, site, w);\n"
              "    const unsigned j = (unsigned)(i & 3);\n"
              "    const unsigned x = j == 0 ? w[0] : j == 1 ? w[1] : j == 2 ? w[2] : w[3];\n"
              "    return x >= thr ? v * scale : 0.f;\n}\n");
}

/* Dropout node v applied to the value `a` of element `idx` (a C
 * expression of its index in the site's [T, B, n] tensor, io.t0 not
 * added). */
static bool drop_call(const cu_ctx *c, int32_t v, const char *a, const char *idx, char *buf,
                      size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    if (nd->f <= 0.0) {
        snprintf(buf, n, "(%s)", a);
        return true;
    }
    /* u = w 2^-32 >= p exactly when w >= ceil(p 2^32): both sides exact in
     * double; 2^32 (no word reaches it) drops everything */
    unsigned long long thr = (unsigned long long)ceil(nd->f * 4294967296.0);
    char s[64];
    int k = snprintf(buf, n, "rnnc_drop(%s, io.drop, io.seed, io.site + %d, %s, %lluull, %s)", a,
                     (int)nd->i1, idx, thr,
                     cu_float_lit((double)(float)cm_dropout_scale(nd->f), s, sizeof s));
    return k >= 0 && (size_t)k < n;
}

bool cu_dropout_step(const cu_ctx *c, int32_t v, int sl, const char *a, char *buf, size_t n)
{
    char idx[256];
    long long cols = (long long)c->cols[v];
    /* TR: the true time of row gb at step t, the reverse direction's too */
    if (cols == 1)
        snprintf(idx, sizeof idx, "(unsigned long long)(io.t0 + TR(gb, t)) * B + gb");
    else
        snprintf(idx, sizeof idx,
                 "((unsigned long long)(io.t0 + TR(gb, t)) * B + gb) * %lld + %lld + gu", cols,
                 (long long)sl * (long long)c->H);
    return drop_call(c, v, a, idx, buf, n);
}

bool cu_dropout_row(const cu_ctx *c, int32_t v, const char *a, const char *row, const char *col,
                    char *buf, size_t n)
{
    char idx[512];
    long long B = (long long)c->B, cols = (long long)c->cols[v];
    /* row (of T*B) is t B + b, or b T + t batch-first; T the launch's */
    if (c->cfg.batch_first)
        snprintf(idx, sizeof idx,
                 "((unsigned long long)(io.t0 + (%s) %% T) * %lld + (%s) / T) * %lld + (%s)", row,
                 B, row, cols, col);
    else
        snprintf(idx, sizeof idx, "((unsigned long long)io.t0 * %lld + (%s)) * %lld + (%s)", B,
                 row, cols, col);
    return drop_call(c, v, a, idx, buf, n);
}
