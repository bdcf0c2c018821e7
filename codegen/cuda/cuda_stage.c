/*
 * cuda_stage.c: how the step kernel puts a linear's x (the whole vector
 * it multiplies: h, x of the step, a value of an earlier phase) into
 * shared memory for the block's batch rows: whole or in chunks of
 * columns, by 16-byte copies from one contiguous vector or a gather of
 * an expression, a half model's states from their 16-bit copy, and where
 * the registers allow each chunk fetched while the one before is
 * multiplied.  Bulk copies (cuda_bulk.c) and tagged words (cuda_ll.c)
 * are the other two ways; cu_emit_chunk_open picks among them.
 * Requires: the shared-memory plan (c->xkp, c->kc) and the register
 * caches (cuda_regs.c); keeps: x at sm_ (smh_ for 16-bit tensor-core
 * operands), row b at b * xkp.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* A plain base pointer for X's row gb, when X is one contiguous vector. */
static bool plain_base(const cu_ctx *c, int32_t v, char *buf, size_t n)
{
    long long K = (long long)c->cols[v];
    switch (c->role[v]) {
    case CU_LEAF_STATE:
        snprintf(buf, n, "s%d_ + (size_t)gb * %lld", ir_state_of(c->f, v), K);
        return true;
    case CU_LEAF_INPUT:
        snprintf(buf, n, "x + ROW(gb) * %lld", K);
        return true;
    case CU_HOIST_BUF:
        snprintf(buf, n, "hz + (size_t)%lld * TB + ROW(gb) * %lld", (long long)c->off[v], K);
        return true;
    case CU_STEP_ELEM:
    case CU_STEP_LINEAR:
        snprintf(buf, n, "xb + %lld + (size_t)gb * %lld", (long long)c->xb[v], K);
        return c->xb[v] >= 0;
    default:
        return false;
    }
}

/* Chunk loads a thread makes at most when x is fetched a chunk ahead
 * (32 registers of float4s). */
#define AHEAD_MAX 8

/* A half model's state x read from its 16-bit copy (c->h16) a chunk
 * ahead: 8 values a load, 16-byte loads and stores. */
static bool ahead16(const cu_ctx *c, int32_t lin)
{
    int32_t xv = c->f->nodes[lin].a[0];
    return c->half && c->h16 && c->role[xv] == CU_LEAF_STATE && c->xb[xv] >= 0 &&
           c->xb[xv] % 4 == 0 && c->cols[xv] % 8 == 0 && c->kc[lin] % 8 == 0 &&
           c->xkp[lin] % 8 == 0;
}

/* Values a fetch-ahead load carries: 8 halves or 4 floats (16 bytes). */
static int ahead_width(const cu_ctx *c, int32_t lin)
{
    return ahead16(c, lin) ? 8 : 4;
}

static long long ahead_loads(const cu_ctx *c, int32_t lin)
{
    long long n = (long long)c->BTP * (c->kc[lin] / ahead_width(c, lin));
    return (n + c->NT - 1) / c->NT;
}

static bool stage_ahead(const cu_ctx *c, int32_t lin)
{
    int32_t xv = c->f->nodes[lin].a[0];
    char base[256];
    /* tensor cores only: the FFMA step with W_hh on chip and x fetched
     * ahead still lost to streaming W_hh (I = H = 1024, B = 256 13.72
     * against 13.24 ms; B = 64 4.18 against 3.68).  Half models fetch
     * from the 16-bit copy: bf16 LSTM I = H = 1024, B = 256 2.94-2.97 ->
     * 2.79-2.80 ms, f16 2.93-2.94 -> 2.84, B = 128 and the GRU level. */
    if (ahead16(c, lin) && c->kc[lin] < c->cols[xv])
        return ahead_loads(c, lin) <= AHEAD_MAX;
    return c->mma && !c->half && !c->ll && c->kc[lin] < c->cols[xv] && c->cols[xv] % 4 == 0 &&
           c->kc[lin] % 4 == 0 && ahead_loads(c, lin) <= AHEAD_MAX &&
           plain_base(c, xv, base, sizeof base);
}

/* The head of a fetch-ahead loop, both widths: pf_[j_] zeroed, then the
 * load's row b and column cc in chunk `ch` for the caller's test and load
 * (it closes the two braces); `bound` caps i. */
static void fetch_open(const cu_ctx *c, int32_t lin, const char *ch, const char *bound,
                       cu_text *t)
{
    long long KC = c->kc[lin];
    int w = ahead_width(c, lin);
    cu_printf(t,
              "#pragma unroll\n"
              "    for (int j_ = 0; j_ < %lld; ++j_) {\n"
              "        const int i = j_ * NT + tid;\n"
              "        pf_[j_] = %s;\n"
              "        if (i < %s) {\n"
              "            const int b = i / %lld, gb = b0 + b, cc = (%s) * %lld + i %% %lld * %d;\n",
              ahead_loads(c, lin), ahead16(c, lin) ? "make_uint4(0u, 0u, 0u, 0u)"
                                                    : "make_float4(0.f, 0.f, 0.f, 0.f)",
              bound, KC / w, ch, KC, KC / w, w);
}

/* Loads chunk `ch` of linear lin's x into registers pf_ (declared when
 * decl).  The 16-bit fetch: step 0 reads the caller's fp32 state and
 * packs it, later steps the 16-bit copy (8 values, 16 bytes, a load). */
static void emit_fetch(const cu_ctx *c, int32_t lin, const char *ch, bool decl, cu_text *t)
{
    int32_t xv = c->f->nodes[lin].a[0];
    long long K = (long long)c->cols[xv], KC = c->kc[lin];
    bool h = ahead16(c, lin);
    char base[256] = "", h16[320] = "", bound[48];
    plain_base(c, xv, base, sizeof base);
    if (decl)
        cu_printf(t, "    %s pf_[%lld];\n", h ? "uint4" : "float4", ahead_loads(c, lin));
    /* (the 16-bit bound is the number, the fp32 one BTP times the loads a row) */
    if (h)
        snprintf(bound, sizeof bound, "%lld", (long long)c->BTP * (KC / 8));
    else
        snprintf(bound, sizeof bound, "BTP * %lld", KC / 4);
    fetch_open(c, lin, ch, bound, t);
    if (!h) {
        cu_printf(t,
                  "            if (b < BT && gb < B && cc < %lld) pf_[j_] = __ldcg((const float4 *)(%s + cc));\n"
                  "        }\n"
                  "    }\n",
                  K, base);
        return;
    }
    cu_h16_src(c, xv, h16, sizeof h16);
    cu_printf(t,
              "            if (b < BT && gb < B && cc < %lld) {\n"
              "                if (t == 0) {\n"
              "                    const uint2 lo_ = rnnc_pack4(__ldcg((const float4 *)(%s + cc)));\n"
              "                    const uint2 hi_ = rnnc_pack4(__ldcg((const float4 *)(%s + cc + 4)));\n"
              "                    pf_[j_] = make_uint4(lo_.x, lo_.y, hi_.x, hi_.y);\n"
              "                } else {\n"
              "                    pf_[j_] = __ldcg((const uint4 *)(%s));\n"
              "                }\n"
              "            }\n"
              "        }\n"
              "    }\n",
              K, base, base, h16);
}

static void emit_put(const cu_ctx *c, int32_t lin, cu_text *t)
{
    long long KC = c->kc[lin];
    int w = ahead_width(c, lin);
    bool h = ahead16(c, lin);
    cu_printf(t,
              "#pragma unroll\n"
              "    for (int j_ = 0; j_ < %lld; ++j_) {\n"
              "        const int i = j_ * NT + tid;\n"
              "        if (i < BTP * %lld)\n"
              "            *(%s *)&%s[i / %lld * %d + i %% %lld * %d] = pf_[j_];\n"
              "    }\n"
              "    __syncthreads();\n",
              ahead_loads(c, lin), KC / w, h ? "uint4" : "float4", h ? "smh_" : "sm_", KC / w,
              c->xkp[lin], KC / w, w);
}

/* x (or its chunk: columns from c0, KC of them) from the states' 16-bit
 * copy (c->h16): 16-byte loads where the rows allow, else 8-byte.  Half
 * the load instructions took the bf16 LSTM at I = H = 1024, B = 64 from
 * 0.912 to 0.864 ms on the H100 (bench/results/h100/h16w/): the staging
 * issues its 64 KB a block a step in 8 loads a thread, not 16. */
static void emit_copy_h16(const cu_ctx *c, int32_t lin, const char *c0, const char *cond,
                          const char *src, cu_text *t)
{
    int32_t xv = c->f->nodes[lin].a[0];
    long long K = (long long)c->cols[xv], KC = c->kc[lin];
    int w = K % 8 == 0 && KC % 8 == 0 && c->xb[xv] % 4 == 0 ? 8 : 4;
    char idx[200], dst[64];
    snprintf(idx, sizeof idx,
             "const int b = i / %lld, cw = i %% %lld, gb = b0 + b, cc = %s%lld + cw * %d; "
             "(void)gb; (void)cc;", KC / w, KC / w, c0, KC, w);
    snprintf(dst, sizeof dst, "&smh_[b * %d + cw * %d]", c->xkp[lin], w);
    if (w == 8)
        cu_emit_copy8hh(t, c->BTP * (KC / 8), idx, cond, src, dst);
    else
        cu_emit_copy4hh(t, c->BTP * (KC / 4), idx, cond, src, dst);
}

/* Stages columns [ch*kc, ch*kc + kc) of linear lin's x (ch a variable of
 * the generated code, 0 when unchunked) for the block's batch rows. */
static rnnc_status emit_stage(const cu_ctx *c, int32_t lin, bool chunked, cu_text *t)
{
    int32_t xv = c->f->nodes[lin].a[0];
    long long K = (long long)c->cols[xv], KC = c->kc[lin];
    char base[256], g[4096], col[64];
    if (c->ll && c->role[xv] == CU_LEAF_STATE && c->xb[xv] >= 0 && !chunked) {
        cu_emit_ll_stage(c, lin, t);
        return RNNC_OK;
    }
    const char *c0 = chunked ? "ch_ * " : "0 * ";
    /* a half model's x is 16-bit: the gather loop below converts it */
    bool conv = c->half && c->role[xv] == CU_LEAF_INPUT;
    if (K % 4 == 0 && !conv && plain_base(c, xv, base, sizeof base)) {
        char idx[200], src[320], dst[64], cond[96];
        snprintf(idx, sizeof idx,
                 "const int b = i / %lld, c4 = i %% %lld, gb = b0 + b, cc = %s%lld + c4 * 4; "
                 "(void)gb; (void)cc;", KC / 4, KC / 4, c0, KC);
        snprintf(src, sizeof src, "%s + cc", base);
        snprintf(dst, sizeof dst, "&sm_[b * %d + c4 * 4]", c->xkp[lin]);
        snprintf(cond, sizeof cond, "b < BT && gb < B && cc < %lld", K);
        bool h16 = c->h16 && c->role[xv] == CU_LEAF_STATE && c->xb[xv] >= 0;
        if (c->half && c->mma) {
            /* 16-bit x for the tensor cores (cuda_mma_step.c); after step 0
             * from the states' 16-bit copy where there is one */
            snprintf(dst, sizeof dst, "&smh_[b * %d + c4 * 4]", c->xkp[lin]);
            if (h16)
                cu_printf(t, "    if (t == 0)\n");
            cu_emit_copy4h(t, c->BTP * (KC / 4), idx, cond, src, dst);
            if (h16) {
                cu_h16_src(c, xv, src, sizeof src);
                cu_printf(t, "    else\n");
                emit_copy_h16(c, lin, c0, cond, src, t);
            }
        } else {
            cu_emit_copy4(t, c->BTP * (KC / 4), idx, cond, src, dst, false);
        }
    } else {
        snprintf(col, sizeof col, "cc");
        if (!cu_gather_expr(c, xv, col, g, sizeof g))
            return RNNC_ERR_UNSUPPORTED;
        cu_printf(t,
                  "    for (int i = tid; i < BTP * %lld; i += NT) {\n"
                  "        const int b = i / %lld, cx = i %% %lld, gb = b0 + b, cc = %s%lld + cx;\n"
                  "        float v = 0.f;\n"
                  "        if (b < BT && gb < B && cc < %lld) { const size_t row = ROW(gb); "
                  "(void)row; v = %s; }\n"
                  "        %s[b * %d + cx] = %s;\n    }\n",
                  KC, KC, KC, c0, KC, K, g, c->half && c->mma ? "smh_" : "sm_", c->xkp[lin],
                  c->half && c->mma ? "rnnc_f2h(v)" : "v");
    }
    cu_printf(t, "    __syncthreads();\n");
    return RNNC_OK;
}

/* Opens the chunk loop (when chunked: loop variable ch_) and stages x for
 * a linear's multiply, both kinds.  Where x can be fetched ahead
 * (stage_ahead), each chunk is loaded into registers while the one before
 * is multiplied: TF32 LSTM I = H = 1024, B = 256 in 32-column chunks 7.60
 * -> 6.95 ms on the H100 (bench/results/h100/chunks/). */
rnnc_status cu_emit_chunk_open(const cu_ctx *c, int32_t lin, bool chunked, cu_text *t)
{
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]], KC = c->kc[lin];
    long long NCH = (K + KC - 1) / KC;
    if (chunked && cu_bulk_staged(c, lin)) {
        cu_emit_bulk_open(c, lin, t);
        return RNNC_OK;
    }
    if (!chunked || !stage_ahead(c, lin)) {
        if (chunked)
            cu_printf(t, "    for (int ch_ = 0; ch_ < %lld; ++ch_) {\n", NCH);
        return emit_stage(c, lin, chunked, t);
    }
    emit_fetch(c, lin, "0", true, t);
    cu_printf(t, "    for (int ch_ = 0; ch_ < %lld; ++ch_) {\n", NCH);
    emit_put(c, lin, t);
    cu_printf(t, "    if (ch_ + 1 < %lld) {\n", NCH);
    emit_fetch(c, lin, "ch_ + 1", false, t);
    cu_printf(t, "    }\n");
    return RNNC_OK;
}
