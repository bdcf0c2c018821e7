/*
 * cpu_vec.c: small LLVM-C helpers for the CPU generator: vector constants
 * and splats, loads and stores of whole vectors, intrinsics, and the
 * transcendental functions the cells need (exp, sigmoid, tanh), written
 * as polynomials so they vectorise instead of calling libm per lane.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/llvm/llvm_gen.h"

LLVMValueRef lv_i64(lv_em *e, int64_t v)
{
    return LLVMConstInt(e->i64, (unsigned long long)v, 1);
}

LLVMValueRef lv_const(lv_em *e, double v)
{
    LLVMValueRef lanes[16];
    for (int k = 0; k < e->p->vw; k++)
        lanes[k] = LLVMConstReal(e->f32, v);
    return LLVMConstVector(lanes, (unsigned)e->p->vw);
}

LLVMValueRef lv_splat(lv_em *e, LLVMValueRef scalar)
{
    LLVMValueRef v = LLVMBuildInsertElement(e->b, LLVMGetUndef(e->vt), scalar,
                                            LLVMConstInt(e->i32, 0, 0), "");
    LLVMValueRef zero = LLVMConstNull(LLVMVectorType(e->i32, (unsigned)e->p->vw));
    return LLVMBuildShuffleVector(e->b, v, LLVMGetUndef(e->vt), zero, "");
}

LLVMValueRef lv_intrin2(lv_em *e, const char *name, LLVMTypeRef *over, unsigned n_over,
                           LLVMValueRef *args, unsigned n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef decl = LLVMGetIntrinsicDeclaration(e->m, id, over, n_over);
    LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, over, n_over);
    return LLVMBuildCall2(e->b, fty, decl, args, n, "");
}

LLVMValueRef lv_intrin(lv_em *e, const char *name, LLVMTypeRef over, LLVMValueRef *args,
                          unsigned n)
{
    return lv_intrin2(e, name, &over, over ? 1 : 0, args, n);
}

LLVMValueRef lv_gep(lv_em *e, LLVMValueRef fptr, LLVMValueRef idx)
{
    return LLVMBuildInBoundsGEP2(e->b, e->f32, fptr, &idx, 1, "");
}

LLVMValueRef lv_vload(lv_em *e, LLVMValueRef fptr, unsigned align)
{
    LLVMValueRef vp = LLVMBuildBitCast(e->b, fptr, LLVMPointerType(e->vt, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(e->b, e->vt, vp, "");
    LLVMSetAlignment(v, align);
    return v;
}

void lv_vstore(lv_em *e, LLVMValueRef v, LLVMValueRef fptr, unsigned align)
{
    LLVMValueRef vp = LLVMBuildBitCast(e->b, fptr, LLVMPointerType(e->vt, 0), "");
    LLVMSetAlignment(LLVMBuildStore(e->b, v, vp), align);
}

LLVMValueRef lv_fma(lv_em *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    LLVMValueRef args[3] = {a, b, c};
    return lv_intrin(e, "llvm.fmuladd", e->vt, args, 3);
}

/* e^x = 2^n * e^r with n = rint(x / ln 2), |r| <= ln2 / 2; degree-7 Taylor
 * polynomial for e^r, 2^n built in the exponent bits. */
LLVMValueRef lv_exp(lv_em *e, LLVMValueRef x)
{
    LLVMValueRef a2[2] = {x, lv_const(e, -87.0)};
    x = lv_intrin(e, "llvm.maxnum", e->vt, a2, 2);
    a2[0] = x;
    a2[1] = lv_const(e, 88.0);
    x = lv_intrin(e, "llvm.minnum", e->vt, a2, 2);
    LLVMValueRef t = LLVMBuildFMul(e->b, x, lv_const(e, 1.4426950408889634), "");
    LLVMValueRef n = lv_intrin(e, "llvm.rint", e->vt, &t, 1);
    LLVMValueRef r = lv_fma(e, n, lv_const(e, -0.693359375), x);
    r = lv_fma(e, n, lv_const(e, 2.12194440e-4), r);
    static const double c[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
    LLVMValueRef q = lv_const(e, c[0]);
    for (int k = 1; k < 8; k++)
        q = lv_fma(e, q, r, lv_const(e, c[k]));
    LLVMTypeRef vi = LLVMVectorType(e->i32, (unsigned)e->p->vw);
    LLVMValueRef ni = LLVMBuildFPToSI(e->b, n, vi, "");
    LLVMValueRef lanes[16], sh[16];
    for (int k = 0; k < e->p->vw; k++) {
        lanes[k] = LLVMConstInt(e->i32, 127, 0);
        sh[k] = LLVMConstInt(e->i32, 23, 0);
    }
    ni = LLVMBuildAdd(e->b, ni, LLVMConstVector(lanes, (unsigned)e->p->vw), "");
    ni = LLVMBuildShl(e->b, ni, LLVMConstVector(sh, (unsigned)e->p->vw), "");
    return LLVMBuildFMul(e->b, q, LLVMBuildBitCast(e->b, ni, e->vt, ""), "");
}

LLVMValueRef lv_sigmoid(lv_em *e, LLVMValueRef x)
{
    LLVMValueRef ex = lv_exp(e, LLVMBuildFNeg(e->b, x, ""));
    LLVMValueRef one = lv_const(e, 1.0);
    return LLVMBuildFDiv(e->b, one, LLVMBuildFAdd(e->b, one, ex, ""), "");
}

/* tanh|x| = (1 - e^-2|x|) / (1 + e^-2|x|) never overflows, but below
 * |x| = 0.3 the subtraction cancels (at |x| = 1e-3 it leaves 3e-5 of
 * relative error), so there the odd Taylor series to x^9 is used: its
 * first dropped term is under half an ulp at 0.3.  Sign restored last. */
LLVMValueRef lv_tanh(lv_em *e, LLVMValueRef x)
{
    LLVMValueRef ax = lv_intrin(e, "llvm.fabs", e->vt, &x, 1);
    LLVMValueRef t = lv_exp(e, LLVMBuildFMul(e->b, ax, lv_const(e, -2.0), ""));
    LLVMValueRef one = lv_const(e, 1.0);
    LLVMValueRef big = LLVMBuildFDiv(e->b, LLVMBuildFSub(e->b, one, t, ""),
                                     LLVMBuildFAdd(e->b, one, t, ""), "");
    static const double c[] = {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3};
    LLVMValueRef x2 = LLVMBuildFMul(e->b, ax, ax, "");
    LLVMValueRef q = lv_const(e, c[0]);
    for (int k = 1; k < 4; k++)
        q = lv_fma(e, q, x2, lv_const(e, c[k]));
    LLVMValueRef small = lv_fma(e, LLVMBuildFMul(e->b, q, x2, ""), ax, ax);
    LLVMValueRef is_small = LLVMBuildFCmp(e->b, LLVMRealOLT, ax, lv_const(e, 0.3), "");
    LLVMValueRef a2[2] = {LLVMBuildSelect(e->b, is_small, small, big, ""), x};
    return lv_intrin(e, "llvm.copysign", e->vt, a2, 2);
}

LLVMValueRef lv_lanes_below(lv_em *e, int64_t n)
{
    unsigned vw = (unsigned)e->p->vw;
    LLVMValueRef iota[16], lim[16];
    for (unsigned k = 0; k < vw; k++) {
        iota[k] = LLVMConstInt(e->i64, k, 0);
        lim[k] = LLVMConstInt(e->i64, (unsigned long long)n, 0);
    }
    LLVMValueRef jv = LLVMBuildInsertElement(e->b, LLVMGetUndef(LLVMVectorType(e->i64, vw)), e->j,
                                             LLVMConstInt(e->i32, 0, 0), "");
    LLVMValueRef zero = LLVMConstNull(LLVMVectorType(e->i32, vw));
    jv = LLVMBuildShuffleVector(e->b, jv, LLVMGetUndef(LLVMVectorType(e->i64, vw)), zero, "");
    jv = LLVMBuildAdd(e->b, jv, LLVMConstVector(iota, vw), "");
    return LLVMBuildICmp(e->b, LLVMIntSLT, jv, LLVMConstVector(lim, vw), "");
}

static void add_attr(lv_em *e, LLVMValueRef fn, const char *k, const char *v)
{
    LLVMAttributeRef a = LLVMCreateStringAttribute(e->cx, k, (unsigned)strlen(k), v,
                                                   (unsigned)strlen(v));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
}

LLVMValueRef lv_function(lv_em *e, const char *name, LLVMTypeRef ty)
{
    LLVMValueRef fn = LLVMAddFunction(e->m, name, ty);
    if (e->cpu && *e->cpu)
        add_attr(e, fn, "target-cpu", e->cpu);
    if (e->features && *e->features)
        add_attr(e, fn, "target-features", e->features);
    char w[16];
    snprintf(w, sizeof w, "%d", e->p->vw * 32);
    add_attr(e, fn, "min-legal-vector-width", w);
    add_attr(e, fn, "prefer-vector-width", w);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->cx, nounwind, 0));
    LLVMPositionBuilderAtEnd(e->b, LLVMAppendBasicBlockInContext(e->cx, fn, "entry"));
    e->fn = fn;
    return fn;
}
