/*
 * cuda_half.c: half-precision models (F16, BF16) in the generated kernels.
 * x, y and the weight arena hold 16-bit values (rnnc_h, the raw bits, so
 * no CUDA header is needed under NVRTC); every load converts to fp32 and
 * every computation (products, accumulation, the cell's element-wise
 * math, states, hoisted values, the exchange between blocks, folds) stays
 * fp32, as the interpreter computes on the rounded inputs and weights.  y
 * is rounded to the dtype (nearest even) when stored.  The step block's
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
           "float *part, unsigned *bar, int T, const int *__restrict__ len, int rev";
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
}

const char *cu_h2f(const cu_ctx *c, const char *e, char *buf, size_t n)
{
    snprintf(buf, n, c->half ? "rnnc_h2f(%s)" : "%s", e);
    return buf;
}

const char *cu_ld4(const cu_ctx *c, const char *ld, const char *p, char *buf, size_t n)
{
    if (c->half)
        snprintf(buf, n, ld[0] ? "rnnc_h4(%s((const uint2 *)(%s)))" : "rnnc_h4(*(const uint2 *)(%s%s))",
                 ld, p);
    else
        snprintf(buf, n, ld[0] ? "%s((const float4 *)(%s))" : "*(const float4 *)(%s%s)", ld, p);
    return buf;
}
