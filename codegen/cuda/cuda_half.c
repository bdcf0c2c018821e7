/*
 * cuda_half.c: half-precision models (F16, BF16) in the generated kernels.
 * x, y and the weight arena hold 16-bit values (rnnc_h, the raw bits, so
 * no CUDA header is needed under NVRTC); every load converts to fp32 and
 * every computation (accumulation, the cell's element-wise math, states,
 * hoisted values, the exchange between blocks, folds) stays fp32, as the
 * interpreter computes on the rounded inputs and weights; only the step's
 * tensor cores (cuda_mma_step.c) multiply h rounded to the dtype.  y is
 * rounded to the dtype (nearest even) when stored.  The step block's
 * weight slices are kept in shared memory as 16-bit values: half the
 * bytes of fp32, which the tiling counts (cuda_tile.c).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

const char *cu_args(const cu_ctx *c)
{
    if (!c->half)
        return CG_CUDA_ARGS;
    return "const rnnc_h *__restrict__ x, rnnc_h *__restrict__ y, float *st, float *hz, "
           "const float *__restrict__ fold, const rnnc_h *__restrict__ wts, float *xb, "
           "float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, "
           "const rnnc_io io";
}

void cu_emit_half_helpers(const cu_ctx *c, cu_text *t)
{
    if (!c->half)
        return;
    bool bf = c->cfg.dtype == RNNC_BF16;
    cu_printf(t, "/* %s model: x, y and weights are 16-bit (rnnc_h: the bits), computed in fp32 */\n"
                 "typedef unsigned short rnnc_h;\n",
              bf ? "bf16" : "f16");
    if (bf)
        /* bf16 is the top half of an fp32: widening is a shift; narrowing
         * rounds to nearest even, NaN stays a quiet NaN */
        cu_printf(t,
                  "__device__ __forceinline__ float rnnc_h2f(rnnc_h h) { return "
                  "__uint_as_float((unsigned)h << 16); }\n"
                  "__device__ __forceinline__ rnnc_h rnnc_f2h(float f)\n{\n"
                  "    unsigned u = __float_as_uint(f);\n"
                  "    if ((u & 0x7fffffffu) > 0x7f800000u) return (rnnc_h)((u >> 16) | 0x40u);\n"
                  "    u += 0x7fffu + ((u >> 16) & 1u);\n"
                  "    return (rnnc_h)(u >> 16);\n}\n"
                  "__device__ __forceinline__ float4 rnnc_h4(uint2 v) { return "
                  "make_float4(__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000u), "
                  "__uint_as_float(v.y << 16), __uint_as_float(v.y & 0xffff0000u)); }\n");
    else
        cu_printf(t,
                  "__device__ __forceinline__ float rnnc_h2f(rnnc_h h) { float f; asm(\"cvt.f32.f16 "
                  "%%0, %%1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
                  "__device__ __forceinline__ rnnc_h rnnc_f2h(float f) { rnnc_h h; asm(\"cvt.rn.f16.f32 "
                  "%%0, %%1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
                  "__device__ __forceinline__ float4 rnnc_h4(uint2 v) { return "
                  "make_float4(rnnc_h2f((rnnc_h)(v.x & 0xffffu)), rnnc_h2f((rnnc_h)(v.x >> 16)), "
                  "rnnc_h2f((rnnc_h)(v.y & 0xffffu)), rnnc_h2f((rnnc_h)(v.y >> 16))); }\n");
    cu_printf(t, "__device__ __forceinline__ uint2 rnnc_pack4(float4 v) { return "
                 "make_uint2(rnnc_f2h(v.x) | ((unsigned)rnnc_f2h(v.y) << 16), "
                 "rnnc_f2h(v.z) | ((unsigned)rnnc_f2h(v.w) << 16)); }\n");
    if (c->cfg.sm < 80)
        return; /* 16-bit mma.sync and cvt to a pair need sm_80 */
    const char *ty = bf ? "bf16" : "f16";
    /* two fp32 values to a pair (lo in the low half), and the hoisted
     * GEMM's d += a b: A 16 x 8 (row), B 8 x 8 (col) */
    cu_printf(t,
              "__device__ __forceinline__ unsigned rnnc_pk2(float lo, float hi)\n{\n"
              "    unsigned r;\n"
              "    asm(\"cvt.rn.%sx2.f32 %%0, %%1, %%2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
              "    return r;\n}\n"
              "__device__ __forceinline__ void rnnc_mma8h(float &d0, float &d1, float &d2, float &d3, "
              "unsigned a0, unsigned a1, unsigned b0)\n{\n"
              "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.%s.%s.f32 "
              "{%%0, %%1, %%2, %%3}, {%%4, %%5}, {%%6}, {%%0, %%1, %%2, %%3};\"\n"
              "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
              "                 : \"r\"(a0), \"r\"(a1), \"r\"(b0));\n}\n",
              ty, ty, ty);
    /* d += a b: A 16 x 16 (row), B 16 x 8 (col), two 16-bit values a
     * register (the step on tensor cores, the 16-bit GEMM tiles) */
    cu_emit_ldsm_helpers(t);
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_mma16(float &d0, float &d1, float &d2, float &d3, "
              "unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)\n{\n"
              "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
              "{%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%0, %%1, %%2, %%3};\"\n"
              "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
              "                 : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n}\n",
              ty, ty);
}
