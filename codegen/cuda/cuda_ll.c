/*
 * cuda_ll.c: the tagged exchange of the step kernel.  In a single-phase
 * cell whose only cross-block data is the states its linears read whole
 * (LSTM, GRU, ...), a block publishes each state value it makes as one
 * 64-bit word (value, tag = step + 1) and the readers poll those words
 * directly when they stage the linear's x: a reader waits for exactly the
 * data it needs, and no step pays for a release fence, a flag and an
 * acquire on top of the data's own trip through L2.  Two copies by step
 * parity: a block overwrites copy t&1 only after it has read every block's
 * step-t+1 values, which those blocks made after reading copy t&1 (the
 * same argument as the double-buffered states).  Tags from an earlier
 * forward must not match, so the runtime zeroes the words before each one
 * (plan xb_zero_floats).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static int32_t slices(const cu_ctx *c, int32_t v)
{
    return c->k[v] < 1 ? 1 : c->k[v];
}

static bool ll_possible(const cu_ctx *c)
{
    const ir_fn *f = c->f;
    /* the tagged words stage fp32 x; a half model's tensor cores want 16-bit */
    if (c->s->n_phases != 1 || (c->half && c->mma))
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
        if (c->kc[i] < (c->cols[xv] + 3) / 4 * 4)
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
    c->ll = ll_possible(c) && (ex == 2 || (ex == 0 && c->B <= 8));
}

/* After the analysis has marked the states read whole (CU_NEED_WHOLE). */
void cu_ll_place(cu_ctx *c)
{
    const ir_fn *f = c->f;
    if (!c->ll)
        return;
    cg_cuda_plan *p = c->plan;
    for (int s = 0; s < f->n_states; s++) {
        int32_t sv = f->states[s].node;
        if (!(c->need[sv] & CU_NEED_WHOLE))
            continue;
        c->xb[sv] = p->xb_floats;
        p->xb_floats += 4 * c->B * c->cols[sv];
    }
    p->xb_zero_floats = p->xb_floats;
}

void cu_emit_ll_prelude(cu_text *t)
{
    cu_printf(t,
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
        for (int sl = 0; sl < slices(c, sv); sl++)
            cu_printf(t,
                      "        rnnc_ll_put(xb + %lld + ((size_t)gb * %lld + %lld + gu) * 2, "
                      "__ldcg(si%d_ + (size_t)gb * %lld + %lld + gu), 1u);\n",
                      (long long)c->xb[sv], C, (long long)sl * c->H, s, C, (long long)sl * c->H);
    }
    cu_printf(t, "    }\n");
}

/* Stages state x of linear lin for step t from copy t&1, tag t+1: up to 8
 * 16-byte polls in flight per thread, repeated until every tag matches. */
void cu_emit_ll_stage(const cu_ctx *c, int32_t lin, cu_text *t)
{
    int32_t xv = c->f->nodes[lin].a[0];
    long long K = (long long)c->cols[xv];
    cu_printf(t,
              "    {\n"
              "        enum { N2_ = BTP * %lld, U_ = (N2_ + NT - 1) / NT < 8 ? (N2_ + NT - 1) / NT : 8 };\n"
              "        const float *src_ = xb + %lld + (size_t)(t & 1) * B * %lld;\n"
              "        const unsigned tag_ = (unsigned)t + 1u;\n"
              "        for (int i0_ = 0; i0_ < N2_; i0_ += U_ * NT) {\n"
              "            float2 v_[U_];\n"
              "            bool ok_;\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) v_[j_] = make_float2(0.f, 0.f);\n"
              "            do {\n"
              "                ok_ = true;\n"
              "#pragma unroll\n"
              "                for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                    const int i = i0_ + j_ * NT + tid, b = i / %lld, c2 = i %% %lld, gb = b0 + b;\n"
              "                    if (i < N2_ && b < BT && gb < B && !rnnc_ll_get2(src_ + ((size_t)gb * %lld + c2 * 2) * 2, tag_, v_[j_])) ok_ = false;\n"
              "                }\n"
              "            } while (!ok_);\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid, b = i / %lld, c2 = i %% %lld;\n"
              "                if (i < N2_) *(float2 *)&sm_[b * %d + c2 * 2] = v_[j_];\n"
              "            }\n"
              "        }\n"
              "    }\n"
              "    __syncthreads();\n",
              K / 2, (long long)c->xb[xv], 2 * K, K / 2, K / 2, K, K / 2, K / 2, c->kp[lin]);
}
