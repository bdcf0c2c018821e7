/* cudagen.h: what the code-generation tests (test_cuda_*.c) share: a
 * cell's fused CUDA source for one configuration, and an NVRTC compile
 * that must succeed with no warning.  No GPU is needed. */
#ifndef RNNC_TESTS_CUDAGEN_H
#define RNNC_TESTS_CUDAGEN_H

#include "codegen/codegen.h"
#include "ir/ir.h"

/* A shape of the fp32 code-generation tests: sizes, batch, hoist, layout. */
typedef struct tu_shape {
    int64_t I, H, B;
    rnnc_hoist hoist;
    bool batch_first;
} tu_shape;

/* The source of cell c scheduled with `hoist` and generated for cfg. */
rnnc_status tu_cuda_source(const rnnc_cell *c, rnnc_hoist hoist, const cg_cuda_config *cfg,
                           char **src, cg_cuda_plan *plan);
/* Built-in cell `name`, optimised (fails the test otherwise); destroy it. */
rnnc_cell *tu_builtin(const char *name);
/* check(cell, name, lstm_or_gru) for every built-in cell, optimised. */
void tu_each_builtin(void (*check)(const rnnc_cell *c, const char *name, bool lstm_or_gru));
/* Skips the calling test where NVRTC is not found (cmocka's skip() leaves
 * the test from here). */
void tu_require_nvrtc(void);
/* Compiles src for sm_<sm>; fails the test (printing src) on an error or a warning. */
void tu_compile_clean(const char *src, const char *label, int sm);

#endif
