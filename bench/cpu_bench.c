/*
 * cpu_bench.c: rnnc's CPU backend against oneDNN's vanilla LSTM forward
 * (inference), on the same weights and inputs, in one process, all cores:
 * T=100, I=H=512 at B=64 and B=1.  Also times layernorm_lstm, which oneDNN
 * cannot run.  Prints a table; --json OUT writes the figures.
 *
 * oneDNN is a dependency of this program only (bench/CMakeLists.txt links
 * it when found); without it only rnnc's times are printed.
 *   bench_cpu_bench [--iters N] [--json OUT]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "rnnc.h"
#include "bench/bench_common.h"
#include "runtime/cpu/cpu.h"
#ifdef RNNC_HAVE_DNNL
#include <dnnl.h>
#endif

typedef struct shape {
    int64_t T, B, I, H;
} shape;

typedef struct lstm_w { /* PyTorch layout */
    float *wih, *whh, *bih, *bhh;
} lstm_w;

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static float frand(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(g_rng >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static float *rand_buf(size_t n, float scale)
{
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; p && i < n; i++)
        p[i] = frand() * scale;
    return p;
}

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        rnnc_status s_ = (expr);                                                               \
        if (s_ != RNNC_OK) {                                                                   \
            fprintf(stderr, "%s: %s: %s\n", #expr, rnnc_status_string(s_), rnnc_last_error()); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* rnnc: median ms of a forward of built-in `cell` on random weights (lstm: `w`). */
static double rnnc_time(const char *cell, shape s, const lstm_w *w, const float *x, float *y,
                        int iters)
{
    rnnc_cell *c;
    CHECK(rnnc_cell_builtin(&c, cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = s.I;
    d.hidden_size = s.H;
    d.backend = RNNC_BACKEND_CPU;
    rnnc_model *m;
    CHECK(rnnc_model_create(&m, &d));
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shp[2] = {1, 1};
        int rank;
        CHECK(rnnc_model_weight_info(m, i, &name, 2, shp, &rank));
        int64_t n = rank == 2 ? shp[0] * shp[1] : shp[0];
        const float *src = NULL;
        float *own = NULL;
        if (w && strcmp(name, "weight_ih_l0") == 0)
            src = w->wih;
        else if (w && strcmp(name, "weight_hh_l0") == 0)
            src = w->whh;
        else if (w && strcmp(name, "bias_ih_l0") == 0)
            src = w->bih;
        else if (w && strcmp(name, "bias_hh_l0") == 0)
            src = w->bhh;
        else
            src = own = rand_buf((size_t)n, strstr(name, "layernorm") ? 1.0f : 0.04f);
        CHECK(rnnc_model_set_weight(m, name, src, n));
        free(own);
    }
    rnnc_forward_args a = {.seq_len = s.T, .batch = s.B, .x = x, .y = y};
    double ms;
    CHECK(rnnc_model_time_forward(m, &a, 2, iters, &ms));
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
    return ms;
}

#ifdef RNNC_HAVE_DNNL
#define DN(expr)                                                                               \
    do {                                                                                       \
        dnnl_status_t e_ = (expr);                                                             \
        if (e_ != dnnl_success) {                                                              \
            fprintf(stderr, "oneDNN: %s failed (%d)\n", #expr, (int)e_);                       \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

typedef struct dn_ctx {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
} dn_ctx;

static dnnl_memory_t dn_mem(dn_ctx *c, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag,
                            void *data)
{
    dnnl_memory_desc_t md;
    dnnl_memory_t m;
    DN(dnnl_memory_desc_init_by_tag(&md, nd, dims, dnnl_f32, tag));
    DN(dnnl_memory_create(&m, &md, c->eng, data ? data : DNNL_MEMORY_ALLOCATE));
    return m;
}

/* User memory reordered into the layout the primitive chose. */
static dnnl_memory_t dn_reorder(dn_ctx *c, dnnl_memory_t src, const dnnl_memory_desc_t *want)
{
    const dnnl_memory_desc_t *have;
    DN(dnnl_memory_get_memory_desc(src, &have));
    dnnl_memory_t dst;
    DN(dnnl_memory_create(&dst, want, c->eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    DN(dnnl_reorder_primitive_desc_create(&rpd, have, c->eng, want, c->eng, NULL));
    DN(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    DN(dnnl_primitive_execute(r, c->strm, 2, args));
    DN(dnnl_stream_wait(c->strm));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    return dst;
}

/* oneDNN LSTM forward (inference, zero initial states): median ms; y [T,B,H]. */
static double dnnl_time(shape s, const lstm_w *w, const float *x, float *y, int iters)
{
    dn_ctx c;
    DN(dnnl_engine_create(&c.eng, dnnl_cpu, 0));
    DN(dnnl_stream_create(&c.strm, c.eng, dnnl_stream_default_flags));
    int64_t H = s.H, I = s.I;
    /* ldigo: [1][1][I][4][H], element (i, g, o) = W[g*H + o][i]; gates i,f,g,o as PyTorch */
    float *wl = malloc(sizeof(float) * (size_t)(I * 4 * H));
    float *wi = malloc(sizeof(float) * (size_t)(H * 4 * H));
    float *bias = malloc(sizeof(float) * (size_t)(4 * H));
    for (int64_t g = 0; g < 4 * H; g++) {
        for (int64_t i = 0; i < I; i++)
            wl[i * 4 * H + g] = w->wih[g * I + i];
        for (int64_t i = 0; i < H; i++)
            wi[i * 4 * H + g] = w->whh[g * H + i];
        bias[g] = w->bih[g] + w->bhh[g];
    }
    dnnl_dims_t d_src = {s.T, s.B, I}, d_dst = {s.T, s.B, H}, d_it = {1, 1, s.B, H};
    dnnl_dims_t d_wl = {1, 1, I, 4, H}, d_wi = {1, 1, H, 4, H}, d_b = {1, 1, 4, H};
    dnnl_memory_desc_t md_src, md_dst, md_it, md_wl, md_wi, md_b;
    DN(dnnl_memory_desc_init_by_tag(&md_src, 3, d_src, dnnl_f32, dnnl_tnc));
    DN(dnnl_memory_desc_init_by_tag(&md_dst, 3, d_dst, dnnl_f32, dnnl_tnc));
    DN(dnnl_memory_desc_init_by_tag(&md_it, 4, d_it, dnnl_f32, dnnl_ldnc));
    DN(dnnl_memory_desc_init_by_tag(&md_wl, 5, d_wl, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&md_wi, 5, d_wi, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&md_b, 4, d_b, dnnl_f32, dnnl_ldgo));
    dnnl_rnn_desc_t rd;
    DN(dnnl_lstm_forward_desc_init(&rd, dnnl_forward_inference, dnnl_unidirectional_left2right,
                                   &md_src, &md_it, &md_it, &md_wl, &md_wi, &md_b, &md_dst, &md_it,
                                   &md_it, 0));
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    DN(dnnl_primitive_desc_create(&pd, &rd, NULL, c.eng, NULL));
    DN(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t m_wl = dn_reorder(&c, dn_mem(&c, 5, d_wl, dnnl_ldigo, wl),
                                    dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    dnnl_memory_t m_wi = dn_reorder(&c, dn_mem(&c, 5, d_wi, dnnl_ldigo, wi),
                                    dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1));
    float *zeros = calloc((size_t)(s.B * H), sizeof(float));
    float *hT = malloc(sizeof(float) * (size_t)(s.B * H)), *cT = malloc(sizeof(float) * (size_t)(s.B * H));
    dnnl_exec_arg_t args[9] = {
        {DNNL_ARG_SRC_LAYER, dn_mem(&c, 3, d_src, dnnl_tnc, (void *)x)},
        {DNNL_ARG_SRC_ITER, dn_mem(&c, 4, d_it, dnnl_ldnc, zeros)},
        {DNNL_ARG_SRC_ITER_C, dn_mem(&c, 4, d_it, dnnl_ldnc, zeros)},
        {DNNL_ARG_WEIGHTS_LAYER, m_wl},
        {DNNL_ARG_WEIGHTS_ITER, m_wi},
        {DNNL_ARG_BIAS, dn_mem(&c, 4, d_b, dnnl_ldgo, bias)},
        {DNNL_ARG_DST_LAYER, dn_mem(&c, 3, d_dst, dnnl_tnc, y)},
        {DNNL_ARG_DST_ITER, dn_mem(&c, 4, d_it, dnnl_ldnc, hT)},
        {DNNL_ARG_DST_ITER_C, dn_mem(&c, 4, d_it, dnnl_ldnc, cT)},
    };
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int i = -2; i < iters; i++) {
        double t0 = cm_now_ms();
        DN(dnnl_primitive_execute(prim, c.strm, 9, args));
        DN(dnnl_stream_wait(c.strm));
        if (i >= 0)
            t[i] = cm_now_ms() - t0;
    }
    double ms = cm_median(t, iters);
    for (int k = 0; k < 9; k++)
        if (k != 3 && k != 4)
            dnnl_memory_destroy(args[k].memory);
    dnnl_memory_destroy(m_wl);
    dnnl_memory_destroy(m_wi);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(c.strm);
    dnnl_engine_destroy(c.eng);
    free(t), free(wl), free(wi), free(bias), free(zeros), free(hT), free(cT);
    return ms;
}

static double max_rel_diff(const float *a, const float *b, size_t n)
{
    double md = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - (double)b[i]));
        mr = fmax(mr, fabs((double)b[i]));
    }
    return mr > 0 ? md / mr : md;
}
#endif

static cJSON *bench_shape(shape s, int iters)
{
    size_t nx = (size_t)(s.T * s.B * s.I), ny = (size_t)(s.T * s.B * s.H);
    size_t nw = (size_t)(4 * s.H);
    lstm_w w = {rand_buf(nw * (size_t)s.I, 0.04f), rand_buf(nw * (size_t)s.H, 0.04f),
                rand_buf(nw, 0.1f), rand_buf(nw, 0.1f)};
    float *x = rand_buf(nx, 1.0f), *y = malloc(ny * sizeof(float)), *y2 = malloc(ny * sizeof(float));
    double r_ms = rnnc_time("lstm", s, &w, x, y, iters);
    double ln_ms = rnnc_time("layernorm_lstm", s, NULL, x, y2, iters);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "T", (double)s.T);
    cJSON_AddNumberToObject(o, "B", (double)s.B);
    cJSON_AddNumberToObject(o, "I", (double)s.I);
    cJSON_AddNumberToObject(o, "H", (double)s.H);
    cJSON_AddNumberToObject(o, "rnnc_lstm_ms", r_ms);
    cJSON_AddNumberToObject(o, "rnnc_layernorm_lstm_ms", ln_ms);
    printf("T=%-4lld B=%-3lld I=%-4lld H=%-4lld  rnnc lstm %9.3f ms", (long long)s.T,
           (long long)s.B, (long long)s.I, (long long)s.H, r_ms);
#ifdef RNNC_HAVE_DNNL
    rnnc_time("lstm", s, &w, x, y, 1); /* y again, for the agreement check */
    double d_ms = dnnl_time(s, &w, x, y2, iters);
    double diff = max_rel_diff(y, y2, ny), ratio = d_ms / r_ms;
    printf("  oneDNN %9.3f ms  speed rnnc/oneDNN %5.2fx %s  (max rel diff %.1e)", d_ms, ratio,
           ratio >= 0.7 ? "ok" : "BELOW 0.7x", diff);
    cJSON_AddNumberToObject(o, "onednn_lstm_ms", d_ms);
    cJSON_AddNumberToObject(o, "speed_ratio", ratio);
    cJSON_AddNumberToObject(o, "max_rel_diff", diff);
#endif
    printf("  layernorm_lstm %9.3f ms\n", ln_ms);
    free(w.wih), free(w.whh), free(w.bih), free(w.bhh), free(x), free(y), free(y2);
    return o;
}

static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            snprintf(buf, n, "%s", strchr(line, ':') + 2);
            buf[strcspn(buf, "\n")] = 0;
            break;
        }
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    int iters = 10;
    if (!bench_args(argc, argv, "iters", &json, &iters))
        return 2;
    char model[256], jit[256];
    cpu_model(model, sizeof model);
    CHECK(rt_cpu_describe(jit, sizeof jit));
    printf("CPU: %s (JIT: %s)\n", model, jit);
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "results");
    cJSON_AddStringToObject(root, "cpu", model);
    cJSON_AddStringToObject(root, "jit", jit);
    shape shapes[2] = {{100, 64, 512, 512}, {100, 1, 512, 512}};
    for (int k = 0; k < 2; k++)
        cJSON_AddItemToArray(rows, bench_shape(shapes[k], iters));
    int rc = json ? bench_write_json(json, root) : 0;
    cJSON_Delete(root);
    return rc;
}
