/*
 * cuda_ll.c: the tagged exchange of the step kernel.  In a single-phase
 * cell whose only cross-block data is the states its linears read whole
 * (LSTM, GRU, ...), a block publishes each state value it makes as one
 * 64-bit word (value, tag = step + 1) and the readers poll those words
 * directly when they stage the linear's x: a reader waits for exactly the
 * data it needs, and no step pays for a release, a counter and an
 * acquire on top of the data's own trip through L2.  Two copies by step
 * parity: a block overwrites copy t&1 only after it has read every block's
 * step-t+1 values, which those blocks made after reading copy t&1 (the
 * same argument as the double-buffered states).  Tags from an earlier
 * forward must not match, so the runtime zeroes the words before each one
 * (plan xb_zero_floats).
 *
 * A half model whose step runs on tensor cores multiplies h rounded to its
 * dtype, so a 32-bit word carries all a reader needs: the 16-bit value and
 * a 16-bit tag ((step mod 65535) + 1, never the zeroed word's 0).  The
 * exchange then moves the bytes of the fp32 states the barrier exchanges,
 * without the barrier (the fp32 words' 64 bits made the tagged exchange
 * slower than the barrier at B = 64).
 *
 * Such a model with the barrier (c->h16) publishes the same 16-bit values
 * with no tag, and its steps after the first stage them instead of the
 * fp32 states (step 0 reads the caller's): half the bytes a step, whole or
 * in chunks (bf16 LSTM I = H = 1024, B = 256, h in 128-column chunks:
 * 3.80 -> 2.97 ms on the H100).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

/* 32-bit words: a 16-bit value and a 16-bit tag (a half model on tensor cores). */
static bool words16(const cu_ctx *c)
{
    return c->half && c->mma;
}

/* chunks: whether x may be staged in chunks (the 16-bit copy's plain
 * values, read like the fp32 states; tagged words are polled whole) */
static bool ll_possible(const cu_ctx *c, bool chunks)
{
    const ir_fn *f = c->f;
    /* batch passes (c->NP): kept to the barrier's exchange */
    if (c->s->n_phases != 1 || c->NP > 1)
        return false;
    for (int32_t i = 0; i < f->n; i++) {
        if (c->need[i] & (CU_NEED_XB | CU_NEED_PART))
            return false;
        if (c->role[i] == CU_STEP_GATHER)
            return false;
        if (c->role[i] == CU_STEP_ELEM && (ir_ops[f->nodes[i].op].flags & IR_F_REDUCE))
            return false;
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int32_t xv = f->nodes[i].a[0];
        int r = c->role[xv];
        if (!chunks && c->kc[i] < (c->cols[xv] + 3) / 4 * 4)
            return false; /* x staged in chunks */
        if (r == CU_LEAF_STATE && c->cols[xv] % 4)
            return false;
        if (r != CU_LEAF_STATE && r != CU_LEAF_INPUT && r != CU_HOIST_BUF)
            return false;
    }
    return true;
}

void cu_ll_choose(cu_ctx *c)
{
    int ex = c->cfg.exchange;
    /* Measured on an H100 (docs/fused-kernel.md): tagged words win by far at
     * B=1 (2.9 -> 1.5 us per step); at B=64, where each block stages 16 rows
     * and the polls read twice the bytes, the barrier was as fast or faster. */
    c->ll = ll_possible(c, false) && (ex == 2 || (ex == 0 && c->B <= 8));
    c->h16 = !c->ll && words16(c) && ll_possible(c, true);
    /* the tuning text names it: the autotuner drops a candidate asking for
     * it that comes out as the barrier's kernel */
    size_t len = strlen(c->plan->tuning);
    if (c->ll && len + 3 < sizeof c->plan->tuning)
        memcpy(c->plan->tuning + len, " ll", 4);
}

/* After the analysis has marked the states read whole (CU_NEED_WHOLE). */
void cu_ll_place(cu_ctx *c)
{
    const ir_fn *f = c->f;
    if (!c->ll && !c->h16)
        return;
    cg_cuda_plan *p = c->plan;
    /* floats a value takes over the two copies: 64-bit words 4, 32-bit 2, 16-bit values 1 */
    int per = c->h16 ? 1 : words16(c) ? 2 : 4;
    for (int s = 0; s < f->n_states; s++) {
        int32_t sv = f->states[s].node;
        if (!(c->need[sv] & CU_NEED_WHOLE))
            continue;
        c->xb[sv] = p->xb_floats;
        p->xb_floats += per * c->B * c->cols[sv];
    }
    if (c->ll)
        p->xb_zero_floats = p->xb_floats;
}

void cu_emit_ll_prelude(const cu_ctx *c, cu_text *t)
{
    if (words16(c)) {
        cu_printf(t,
                  "__device__ __forceinline__ unsigned rnnc_ll_tag(int t) { return (unsigned)(t %% 65535) + 1u; }\n"
                  "__device__ __forceinline__ void rnnc_ll_put(float *p, float v, unsigned tag)\n{\n"
                  "    const unsigned w = (tag << 16) | rnnc_f2h(v);\n"
                  "    asm volatile(\"st.relaxed.gpu.global.u32 [%%0], %%1;\" : : \"l\"(p), \"r\"(w) : "
                  "\"memory\");\n}\n"
                  "/* four words: their 16-bit values packed in v, true when every tag matches */\n"
                  "__device__ __forceinline__ bool rnnc_ll_get4(const float *p, unsigned tag, uint2 &v)\n{\n"
                  "    unsigned a, b, c, d;\n"
                  "    asm volatile(\"ld.relaxed.gpu.global.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];\" : \"=r\"(a), "
                  "\"=r\"(b), \"=r\"(c), \"=r\"(d) : \"l\"(p) : \"memory\");\n"
                  "    v = make_uint2((a & 0xffffu) | (b << 16), (c & 0xffffu) | (d << 16));\n"
                  "    return ((a >> 16) == tag) & ((b >> 16) == tag) & ((c >> 16) == tag) & ((d >> 16) == tag);\n}\n");
        return;
    }
    cu_printf(t,
              "__device__ __forceinline__ unsigned rnnc_ll_tag(int t) { return (unsigned)t + 1u; }\n"
              "__device__ __forceinline__ void rnnc_ll_put(float *p, float v, unsigned tag)\n{\n"
              "    const unsigned long long w = ((unsigned long long)tag << 32) | __float_as_uint(v);\n"
              "    asm volatile(\"st.relaxed.gpu.global.u64 [%%0], %%1;\" : : \"l\"(p), \"l\"(w) : "
              "\"memory\");\n}\n"
              "__device__ __forceinline__ bool rnnc_ll_get2(const float *p, unsigned tag, float2 &v)\n{\n"
              "    unsigned long long a, b;\n"
              "    asm volatile(\"ld.relaxed.gpu.global.v2.u64 {%%0, %%1}, [%%2];\" : \"=l\"(a), "
              "\"=l\"(b) : \"l\"(p) : \"memory\");\n"
              "    v = make_float2(__uint_as_float((unsigned)a), __uint_as_float((unsigned)b));\n"
              "    return (unsigned)(a >> 32) == tag && (unsigned)(b >> 32) == tag;\n}\n");
}

/* Word `idx` (a C expression) of state copy `copy` for state sv: fp32
 * words are two floats wide, 32-bit ones one, c->h16's plain values 16
 * bits (an rnnc_h pointer). */
static void word_at(const cu_ctx *c, int32_t sv, const char *copy, const char *idx, char *buf,
                    size_t n)
{
    snprintf(buf, n, "%sxb + %lld%s + ((size_t)(%s) * B * %lld + %s)%s", c->h16 ? "(rnnc_h *)(" : "",
             (long long)c->xb[sv], c->h16 ? ")" : "", copy, (long long)c->cols[sv], idx,
             words16(c) ? "" : " * 2");
}

void cu_emit_ll_put(const cu_ctx *c, int32_t sv, int s, int sl, cu_text *t)
{
    char w[256], idx[128];
    snprintf(idx, sizeof idx, "(size_t)gb * %lld + %lld + gu", (long long)c->cols[sv],
             (long long)sl * c->H);
    word_at(c, sv, "(t + 1) & 1", idx, w, sizeof w);
    if (c->h16)
        cu_printf(t, "        __stcg(%s, rnnc_f2h(n%d_%d));\n", w, s, sl);
    else
        cu_printf(t, "        rnnc_ll_put(%s, n%d_%d, rnnc_ll_tag(t + 1));\n", w, s, sl);
}

void cu_h16_src(const cu_ctx *c, int32_t xv, char *buf, size_t n)
{
    char idx[96];
    snprintf(idx, sizeof idx, "(size_t)gb * %lld + cc", (long long)c->cols[xv]);
    word_at(c, xv, "t & 1", idx, buf, n);
}

/* Before the first step: each block publishes its elements of the initial
 * states (si<k>_: the caller's buffer or copy 0 of st) with tag 1. */
void cu_emit_ll_publish(const cu_ctx *c, cu_text *t)
{
    const ir_fn *f = c->f;
    cu_printf(t,
              "    for (int e = tid; e < E; e += NT) {\n"
              "        const int u = e %% UT, b = e / UT, gu = u0 + u, gb = b0 + b;\n"
              "        if (b >= BT || gu >= H || gb >= B) continue;\n");
    for (int s = 0; s < f->n_states; s++) {
        int32_t sv = f->states[s].node;
        if (c->xb[sv] < 0)
            continue;
        long long C = (long long)c->cols[sv];
        for (int sl = 0; sl < cu_slices(c, sv); sl++) {
            char w[256], idx[128];
            snprintf(idx, sizeof idx, "(size_t)gb * %lld + %lld + gu", C, (long long)sl * c->H);
            word_at(c, sv, "0", idx, w, sizeof w);
            cu_printf(t, "        rnnc_ll_put(%s, __ldcg(si%d_ + %s), rnnc_ll_tag(0));\n", w, s, idx);
        }
    }
    cu_printf(t, "    }\n");
}

/* Stages state x of linear lin for step t from copy t&1, tag of step t:
 * up to 8 16-byte polls in flight per thread, those whose tags did not
 * match polled again until every one does.  16-bit words are staged as
 * the 16-bit x of the tensor cores (smh_), fp32 words as fp32 (sm_). */
void cu_emit_ll_stage(const cu_ctx *c, int32_t lin, cu_text *t)
{
    int32_t xv = c->f->nodes[lin].a[0];
    long long K = (long long)c->cols[xv];
    bool w16 = words16(c);
    int per = w16 ? 4 : 2; /* values a poll */
    char src[256], dst[96];
    word_at(c, xv, "t & 1", "0", src, sizeof src);
    snprintf(dst, sizeof dst, w16 ? "*(uint2 *)&smh_[b * %d + cq * 4]" : "*(float2 *)&sm_[b * %d + cq * 2]",
             c->kp[lin]);
    cu_printf(t,
              "    {\n"
              "        enum { NQ_ = BTP * %lld, U_ = (NQ_ + NT - 1) / NT < 8 ? (NQ_ + NT - 1) / NT : 8 };\n"
              "        const float *const src_ = %s;\n"
              "        const unsigned tag_ = rnnc_ll_tag(t);\n"
              "        for (int i0_ = 0; i0_ < NQ_; i0_ += U_ * NT) {\n"
              "            %s v_[U_];\n"
              "            unsigned todo_ = 0u;\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid, b = i / %lld, gb = b0 + b;\n"
              "                if (i < NQ_ && b < BT && gb < B) todo_ |= 1u << j_;\n"
              "            }\n"
              "            while (todo_) {\n"
              "#pragma unroll\n"
              "                for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                    const int i = i0_ + j_ * NT + tid, b = i / %lld, cq = i %% %lld, gb = b0 + b;\n"
              "                    if ((todo_ >> j_ & 1u) && rnnc_ll_get%d(src_ + ((size_t)gb * %lld + cq * %d)%s, tag_, v_[j_]))\n"
              "                        todo_ &= ~(1u << j_);\n"
              "                }\n"
              "            }\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid, b = i / %lld, cq = i %% %lld, gb = b0 + b;\n"
              "                if (i < NQ_) %s = b < BT && gb < B ? v_[j_] : %s;\n"
              "            }\n"
              "        }\n"
              "    }\n"
              "    __syncthreads();\n",
              K / per, src, w16 ? "uint2" : "float2", K / per, K / per, K / per, per, K, per,
              w16 ? "" : " * 2", K / per, K / per, dst, w16 ? "make_uint2(0u, 0u)" : "make_float2(0.f, 0.f)");
}
