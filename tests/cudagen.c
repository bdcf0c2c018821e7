/* cudagen.c: see cudagen.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudagen.h"
#include "runtime/device/device.h"
#include "testutil.h"

rnnc_status tu_cuda_source(const rnnc_cell *c, rnnc_hoist hoist, const cg_cuda_config *cfg,
                           char **src, cg_cuda_plan *plan)
{
    ir_arena *a = ir_arena_create();
    ir_schedule s;
    rnnc_status st = pass_fuse(c, hoist, a, &s);
    if (st == RNNC_OK)
        st = cg_cuda_generate(&s, cfg, src, plan);
    ir_arena_destroy(a);
    return st;
}

rnnc_cell *tu_builtin(const char *name)
{
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, name, NULL));
    assert_ok(ir_optimise(c, false));
    return c;
}

void tu_each_builtin(void (*check)(const rnnc_cell *c, const char *name, bool lstm_or_gru))
{
    const char *const *names = rnnc_cell_builtin_names();
    for (int i = 0; names[i]; i++) {
        rnnc_cell *c = tu_builtin(names[i]);
        check(c, names[i], strcmp(names[i], "lstm") == 0 || strcmp(names[i], "gru") == 0);
        rnnc_cell_destroy(c);
    }
}

void tu_require_nvrtc(void)
{
    if (!rt_nvrtc_available())
        skip();
}

void tu_compile_clean(const char *src, const char *label, int sm)
{
    void *cubin = NULL;
    size_t size = 0;
    rnnc_status st = rt_nvrtc_compile(src, label, sm, NULL, 0, &cubin, &size);
    if (st != RNNC_OK) {
        fprintf(stderr, "%s\n", src);
        fail_msg("%s sm_%d: %s", label, sm, rnnc_last_error());
    }
    const char *log = rt_nvrtc_last_log();
    if (log && strstr(log, "warning")) {
        fprintf(stderr, "%s\n", src);
        fail_msg("%s sm_%d warns: %s", label, sm, log);
    }
    assert_true(size > 0);
    free(cubin);
}
