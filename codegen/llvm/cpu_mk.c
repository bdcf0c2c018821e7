/*
 * cpu_mk.c: the GEMM micro-kernels of the CPU generator.  For each linear
 * and each row count mr in 1..plan->mr, one function computes an
 * mr x nr tile of C = A @ W^T from mr rows of A and one packed panel of W
 * (panel layout: [k][nr], zero-padded past n), keeping the whole tile in
 * vector registers across the k loop.  K and both leading dimensions are
 * constants, so the loop is fully specialised to the shape.
 */
#include <stdio.h>

#include "codegen/llvm/llvm_gen.h"

#define MK_MAX_ACC 64

static void emit_tile(lv_em *e, const cg_gemm *g, int mr, LLVMValueRef a, LLVMValueRef bp,
                      LLVMValueRef c)
{
    const cg_cpu_plan *p = e->p;
    int nv = p->nr / p->vw;
    int64_t lda = p->slots[g->a_slot].ld, ldc = p->slots[g->c_slot].ld;
    unsigned balign = (unsigned)(p->vw * 4 > 64 ? 64 : p->vw * 4);
    LLVMBasicBlockRef entry = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(e->cx, e->fn, "k");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->cx, e->fn, "store");
    LLVMBuildBr(e->b, loop);
    LLVMPositionBuilderAtEnd(e->b, loop);
    LLVMValueRef k = LLVMBuildPhi(e->b, e->i64, "k");
    LLVMValueRef acc[MK_MAX_ACC], next[MK_MAX_ACC], bv[8];
    for (int t = 0; t < mr * nv; t++)
        acc[t] = LLVMBuildPhi(e->b, e->vt, "");
    for (int v = 0; v < nv; v++) {
        LLVMValueRef idx = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, k, lv_i64(e, p->nr), ""),
                                        lv_i64(e, (int64_t)v * p->vw), "");
        bv[v] = lv_vload(e, lv_gep(e, bp, idx), balign);
    }
    for (int i = 0; i < mr; i++) {
        LLVMValueRef ai = LLVMBuildAdd(e->b, k, lv_i64(e, i * lda), "");
        LLVMValueRef s = LLVMBuildLoad2(e->b, e->f32, lv_gep(e, a, ai), "");
        LLVMSetAlignment(s, 4);
        LLVMValueRef sv = lv_splat(e, s);
        for (int v = 0; v < nv; v++)
            next[i * nv + v] = lv_fma(e, sv, bv[v], acc[i * nv + v]);
    }
    LLVMValueRef k1 = LLVMBuildAdd(e->b, k, lv_i64(e, 1), "");
    LLVMValueRef more = LLVMBuildICmp(e->b, LLVMIntSLT, k1, lv_i64(e, g->k), "");
    LLVMBuildCondBr(e->b, more, loop, done);
    LLVMValueRef zero = LLVMConstNull(e->vt), kz = lv_i64(e, 0);
    LLVMAddIncoming(k, &kz, &entry, 1);
    LLVMAddIncoming(k, &k1, &loop, 1);
    for (int t = 0; t < mr * nv; t++) {
        LLVMAddIncoming(acc[t], &zero, &entry, 1);
        LLVMAddIncoming(acc[t], &next[t], &loop, 1);
    }
    LLVMPositionBuilderAtEnd(e->b, done);
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++) {
            LLVMValueRef ci = lv_i64(e, i * ldc + (int64_t)v * p->vw);
            lv_vstore(e, next[i * nv + v], lv_gep(e, c, ci), 4);
        }
    LLVMBuildRetVoid(e->b);
}

rnnc_status lv_microkernels(lv_em *e, const char *pfx)
{
    const cg_cpu_plan *p = e->p;
    if (p->mr * (p->nr / p->vw) > MK_MAX_ACC)
        return err_fail(RNNC_ERR_INTERNAL, "cpu: micro-kernel tile too large");
    LLVMTypeRef args[3] = {e->pf, e->pf, e->pf};
    LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(e->cx), args, 3, 0);
    for (int32_t g = 0; g < p->n_gemms; g++)
        for (int mr = 1; mr <= p->mr; mr++) {
            char name[96];
            cg_cpu_mk_name(name, sizeof name, pfx, g, mr);
            LLVMValueRef fn = lv_function(e, name, ty);
            emit_tile(e, &p->gemms[g], mr, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1),
                      LLVMGetParam(fn, 2));
        }
    return RNNC_OK;
}
