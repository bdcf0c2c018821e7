/*
 * cpu_object.c: one plan as machine code for one CPU target.  The plan
 * becomes an LLVM module (codegen/llvm) for the target's CPU and features,
 * which is verified, printed when RNNC_DUMP=llvm, and, where no cache or
 * bundle holds its object file, optimised at O3 and made into one with a
 * target machine of that CPU (the JIT's code model, so the JIT links it as
 * its own).  The object's key hashes the module's text with LLVM's version
 * and the target, so it needs no version number: a changed generator
 * changes the text.  The module names its functions by the plan key, not by
 * a counter, so its text is the same in every process.
 */
#define _POSIX_C_SOURCE 200809L
#ifdef RNNC_HAVE_LLVM
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h> /* LLVM_VERSION_STRING, part of an object's key */
#include <xxhash.h>

#include "codegen/codegen.h"
#include "runtime/cache/cache.h"
#include "runtime/cpu/cpu.h"

struct rt_cpu_module {
    LLVMContextRef cx;
    LLVMModuleRef m;
    LLVMTargetMachineRef tm;
    rt_cpu_target target;
};

rt_cache_key rt_cpu_plan_key(const cg_cpu_plan *p, rnnc_hoist hoist)
{
    XXH3_state_t *h = XXH3_createState();
    XXH3_128bits_reset(h);
    int64_t head[6] = {p->vw, p->sizes.I, p->sizes.H, p->sizes.P, hoist, p->fn->n};
    XXH3_128bits_update(h, head, sizeof head);
    for (int32_t i = 0; i < p->fn->n; i++) {
        const ir_node *n = &p->fn->nodes[i];
        int64_t v[9] = {n->op, n->kind, n->a[0], n->a[1], n->a[2], ir_dim_eval(n->cols, p->sizes),
                        n->i0, n->i1, p->sched->hoist.part[i]};
        XXH3_128bits_update(h, v, sizeof v);
        XXH3_128bits_update(h, &n->f, sizeof n->f);
    }
    for (int32_t k = 0; k < p->fn->n_states; k++)
        XXH3_128bits_update(h, &p->fn->states[k], 2 * sizeof(int32_t));
    XXH3_128bits_update(h, &p->fn->output, sizeof p->fn->output);
    XXH128_hash_t d = XXH3_128bits_digest(h);
    XXH3_freeState(h);
    return (rt_cache_key){.lo = d.low64, .hi = d.high64};
}

rnnc_status rt_cpu_plan_cell(const ir_fn *f, ir_sizes sz, rnnc_hoist hoist, int vw, ir_arena *a,
                             cg_cpu_plan *p)
{
    ir_schedule *s = ir_arena_alloc(a, sizeof *s);
    if (!s)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    rnnc_status st = pass_fuse(f, hoist, a, s);
    return st == RNNC_OK ? cg_cpu_plan_build(s, sz, vw, a, p) : st;
}

void rt_cpu_plan_label(const cg_cpu_plan *p, char *buf, size_t n)
{
    snprintf(buf, n, "cpu %s", p->fn->name ? p->fn->name : "cell");
}

void rt_cpu_plan_prefix(rt_cache_key k, char *pfx, size_t n)
{
    snprintf(pfx, n, "rnnc_cpu_%016llx%016llx", (unsigned long long)k.hi,
             (unsigned long long)k.lo);
}

static void dump_module(LLVMModuleRef m, const char *stage)
{
    if (!ir_dump_enabled(stage))
        return;
    char *text = LLVMPrintModuleToString(m);
    fprintf(stderr, "; ---- RNNC_DUMP=%s\n%s", stage, text);
    LLVMDisposeMessage(text);
}

static rnnc_status target_machine(const rt_cpu_target *t, LLVMTargetMachineRef *tm)
{
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(t->triple, &target, &msg)) {
        rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: no LLVM target for %s: %s", t->triple,
                                  msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return st;
    }
    *tm = LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features,
                                  LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                  LLVMCodeModelJITDefault);
    return *tm ? RNNC_OK : err_fail(RNNC_ERR_LLVM, "cpu: no target machine for %s", t->cpu);
}

/* Verifies the generated module and gives it the target's triple and layout. */
static rnnc_status check_module(rt_cpu_module *c)
{
    char *msg = NULL;
    dump_module(c->m, "llvm");
    if (LLVMVerifyModule(c->m, LLVMReturnStatusAction, &msg)) {
        rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: the generated module is invalid: %s", msg);
        LLVMDisposeMessage(msg);
        return st;
    }
    LLVMDisposeMessage(msg);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(c->tm);
    char *layout = LLVMCopyStringRepOfTargetData(td);
    LLVMSetTarget(c->m, c->target.triple);
    LLVMSetDataLayout(c->m, layout);
    LLVMDisposeMessage(layout);
    LLVMDisposeTargetData(td);
    return RNNC_OK;
}

rnnc_status rt_cpu_module_create(const cg_cpu_plan *p, const char *pfx, const rt_cpu_target *t,
                                 rt_cpu_module **out)
{
    rt_cpu_module *c = calloc(1, sizeof *c);
    if (!c)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    c->target = *t;
    c->cx = LLVMContextCreate();
    rnnc_status st = target_machine(t, &c->tm);
    if (st == RNNC_OK)
        st = cg_llvm_cpu_module(p, pfx, c->cx, t->cpu, t->features, &c->m);
    if (st == RNNC_OK)
        st = check_module(c);
    if (st != RNNC_OK) {
        rt_cpu_module_free(c);
        return st;
    }
    *out = c;
    return RNNC_OK;
}

void rt_cpu_module_free(rt_cpu_module *c)
{
    if (!c)
        return;
    if (c->m)
        LLVMDisposeModule(c->m);
    if (c->tm)
        LLVMDisposeTargetMachine(c->tm);
    LLVMContextDispose(c->cx);
    free(c);
}

char *rt_cpu_module_text(const rt_cpu_module *c)
{
    char *text = LLVMPrintModuleToString(c->m);
    char *copy = text ? strdup(text) : NULL;
    LLVMDisposeMessage(text);
    return copy;
}

rnnc_status rt_cpu_module_key(const rt_cpu_module *c, rt_cache_key *k)
{
    char *text = LLVMPrintModuleToString(c->m);
    if (!text)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    const rt_cpu_target *t = &c->target;
    const char *parts[] = {LLVM_VERSION_STRING, "O3", t->triple, t->cpu, t->features, text};
    rt_cache_key_host(parts, (int)(sizeof parts / sizeof *parts), k);
    LLVMDisposeMessage(text);
    return RNNC_OK;
}

rnnc_status rt_cpu_module_emit(rt_cpu_module *c, void **obj, size_t *size)
{
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(c->m, "default<O3>", c->tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (err) {
        char *m = LLVMGetErrorMessage(err);
        rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: optimising: %s", m);
        LLVMDisposeErrorMessage(m);
        return st;
    }
    dump_module(c->m, "llvm-opt");
    char *msg = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(c->tm, c->m, LLVMObjectFile, &msg, &buf)) {
        rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: making the object file: %s",
                                  msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return st;
    }
    *size = LLVMGetBufferSize(buf);
    *obj = malloc(*size ? *size : 1);
    if (*obj)
        memcpy(*obj, LLVMGetBufferStart(buf), *size);
    LLVMDisposeMemoryBuffer(buf);
    return *obj ? RNNC_OK : err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
}
#endif /* RNNC_HAVE_LLVM */
