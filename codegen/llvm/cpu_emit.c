/*
 * cpu_emit.c: the LLVM module of a CPU plan.  Per part and stage, one
 * element-wise function ew(slots, r0, r1) walks rows r0..r1 and, per row,
 * runs the stage's blocks in order: fused column loops over whole vectors
 * (values of one loop stay in registers; stored values go to their slots),
 * layernorm statistics before the loop that normalises, sum/mean
 * reductions and concat copies.  Buffers are padded (codegen.h), so loads
 * and stores are whole vectors; only reductions mask the tail lanes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "codegen/llvm/llvm_gen.h"

/* A do-while loop over j = 0, vw, .. < cols; the body is emitted by the caller. */
typedef struct em_loop {
    LLVMBasicBlockRef pre, head;
    LLVMValueRef j;
} em_loop;

static void loop_open(lv_em *e, em_loop *l)
{
    l->pre = LLVMGetInsertBlock(e->b);
    l->head = LLVMAppendBasicBlockInContext(e->cx, e->fn, "j");
    LLVMBuildBr(e->b, l->head);
    LLVMPositionBuilderAtEnd(e->b, l->head);
    l->j = LLVMBuildPhi(e->b, e->i64, "j");
    e->j = l->j;
}

static void loop_close(lv_em *e, em_loop *l, int64_t cols)
{
    LLVMValueRef j1 = LLVMBuildAdd(e->b, l->j, lv_i64(e, e->p->vw), "");
    LLVMValueRef more = LLVMBuildICmp(e->b, LLVMIntSLT, j1, lv_i64(e, cols), "");
    LLVMBasicBlockRef tail = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(e->cx, e->fn, "");
    LLVMBuildCondBr(e->b, more, l->head, after);
    LLVMValueRef z = lv_i64(e, 0);
    LLVMAddIncoming(l->j, &z, &l->pre, 1);
    LLVMAddIncoming(l->j, &j1, &tail, 1);
    LLVMPositionBuilderAtEnd(e->b, after);
}

/* Address of column 0 of node a's value in the current row (slot + view offset). */
static LLVMValueRef row_addr(lv_em *e, int32_t a)
{
    const cg_cpu_plan *p = e->p;
    int32_t s = p->node_slot[a];
    if (s < 0) {
        if (e->st == RNNC_OK)
            e->st = err_fail(RNNC_ERR_INTERNAL, "cpu: node %d has no storage", a);
        return LLVMConstNull(e->pf);
    }
    LLVMValueRef idx = lv_i64(e, p->node_off[a]);
    if (p->slots[s].kind != CG_SLOT_FOLD)
        idx = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, e->r, lv_i64(e, p->slots[s].ld), ""), idx,
                           "");
    return lv_gep(e, e->base[s], idx);
}

static int64_t node_cols(const lv_em *e, int32_t a)
{
    const ir_node *n = &e->p->fn->nodes[a];
    return n->kind == IR_SCALAR ? 1 : ir_dim_eval(n->cols, e->p->sizes);
}

/* Operand a of a node computed at width `cols`, at the current (r, j). */
static LLVMValueRef operand(lv_em *e, int32_t a, int64_t cols)
{
    const ir_node *n = &e->p->fn->nodes[a];
    if (e->p->block_of[a] == e->block && e->val[a])
        return e->val[a];
    if (n->op == IR_CONST)
        return lv_const(e, n->f);
    LLVMValueRef at = row_addr(e, a);
    if (node_cols(e, a) == 1 && cols > 1) {
        LLVMValueRef s = LLVMBuildLoad2(e->b, e->f32, at, "");
        LLVMSetAlignment(s, 4);
        return lv_splat(e, s);
    }
    return lv_vload(e, lv_gep(e, at, e->j), 4);
}

static LLVMValueRef unary(lv_em *e, int op, LLVMValueRef x)
{
    switch (op) {
    case IR_NEG: return LLVMBuildFNeg(e->b, x, "");
    case IR_SIGMOID: return lv_sigmoid(e, x);
    case IR_TANH: return lv_tanh(e, x);
    case IR_EXP: return lv_exp(e, x);
    case IR_LOG: return lv_intrin(e, "llvm.log", e->vt, &x, 1);
    case IR_SQRT: return lv_intrin(e, "llvm.sqrt", e->vt, &x, 1);
    case IR_RSQRT:
        return LLVMBuildFDiv(e->b, lv_const(e, 1.0), lv_intrin(e, "llvm.sqrt", e->vt, &x, 1),
                             "");
    case IR_RELU: {
        LLVMValueRef z = LLVMConstNull(e->vt);
        return LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOGT, x, z, ""), x, z, "");
    }
    default: return NULL;
    }
}

static LLVMValueRef binary(lv_em *e, int op, LLVMValueRef a, LLVMValueRef b)
{
    switch (op) {
    case IR_ADD: return LLVMBuildFAdd(e->b, a, b, "");
    case IR_SUB: return LLVMBuildFSub(e->b, a, b, "");
    case IR_MUL: return LLVMBuildFMul(e->b, a, b, "");
    case IR_DIV: return LLVMBuildFDiv(e->b, a, b, "");
    default: return NULL;
    }
}

/* Horizontal sum over the valid lanes of node a's row (a stored value). */
static LLVMValueRef row_sum(lv_em *e, int32_t a, LLVMValueRef center)
{
    int64_t cols = node_cols(e, a);
    LLVMValueRef at = row_addr(e, a);
    em_loop l;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    loop_open(e, &l);
    LLVMValueRef acc = LLVMBuildPhi(e->b, e->vt, "acc");
    LLVMValueRef v = lv_vload(e, lv_gep(e, at, e->j), 4);
    if (center) {
        v = LLVMBuildFSub(e->b, v, center, "");
        v = LLVMBuildFMul(e->b, v, v, "");
    }
    v = LLVMBuildSelect(e->b, lv_lanes_below(e, cols), v, LLVMConstNull(e->vt), "");
    LLVMValueRef acc1 = LLVMBuildFAdd(e->b, acc, v, "");
    LLVMBasicBlockRef body = LLVMGetInsertBlock(e->b);
    loop_close(e, &l, cols);
    LLVMValueRef z = LLVMConstNull(e->vt);
    LLVMAddIncoming(acc, &z, &pre, 1);
    LLVMAddIncoming(acc, &acc1, &body, 1);
    LLVMValueRef args[2] = {LLVMConstReal(e->f32, 0.0), acc1};
    return lv_intrin(e, "llvm.vector.reduce.fadd", e->vt, args, 2);
}

/* Mean and 1/sqrt(var + eps) of a layernorm's input row, as splats. */
static void ln_stats(lv_em *e, int32_t i, LLVMValueRef *mean, LLVMValueRef *rstd)
{
    const ir_node *n = &e->p->fn->nodes[i];
    double inv = 1.0 / (double)node_cols(e, n->a[0]);
    LLVMValueRef m = LLVMBuildFMul(e->b, row_sum(e, n->a[0], NULL), LLVMConstReal(e->f32, inv), "");
    *mean = lv_splat(e, m);
    LLVMValueRef var = LLVMBuildFMul(e->b, row_sum(e, n->a[0], *mean), LLVMConstReal(e->f32, inv),
                                     "");
    var = LLVMBuildFAdd(e->b, var, LLVMConstReal(e->f32, n->f), "");
    LLVMValueRef sd = lv_intrin(e, "llvm.sqrt", e->f32, &var, 1);
    *rstd = lv_splat(e, LLVMBuildFDiv(e->b, LLVMConstReal(e->f32, 1.0), sd, ""));
}

static LLVMValueRef layernorm(lv_em *e, const ir_node *n, int64_t cols, LLVMValueRef mean,
                              LLVMValueRef rstd)
{
    LLVMValueRef x = LLVMBuildFSub(e->b, operand(e, n->a[0], cols), mean, "");
    x = LLVMBuildFMul(e->b, x, rstd, "");
    if (n->a[1] >= 0)
        x = LLVMBuildFMul(e->b, x, operand(e, n->a[1], cols), "");
    if (n->a[2] >= 0)
        x = LLVMBuildFAdd(e->b, x, operand(e, n->a[2], cols), "");
    return x;
}

static LLVMValueRef dropout(lv_em *e, int32_t i, int64_t cols)
{
    const ir_node *n = &e->p->fn->nodes[i];
    LLVMValueRef x = operand(e, n->a[0], cols);
    int32_t ms = lv_mask_slot(e->p, i);
    if (ms < 0)
        return x;
    LLVMValueRef idx = LLVMBuildMul(e->b, e->r, lv_i64(e, e->p->slots[ms].ld), "");
    LLVMValueRef at = lv_gep(e, e->base[ms], LLVMBuildAdd(e->b, idx, e->j, ""));
    return LLVMBuildFMul(e->b, x, lv_vload(e, at, 4), "");
}

static LLVMValueRef pointwise(lv_em *e, int32_t i, int64_t cols, LLVMValueRef mean,
                              LLVMValueRef rstd)
{
    const ir_node *n = &e->p->fn->nodes[i];
    LLVMValueRef v = NULL;
    if (n->op == IR_LAYERNORM)
        v = layernorm(e, n, cols, mean, rstd);
    else if (n->op == IR_DROPOUT)
        v = dropout(e, i, cols);
    else if (ir_ops[n->op].flags & IR_F_UNARY)
        v = unary(e, n->op, operand(e, n->a[0], cols));
    else if (ir_ops[n->op].flags & IR_F_BINARY)
        v = binary(e, n->op, operand(e, n->a[0], cols), operand(e, n->a[1], cols));
    if (!v && e->st == RNNC_OK)
        e->st = err_fail(RNNC_ERR_UNSUPPORTED, "cpu: op '%s' (node %d) has no CPU code",
                         ir_ops[n->op].name, i);
    return v ? v : LLVMConstNull(e->vt);
}

static bool stores_itself(const lv_em *e, int32_t i)
{
    int32_t s = e->p->node_slot[i];
    return s >= 0 && e->p->slots[s].kind == CG_SLOT_NODE && e->p->slots[s].index == i;
}

static void emit_loop(lv_em *e, const cg_block *bk)
{
    const int32_t *nodes = e->p->ew_nodes + bk->first;
    LLVMValueRef mean = NULL, rstd = NULL;
    if (e->p->fn->nodes[nodes[0]].op == IR_LAYERNORM)
        ln_stats(e, nodes[0], &mean, &rstd);
    em_loop l;
    loop_open(e, &l);
    for (int32_t k = 0; k < bk->count; k++) {
        int32_t i = nodes[k];
        e->val[i] = pointwise(e, i, bk->cols, mean, rstd);
        if (stores_itself(e, i))
            lv_vstore(e, e->val[i], lv_gep(e, row_addr(e, i), e->j), 4);
    }
    loop_close(e, &l, bk->cols);
    for (int32_t k = 0; k < bk->count; k++)
        e->val[nodes[k]] = NULL;
}

static void emit_reduce(lv_em *e, const cg_block *bk)
{
    int32_t i = e->p->ew_nodes[bk->first];
    const ir_node *n = &e->p->fn->nodes[i];
    LLVMValueRef s = row_sum(e, n->a[0], NULL);
    if (n->op == IR_MEAN)
        s = LLVMBuildFMul(e->b, s, LLVMConstReal(e->f32, 1.0 / (double)node_cols(e, n->a[0])), "");
    LLVMSetAlignment(LLVMBuildStore(e->b, s, row_addr(e, i)), 4);
}

static void emit_copy(lv_em *e, const cg_block *bk)
{
    int32_t i = e->p->ew_nodes[bk->first];
    const ir_node *n = &e->p->fn->nodes[i];
    LLVMValueRef dst = row_addr(e, i);
    int64_t at = 0;
    for (int k = 0; k < 2; k++) {
        int64_t cols = node_cols(e, n->a[k]);
        em_loop l;
        loop_open(e, &l);
        LLVMValueRef v = operand(e, n->a[k], cols);
        LLVMValueRef to = lv_gep(e, dst, LLVMBuildAdd(e->b, e->j, lv_i64(e, at), ""));
        /* masked: a whole vector at an offset could reach into the next row,
         * which another thread may be writing */
        LLVMValueRef vp = LLVMBuildBitCast(e->b, to, LLVMPointerType(e->vt, 0), "");
        LLVMValueRef args[4] = {v, vp, LLVMConstInt(e->i32, 4, 0), lv_lanes_below(e, cols)};
        LLVMTypeRef over[2] = {e->vt, LLVMPointerType(e->vt, 0)};
        lv_intrin2(e, "llvm.masked.store", over, 2, args, 4);
        loop_close(e, &l, cols);
        at += cols;
    }
}

static void emit_rows(lv_em *e, const cg_stage *sg)
{
    LLVMValueRef r0 = LLVMGetParam(e->fn, 1), r1 = LLVMGetParam(e->fn, 2);
    LLVMBasicBlockRef entry = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(e->cx, e->fn, "row");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->cx, e->fn, "done");
    LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, r0, r1, ""), head, done);
    LLVMPositionBuilderAtEnd(e->b, head);
    e->r = LLVMBuildPhi(e->b, e->i64, "r");
    for (int32_t k = 0; k < sg->n_blocks; k++) {
        e->block = sg->first_block + k;
        const cg_block *bk = &e->p->blocks[e->block];
        if (bk->kind == CG_BLOCK_LOOP)
            emit_loop(e, bk);
        else if (bk->kind == CG_BLOCK_REDUCE)
            emit_reduce(e, bk);
        else
            emit_copy(e, bk);
    }
    e->block = -1;
    LLVMValueRef rn = LLVMBuildAdd(e->b, e->r, lv_i64(e, 1), "");
    LLVMBasicBlockRef tail = LLVMGetInsertBlock(e->b);
    LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, rn, r1, ""), head, done);
    LLVMAddIncoming(e->r, &r0, &entry, 1);
    LLVMAddIncoming(e->r, &rn, &tail, 1);
    LLVMPositionBuilderAtEnd(e->b, done);
    LLVMBuildRetVoid(e->b);
}

static void emit_ew(lv_em *e, const char *pfx, int part, int stage)
{
    char name[96];
    cg_cpu_ew_name(name, sizeof name, pfx, part, stage);
    LLVMTypeRef args[3] = {e->ppf, e->i64, e->i64};
    LLVMValueRef fn = lv_function(e, name, LLVMFunctionType(LLVMVoidTypeInContext(e->cx), args,
                                                               3, 0));
    LLVMValueRef slots = LLVMGetParam(fn, 0);
    for (int32_t s = 0; s < e->p->n_slots; s++) {
        LLVMValueRef idx = lv_i64(e, s);
        LLVMValueRef at = LLVMBuildInBoundsGEP2(e->b, e->pf, slots, &idx, 1, "");
        e->base[s] = LLVMBuildLoad2(e->b, e->pf, at, "");
    }
    emit_rows(e, &e->p->stages[part][stage]);
}

static void em_types(lv_em *e)
{
    e->f32 = LLVMFloatTypeInContext(e->cx);
    e->i32 = LLVMInt32TypeInContext(e->cx);
    e->i64 = LLVMInt64TypeInContext(e->cx);
    e->vt = LLVMVectorType(e->f32, (unsigned)e->p->vw);
    e->vi = LLVMVectorType(e->i32, (unsigned)e->p->vw);
    e->pf = LLVMPointerType(e->f32, 0);
    e->ppf = LLVMPointerType(e->pf, 0);
}

rnnc_status cg_llvm_cpu_module(const cg_cpu_plan *p, const char *pfx, LLVMContextRef ctx,
                               const char *cpu, const char *features, LLVMModuleRef *out)
{
    if (!p || !pfx || !ctx || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "cpu: NULL argument to the LLVM generator");
    lv_em e = {.cx = ctx, .p = p, .cpu = cpu, .features = features, .block = -1};
    e.m = LLVMModuleCreateWithNameInContext(pfx, ctx);
    e.b = LLVMCreateBuilderInContext(ctx);
    e.base = calloc((size_t)p->n_slots + 1, sizeof(LLVMValueRef));
    e.val = calloc((size_t)p->fn->n + 1, sizeof(LLVMValueRef));
    if (!e.base || !e.val) {
        e.st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory generating code");
        goto free_all;
    }
    em_types(&e);
    for (int part = 0; part < 2 && e.st == RNNC_OK; part++)
        for (int st = 0; st < p->n_stages[part]; st++)
            if (p->stages[part][st].n_blocks > 0)
                emit_ew(&e, pfx, part, st);
    if (e.st == RNNC_OK)
        e.st = lv_microkernels(&e, pfx);
free_all:
    free(e.base);
    free(e.val);
    LLVMDisposeBuilder(e.b);
    if (e.st != RNNC_OK) {
        LLVMDisposeModule(e.m);
        return e.st;
    }
    *out = e.m;
    return RNNC_OK;
}
