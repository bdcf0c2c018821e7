/* testutil.c: see testutil.h. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t tu_seed(void)
{
    const char *env = getenv("RNNC_TEST_SEED");
    uint64_t s;
    if (env && *env) {
        s = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
    }
    fprintf(stderr, "RNNC_TEST_SEED=%llu\n", (unsigned long long)s);
    return s;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tu_uniform(uint64_t *state, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

void tu_fill_f32(float *p, size_t n, uint64_t *state, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)tu_uniform(state, lo, hi);
}

void tu_fill_f64(double *p, size_t n, uint64_t *state, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = tu_uniform(state, lo, hi);
}

void tu_poison_f32(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

double tu_rel_err_f32(const float *out, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(out[i]))
            return INFINITY;
        num = fmax(num, fabs((double)out[i] - ref[i]));
        den = fmax(den, fabs(ref[i]));
    }
    return den > 0 ? num / den : num;
}

double tu_rel_err_f64(const double *out, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(out[i]))
            return INFINITY;
        num = fmax(num, fabs(out[i] - ref[i]));
        den = fmax(den, fabs(ref[i]));
    }
    return den > 0 ? num / den : num;
}

void tu_require_gpu(void)
{
    /* one test of a GPU program alone (device time is short) */
    const char *only = getenv("RNNC_TEST_FILTER");
    if (only && *only)
        cmocka_set_test_filter(only);
    if (!rnnc_backend_available(RNNC_BACKEND_FUSED) && !rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        fprintf(stderr, "no usable GPU: skipped\n");
        exit(TU_SKIP);
    }
}

rnnc_cell *tu_data_cell(const char *name)
{
    const char *dir = getenv("RNNC_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/cells/%s.cell", dir ? dir : "tests/data", name);
    rnnc_cell *c = NULL;
    if (rnnc_cell_load_file(&c, path, NULL, NULL) != RNNC_OK)
        fail_msg("%s: %s", path, rnnc_last_error());
    return c;
}

char *tu_tmpdir(void)
{
    char tmpl[] = "/tmp/rnnc-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_rmtree(const char *dir)
{
    char cmd[4200];
    if (!dir || strncmp(dir, "/tmp/rnnc-test-", 15) != 0)
        return;
    int n = snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (n < 0 || (size_t)n >= sizeof cmd) /* never run a cut command */
        return;
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && w == len) ? 0 : -1;
}

static char *cache_dir;

int tu_cache_dir_setup(void **state)
{
    (void)state;
    cache_dir = tu_tmpdir();
    if (!cache_dir)
        return -1;
    return setenv("RNNC_CACHE_DIR", cache_dir, 1);
}

int tu_cache_dir_teardown(void **state)
{
    (void)state;
    tu_rmtree(cache_dir);
    free(cache_dir);
    cache_dir = NULL;
    return 0;
}

const char *tu_cache_dir(void)
{
    return cache_dir;
}

double *tu_random_f64(size_t n, uint64_t *state, double lo, double hi)
{
    double *p = malloc(n * sizeof *p);
    assert_non_null(p);
    tu_fill_f64(p, n, state, lo, hi);
    return p;
}

double *tu_nan_f64(size_t n)
{
    double *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* Weight i of m as a malloc'd buffer of random values, with its name and shape. */
static float *random_weight(const rnnc_model *m, int i, uint64_t *state, double lo, double hi,
                            const char **name, int *rank, int64_t shape[RNNC_MAX_RANK],
                            int64_t *n)
{
    assert_ok(rnnc_model_weight_info(m, i, name, RNNC_MAX_RANK, shape, rank));
    *n = 1;
    for (int k = 0; k < *rank; k++)
        *n *= shape[k];
    float *w = malloc(sizeof(float) * (size_t)*n);
    assert_non_null(w);
    tu_fill_f32(w, (size_t)*n, state, lo, hi);
    return w;
}

void tu_set_random_weights_on(rnnc_model *const *models, int n, uint64_t *state, double lo,
                              double hi)
{
    for (int i = 0; i < rnnc_model_weight_count(models[0]); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], count;
        int rank;
        float *w = random_weight(models[0], i, state, lo, hi, &name, &rank, shape, &count);
        for (int k = 0; k < n; k++)
            assert_ok(rnnc_model_set_weight(models[k], name, w, count));
        free(w);
    }
}

void tu_set_rounded_weights_on(rnnc_model *const *models, int n, rnnc_dtype dt,
                               uint64_t *state, double lo, double hi)
{
    for (int i = 0; i < rnnc_model_weight_count(models[0]); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], count;
        int rank;
        float *w = random_weight(models[0], i, state, lo, hi, &name, &rank, shape, &count);
        uint16_t *h = malloc(2 * (size_t)count + 2);
        assert_non_null(h);
        assert_ok(rnnc_convert(h, dt, w, RNNC_F32, count));
        assert_ok(rnnc_convert(w, RNNC_F32, h, dt, count));
        for (int k = 0; k < n; k++)
            assert_ok(rnnc_model_set_weight(models[k], name, w, count));
        free(h);
        free(w);
    }
}

double tu_weight_grad_err(rnnc_model *m, rnnc_model *ref)
{
    double worst = 0;
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], n = 1;
        int rank;
        assert_ok(rnnc_model_weight_info(m, i, &name, RNNC_MAX_RANK, shape, &rank));
        for (int k = 0; k < rank; k++)
            n *= shape[k];
        float *g = malloc(sizeof(float) * (size_t)n), *gr = malloc(sizeof(float) * (size_t)n);
        double *grd = malloc(sizeof(double) * (size_t)n);
        assert_true(g && gr && grd);
        assert_ok(rnnc_model_weight_grad(m, name, g, n));
        assert_ok(rnnc_model_weight_grad(ref, name, gr, n));
        for (int64_t j = 0; j < n; j++)
            grd[j] = gr[j];
        double e = tu_rel_err_f32(g, grd, (size_t)n);
        worst = e > worst || e != e ? e : worst;
        free(g), free(gr), free(grd);
    }
    return worst;
}

void tu_set_random_weights(rnnc_model *m, uint64_t *state, double lo, double hi)
{
    tu_set_random_weights_on(&m, 1, state, lo, hi);
}

void tu_add_random_weights(const rnnc_model *m, rnnc_tensors *ts, uint64_t *state, double lo,
                           double hi, const char *skip)
{
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], count;
        int rank;
        float *w = random_weight(m, i, state, lo, hi, &name, &rank, shape, &count);
        if (!skip || strcmp(name, skip) != 0)
            assert_ok(rnnc_tensors_add(ts, name, RNNC_F32, rank, shape, w));
        free(w);
    }
}
