/*
 * dump.c: a cell at each stage of the pipeline, as text, for
 * `rnnc dump` and for reading what rnnc made of a cell.  No stage needs a
 * GPU: the CUDA source is generated, not compiled.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "runtime/cpu/cpu.h"
#include "codegen/codegen.h"
#ifdef RNNC_HAVE_CUDA
#include "runtime/fused/fused.h"
#include "runtime/fused_grad/fused_grad.h"
#endif

static rnnc_status dump_schedule(const rnnc_cell *c, const char *stage, ir_sizes sz,
                                 const rnnc_dump_desc *d, char **text)
{
    ir_arena *a = ir_arena_create();
    ir_schedule s;
    rnnc_status st = a ? pass_fuse(c, d->hoist, a, &s)
                       : err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != RNNC_OK)
        goto out;
    if (strcmp(stage, "schedule") == 0) {
        st = ir_schedule_print(&s, text);
    } else {
#ifdef RNNC_HAVE_CUDA
        cg_cuda_config cfg = {.sizes = sz, .batch = d->batch, .sm = d->sm > 0 ? d->sm : 90,
                              .math = (int)d->math, .dtype = (int)d->dtype, .tma = true};
        rt_fused_tuning tu;
        if (d->tuning && !rt_fused_tuning_parse_loose(d->tuning, &tu))
            st = err_fail(RNNC_ERR_INVALID_ARG,
                          "tuning '%s' is not fields of 'ut=U bt=B nt=N rr=R bb=S ex=E op=1' "
                          "(any of them, in any order, each once; the others 0)", d->tuning);
        else if (d->tuning)
            rt_fused_tuning_apply(tu, &cfg);
        if (st == RNNC_OK)
            st = cg_cuda_source(&s, &cfg, text);
#else
        (void)sz;
        st = err_fail(RNNC_ERR_NOT_BUILT, "the CUDA generator is not built (no CUDA toolkit)");
#endif
    }
out:
    ir_arena_destroy(a);
    return st;
}

static rnnc_status dump_llvm(const rnnc_cell *o, ir_sizes sz, int hoist, char **text)
{
#ifdef RNNC_HAVE_LLVM
    return rt_cpu_dump_llvm(o, sz, (rnnc_hoist)hoist, text);
#else
    (void)o, (void)sz, (void)hoist, (void)text;
    return err_fail(RNNC_ERR_NOT_BUILT, "the LLVM generator is not built (RNNC_WITH_LLVM=OFF)");
#endif
}

static rnnc_status dump_train(const rnnc_cell *o, ir_sizes sz, const rnnc_dump_desc *d,
                              char **text)
{
#ifdef RNNC_HAVE_CUDA
    return fg_dump(o, sz, d->batch, d->sm > 0 ? d->sm : 90, (int)d->math, text);
#else
    (void)o, (void)sz, (void)d, (void)text;
    return err_fail(RNNC_ERR_NOT_BUILT, "the CUDA generator is not built (no CUDA toolkit)");
#endif
}

static rnnc_status dump_backward(const rnnc_cell *o, char **text)
{
    ir_grad g;
    rnnc_status s = ir_autodiff(o, &g);
    if (s == RNNC_OK)
        s = ir_grad_print(o, &g, text);
    ir_grad_free(&g);
    return s;
}

rnnc_status rnnc_cell_dump(const rnnc_cell *c, const char *stage, int64_t input_size,
                           int64_t hidden_size, int64_t proj_size, int64_t batch, int hoist,
                           char **text)
{
    rnnc_dump_desc d = {.input_size = input_size, .hidden_size = hidden_size,
                        .proj_size = proj_size, .batch = batch, .hoist = (rnnc_hoist)hoist};
    return rnnc_cell_dump_desc(c, stage, &d, text);
}

rnnc_status rnnc_cell_dump_desc(const rnnc_cell *c, const char *stage, const rnnc_dump_desc *d,
                                char **text)
{
    if (!c || !stage || !d || !text)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_dump: NULL argument");
    int64_t input_size = d->input_size, hidden_size = d->hidden_size, proj_size = d->proj_size,
            batch = d->batch;
    int hoist = (int)d->hoist;
    if (strcmp(stage, "ir") == 0)
        return ir_print(c, text);
    bool llvm = strcmp(stage, "llvm") == 0, train = strcmp(stage, "train") == 0;
    bool sched = strcmp(stage, "schedule") == 0 || strcmp(stage, "cuda") == 0 || llvm || train;
    bool backward = strcmp(stage, "backward") == 0;
    if (strcmp(stage, "opt") != 0 && !sched && !backward)
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "unknown stage '%s' (ir, opt, schedule, cuda, llvm, backward, train)",
                        stage);
    if (sched && (input_size < 1 || hidden_size < 1 || batch < 1 || hoist < 0 || hoist > 2))
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "stage '%s' needs the input size, hidden size and batch", stage);
    rnnc_cell *o = NULL;
    rnnc_status s = ir_specialise(c, proj_size > 0, &o);
    if (s == RNNC_OK) {
        ir_sizes sz = {input_size, hidden_size, proj_size > 0 ? proj_size : hidden_size};
        if (backward)
            s = dump_backward(o, text);
        else if (train)
            s = dump_train(o, sz, d, text);
        else if (llvm)
            s = dump_llvm(o, sz, hoist, text);
        else
            s = sched ? dump_schedule(o, stage, sz, d, text) : ir_print(o, text);
    }
    rnnc_cell_destroy(o);
    return s;
}
