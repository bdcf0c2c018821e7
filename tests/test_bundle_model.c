/* test_bundle_model.c: rnnc_bundle_compile without a GPU.  A bundle for
 * sm_80 and sm_90 at two batch sizes holds, for each, the kernel set under
 * exactly the request a fused forward makes (rt_fused_prepare and
 * rt_fused_request) and the tuning it would choose; a tuning record is
 * carried into the bundle; loading and unloading; what is refused. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "runtime/fused/fused.h"


static void desc(rnnc_model_desc *d, rnnc_cell *cell)
{
    rnnc_model_desc_init(d);
    d->cell = cell;
    d->input_size = 24;
    d->hidden_size = 32;
}

/* The kernel set a fused model of d on (sm, sms) would load at batch B:
 * found in b, a cubin, under the tuning recorded next to it. */
static void check_entry(const rt_bundle *b, const rnnc_model_desc *d, int sm, int sms,
                        int64_t batch, const char *tuning)
{
    rnnc_model_desc dd = *d;
    dd.backend = RNNC_BACKEND_INTERP;
    rnnc_model *mod = NULL;
    assert_ok(rnnc_model_create(&mod, &dd));
    rt_fused *f = calloc(1, sizeof *f);
    assert_ok(rt_fused_init(f, &mod->spec, sm, sms));
    assert_ok(rt_fused_prepare(f, batch));
    const char *names[CG_CUDA_MAX_LAUNCH], *t = NULL;
    char label[64], key[512];
    rt_kernel_req req;
    rt_fused_request(f, f->src, &f->plan, f->batch, names, label, &req);
    const void *cubin = NULL;
    size_t size = 0;
    assert_true(rt_bundle_find(b, &req, sm, &cubin, &size));
    assert_true(size > 64);
    assert_memory_equal(cubin, "\x7f" "ELF", 4);
    assert_false(rt_bundle_find(b, &req, sm == 90 ? 80 : 90, &cubin, &size));
    rt_fused_shape_key(f, batch, key, sizeof key);
    assert_ok(rt_bundle_tuning(b, key, &t));
    assert_string_equal(t, tuning);
    rt_fused_free(f);
    rnnc_model_destroy(mod);
}

static void test_round_trip(void **state)
{
    (void)state;
    rnnc_cell *cell = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    desc(&d, cell);
    const int64_t batches[] = {1, 8};
    const int archs[] = {80, 90};
    char path[4200];
    snprintf(path, sizeof path, "%s/lstm.rnncpkg", tu_cache_dir());
    assert_ok(rnnc_bundle_compile(&d, batches, 2, archs, 2, 0, path));
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_load(&b, path));
    assert_int_equal(rt_bundle_count(b), 4);
    char archs_text[64];
    rt_bundle_archs(b, archs_text, sizeof archs_text);
    assert_string_equal(archs_text, "sm_80,sm_90");
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 2; i++)
            check_entry(b, &d, archs[a], archs[a] == 80 ? 108 : 132, batches[i],
                        "ut=0 bt=0 nt=0");
    /* a batch size, an SM count or a cell it was not made for is not in it */
    rnnc_model_desc other = d;
    other.hidden_size = 40;
    rnnc_model *mod = NULL;
    other.backend = RNNC_BACKEND_INTERP;
    assert_ok(rnnc_model_create(&mod, &other));
    rt_fused *f = calloc(1, sizeof *f);
    assert_ok(rt_fused_init(f, &mod->spec, 90, 132));
    assert_ok(rt_fused_prepare(f, 8));
    const char *names[CG_CUDA_MAX_LAUNCH];
    char label[64];
    rt_kernel_req req;
    const void *cubin;
    size_t size;
    rt_fused_request(f, f->src, &f->plan, f->batch, names, label, &req);
    assert_false(rt_bundle_find(b, &req, 90, &cubin, &size));
    rt_fused_free(f);
    rnnc_model_destroy(mod);
    rt_bundle_destroy(b);
    rnnc_cell_destroy(cell);
}

/* A tuning record of this machine goes into the bundle with its kernels,
 * for the shape it names only. */
static void test_record_carried(void **state)
{
    (void)state;
    rnnc_cell *cell = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&cell, "gru", NULL));
    desc(&d, cell);
    d.input_size = 16;
    rnnc_model_desc dd = d;
    dd.backend = RNNC_BACKEND_INTERP;
    rnnc_model *mod = NULL;
    assert_ok(rnnc_model_create(&mod, &dd));
    rt_fused *f = calloc(1, sizeof *f);
    assert_ok(rt_fused_init(f, &mod->spec, 90, 114));
    char key[512];
    rt_fused_shape_key(f, 8, key, sizeof key);
    assert_ok(rt_tuning_put(key, "ut=0 bt=4 nt=0"));
    rt_fused_free(f);
    rnnc_model_destroy(mod);
    const int64_t batches[] = {8, 2};
    const int archs[] = {90};
    char path[4200];
    snprintf(path, sizeof path, "%s/gru.rnncpkg", tu_cache_dir());
    assert_ok(rnnc_bundle_compile(&d, batches, 2, archs, 1, 114, path));
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_load(&b, path));
    assert_int_equal(rt_bundle_count(b), 2);
    check_entry(b, &d, 90, 114, 8, "ut=0 bt=4 nt=0");
    check_entry(b, &d, 90, 114, 2, "ut=0 bt=0 nt=0");
    rt_bundle_destroy(b);
    rnnc_cell_destroy(cell);
}

static void test_load_unload(void **state)
{
    (void)state;
    char path[4200], bad[4200];
    snprintf(path, sizeof path, "%s/lstm.rnncpkg", tu_cache_dir()); /* from test_round_trip */
    snprintf(bad, sizeof bad, "%s/bad.rnncpkg", tu_cache_dir());
    assert_int_equal(tu_write_file(bad, "RNNCPKG", 7), 0);
    assert_int_equal(rt_bundle_registered(), 0);
    assert_ok(rnnc_bundle_load(path));
    assert_int_equal(rt_bundle_registered(), 1);
    assert_status(rnnc_bundle_load(bad), RNNC_ERR_FORMAT);
    assert_non_null(strstr(rnnc_last_error(), "bad.rnncpkg"));
    assert_status(rnnc_bundle_load("/nonexistent/x.rnncpkg"), RNNC_ERR_IO);
    assert_status(rnnc_bundle_load(NULL), RNNC_ERR_INVALID_ARG);
    assert_int_equal(rt_bundle_registered(), 1);
    rnnc_bundle_unload_all();
    assert_int_equal(rt_bundle_registered(), 0);
    rnnc_bundle_unload_all(); /* twice is fine */
}

static void test_refused(void **state)
{
    (void)state;
    rnnc_cell *cell = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    desc(&d, cell);
    const int64_t batches[] = {4};
    const int archs[] = {90}, old[] = {75};
    char path[4200];
    snprintf(path, sizeof path, "%s/refused.rnncpkg", tu_cache_dir());
    assert_status(rnnc_bundle_compile(&d, batches, 1, old, 1, 0, path), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "sm-count"));
    assert_status(rnnc_bundle_compile(&d, NULL, 0, archs, 1, 0, path), RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_bundle_compile(NULL, batches, 1, archs, 1, 0, path),
                  RNNC_ERR_INVALID_ARG);
    /* a projection whose slices would be too narrow (gcd(64, 63) = 1) */
    d.hidden_size = 64;
    d.proj_size = 63;
    assert_status(rnnc_bundle_compile(&d, batches, 1, archs, 1, 0, path), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "proj_size"));
    FILE *f = fopen(path, "rb");
    assert_null(f);
    rnnc_cell_destroy(cell);
}

int main(void)
{
    unsetenv("RNNC_FUSED_TILE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_record_carried),
        cmocka_unit_test(test_load_unload),
        cmocka_unit_test(test_refused),
    };
    /* fresh records and kernels: the group's own cache directory */
    return cmocka_run_group_tests(tests, tu_cache_dir_setup, tu_cache_dir_teardown);
}
