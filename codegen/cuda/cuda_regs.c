/*
 * cuda_regs.c: what the step kernel keeps in registers and how it moves
 * memory in bulk.  When every thread owns at most one element (E <= NT),
 * the leaves an element reads (folds, hoisted values, x, states) live in
 * registers: folds are loaded once, states are carried from step to step
 * (written where the next state is made), and the hoisted values and x of
 * step t+1 are loaded while the block waits at the last barrier of step t,
 * so no step waits on global memory for its own element's inputs.  Bulk
 * copies to shared memory issue up to 8 16-byte loads per thread before the
 * first store, so a copy costs about one memory latency, not one per word.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static int32_t slices(const cu_ctx *c, int32_t v)
{
    return c->k[v] < 1 ? 1 : c->k[v];
}

bool cu_in_regs(const cu_ctx *c, int32_t v)
{
    return c->pf && slices(c, v) <= 32;
}

void cu_emit_reg_decls(const cu_ctx *c, cu_text *t)
{
    for (int32_t v = 0; v < c->f->n; v++)
        for (int sl = 0; sl < 32; sl++)
            if (c->pfuse[v] & (1u << sl))
                cu_printf(t, "    float r%d_%d = 0.f;\n", (int)v, sl);
}

/* first: every register at t = 0 (states from copy 0); else the hoisted
 * values and x of step t + 1. */
void cu_emit_reg_loads(const cu_ctx *c, cu_text *t, bool first)
{
    bool any = false, states = false;
    for (int32_t v = 0; v < c->f->n; v++) {
        any |= c->pfuse[v] && (first || c->role[v] == CU_HOIST_BUF || c->role[v] == CU_LEAF_INPUT);
        states |= c->pfuse[v] && c->role[v] == CU_LEAF_STATE;
    }
    if (!any)
        return;
    cu_printf(t,
              "    if (tid < E) {\n"
              "        const int e = tid, u = e %% UT, b = e / UT, gu = u0 + u, gb = b0 + b;\n"
              "        if (b < BT && gu < H && gb < B) {\n"
              "            const size_t row = ROWT(gb, %s);\n"
              "            %s\n"
              "            (void)row; (void)u;\n",
              first ? "TR(gb, 0)" : "TR(gb, t + 1)", first && states ? "const float *cur = st;" : "");
    char ld[1024];
    for (int32_t v = 0; v < c->f->n; v++) {
        if (!c->pfuse[v])
            continue;
        if (!first && c->role[v] != CU_HOIST_BUF && c->role[v] != CU_LEAF_INPUT)
            continue;
        for (int sl = 0; sl < 32; sl++)
            if ((c->pfuse[v] & (1u << sl)) && cu_leaf_load(c, v, sl, ld, sizeof ld))
                cu_printf(t, "            r%d_%d = %s;\n", (int)v, sl, ld);
    }
    cu_printf(t, "        }\n    }\n");
}

/* Each block's rows of every step linear's matrix into shared memory, once. */
void cu_emit_weights(const cu_ctx *c, cu_text *t)
{
    char idx[256], cond[64], src[128], dst[96];
    if (c->stream)
        return; /* read from global memory every step */
    for (int32_t i = 0; i < c->f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int32_t w = c->f->nodes[i].a[1];
        long long K = (long long)c->cols[c->f->nodes[i].a[0]];
        long long R = (long long)slices(c, i) * c->UT;
        if (K % 4 == 0) {
            int q = c->kp[i] / 4;
            snprintf(idx, sizeof idx,
                     "const int r = i / %d, k4 = i %% %d, s = r / UT, gu = u0 + r %% UT; "
                     "(void)k4; (void)s; (void)gu;", q, q);
            snprintf(cond, sizeof cond, "gu < H && k4 * 4 < %lld", K);
            snprintf(src, sizeof src, "wts + %lld + (size_t)(s * H + gu) * %lld + k4 * 4",
                     (long long)c->off[w], K);
            snprintf(dst, sizeof dst, "&sm_[%lld + r * %d + k4 * 4]", (long long)c->wsm[i],
                     c->kp[i]);
            cu_emit_copy4(t, R * q, idx, cond, src, dst, true);
            continue;
        }
        cu_printf(t,
                  "    for (int i = tid; i < %lld; i += NT) {\n"
                  "        const int r = i / %d, kk = i %% %d, s = r / UT, gu = u0 + r %% UT;\n"
                  "        sm_[%lld + i] = (gu < H && kk < %lld) ? wts[%lld + (size_t)(s * H + gu) "
                  "* %lld + kk] : 0.f;\n    }\n",
                  R * c->kp[i], c->kp[i], c->kp[i], (long long)c->wsm[i], K, (long long)c->off[w],
                  K);
    }
}

void cu_emit_copy4(cu_text *t, long long n4, const char *idx, const char *cond,
                   const char *src, const char *dst, bool cached)
{
    /* up to 8 loads in flight per thread; NT is a macro of the kernel */
    cu_printf(t,
              "    {\n"
              "        enum { N4_ = %lld, U_ = (N4_ + NT - 1) / NT < 8 ? (N4_ + NT - 1) / NT : 8 };\n"
              "        for (int i0_ = 0; i0_ < N4_; i0_ += U_ * NT) {\n"
              "            float4 v_[U_];\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid;\n"
              "                v_[j_] = make_float4(0.f, 0.f, 0.f, 0.f);\n"
              "                if (i < N4_) {\n"
              "                    %s\n"
              "                    if (%s) v_[j_] = %s((const float4 *)(%s));\n"
              "                }\n"
              "            }\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid;\n"
              "                if (i < N4_) {\n"
              "                    %s\n"
              "                    *(float4 *)(%s) = v_[j_];\n"
              "                }\n"
              "            }\n"
              "        }\n"
              "    }\n",
              n4, idx, cond, cached ? "__ldg" : "__ldcg", src, idx, dst);
}
