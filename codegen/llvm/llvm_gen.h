/*
 * llvm_gen.h: the internal header of the LLVM generator, shared by the
 * files of codegen/llvm and included nowhere else.  Names start lv_.
 * cpu_plan.c lays a schedule out (cg_cpu_plan, the contract with
 * runtime/); cpu_emit.c, cpu_mk.c and cpu_vec.c write the module through
 * LLVM-C.
 */
#ifndef RNNC_CODEGEN_LLVM_GEN_H
#define RNNC_CODEGEN_LLVM_GEN_H

#include "codegen/codegen.h"

/* The mask slot of a dropout node, -1 when none (p <= 0: the identity). */
int32_t lv_mask_slot(const cg_cpu_plan *p, int32_t node);

#ifdef RNNC_HAVE_LLVM
#include <llvm-c/Core.h>

/* The emitter's state. */
typedef struct lv_em {
    LLVMContextRef cx;
    LLVMModuleRef m;
    LLVMBuilderRef b;
    const cg_cpu_plan *p;
    const char *cpu, *features;
    LLVMTypeRef f32, i32, i64, vt, vi, pf, ppf;
    LLVMValueRef fn;    /* the function being emitted */
    LLVMValueRef *base; /* [n_slots] slot pointers loaded at entry */
    LLVMValueRef *val;  /* [fn->n] values of the current loop iteration */
    LLVMValueRef r, j;  /* row and column of the current iteration */
    int32_t block;      /* the block being emitted */
    rnnc_status st;     /* the first failure */
} lv_em;

/* Vector helpers (cpu_vec.c). */
LLVMValueRef lv_splat(lv_em *e, LLVMValueRef scalar);
LLVMValueRef lv_const(lv_em *e, double v);
LLVMValueRef lv_intrin(lv_em *e, const char *name, LLVMTypeRef over, LLVMValueRef *args,
                          unsigned n);
/* An intrinsic overloaded on several types (e.g. llvm.masked.store). */
LLVMValueRef lv_intrin2(lv_em *e, const char *name, LLVMTypeRef *over, unsigned n_over,
                           LLVMValueRef *args, unsigned n);
LLVMValueRef lv_gep(lv_em *e, LLVMValueRef fptr, LLVMValueRef idx);
LLVMValueRef lv_vload(lv_em *e, LLVMValueRef fptr, unsigned align);
void lv_vstore(lv_em *e, LLVMValueRef v, LLVMValueRef fptr, unsigned align);
LLVMValueRef lv_i64(lv_em *e, int64_t v);
LLVMValueRef lv_fma(lv_em *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
/* exp, sigmoid and tanh on vectors (polynomial, about 1e-7 relative). */
LLVMValueRef lv_exp(lv_em *e, LLVMValueRef x);
LLVMValueRef lv_sigmoid(lv_em *e, LLVMValueRef x);
LLVMValueRef lv_tanh(lv_em *e, LLVMValueRef x);
/* Lanes j + lane < n of the current column j. */
LLVMValueRef lv_lanes_below(lv_em *e, int64_t n);
/* A new function with the module's target attributes and an entry block. */
LLVMValueRef lv_function(lv_em *e, const char *name, LLVMTypeRef ty);
/* Micro-kernels of every GEMM (cpu_mk.c). */
rnnc_status lv_microkernels(lv_em *e, const char *pfx);
#endif /* RNNC_HAVE_LLVM */

#endif /* RNNC_CODEGEN_LLVM_GEN_H */
