/*
 * cpu_aot.c: the cpu backend's part of an ahead-of-time bundle: the object
 * file of each cell of a model (layer 0, the layers above) made for a named
 * CPU target, under the key a process on a machine that runs that target
 * looks up (cpu_jit.c), so that process links the code and compiles none.
 * The plan, the module and its key are the ones the forward's path makes.
 */
#define _POSIX_C_SOURCE 200809L
#ifdef RNNC_HAVE_LLVM
#include <stdio.h>
#include <stdlib.h>

#include "codegen/codegen.h"
#include "runtime/cpu/cpu.h"

/* Cell k's object for target t into b. */
static rnnc_status add_cell(const rt_spec *s, int k, const rt_cpu_target *t, const char *text,
                            rt_bundle *b)
{
    ir_arena *a = ir_arena_create();
    if (!a)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    cg_cpu_plan p;
    rt_cpu_module *c = NULL;
    rt_cache_key key;
    void *obj = NULL;
    size_t size = 0;
    char pfx[48], label[56];
    rnnc_status st = rt_cpu_plan_cell(s->fn[k], s->sizes[k], s->hoist, t->vw, a, &p);
    if (st != RNNC_OK)
        goto destroy_arena;
    rt_cpu_plan_prefix(rt_cpu_plan_key(&p, s->hoist), pfx, sizeof pfx);
    rt_cpu_plan_label(&p, label, sizeof label);
    if ((st = rt_cpu_module_create(&p, pfx, t, &c)) != RNNC_OK)
        goto destroy_arena;
    st = rt_cpu_module_key(c, &key);
    if (st == RNNC_OK)
        st = rt_cpu_module_emit(c, &obj, &size);
    if (st == RNNC_OK)
        st = rt_bundle_add_host(b, key, label, text, obj, size);
    free(obj);
    rt_cpu_module_free(c);
destroy_arena:
    ir_arena_destroy(a);
    return st;
}

rnnc_status rt_cpu_aot_add(const rt_spec *s, const char *target, rt_bundle *b)
{
    rt_cpu_target t;
    char text[RT_CPU_TARGET_TEXT_MAX];
    rnnc_status st = rt_cpu_ready();
    if (st == RNNC_OK)
        st = rt_cpu_target_get(target, &t);
    if (st != RNNC_OK)
        return st;
    rt_cpu_target_text(&t, text, sizeof text);
    for (int k = 0; k < (s->layers > 1 ? 2 : 1) && st == RNNC_OK; k++)
        st = add_cell(s, k, &t, text, b);
    return st;
}
#endif /* RNNC_HAVE_LLVM */
