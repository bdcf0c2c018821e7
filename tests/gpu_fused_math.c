/* gpu_fused_math.c (label gpu): the fused backend's fp32 math modes on
 * tensor cores against the double-precision interpreter on the same fp32
 * weights and inputs, T = 100: every built-in cell and one .cell cell, 1
 * and 2 layers; tf32 to max|out-ref|/max|ref| <= 5e-3, 3xtf32 to <= 5e-6.
 * Tiles are fixed (RNNC_FUSED_TILE) so the step's linears run on tensor
 * cores at a shape the interpreter checks quickly; one LSTM runs the
 * default tiling at the benchmark width.  Then a forward (T = 1, device
 * pointers, the caller's stream) is captured in a CUDA graph and replayed:
 * the replays must give the forward's output, with no host synchronisation
 * inside (a capture fails on one).  FFMA's outer-product step
 * (cuda_outer.c) is checked here too, to 1e-5.  Exits 77 without a GPU. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/device.h"
#include "testutil.h"

#define MAX_STATES 4

static const char k_cifg[] =
    "cell cifg {\n"
    "    input x[I]\n    state h[H]\n    state c[H]\n"
    "    param weight_ih[3H, I]\n    param weight_hh[3H, H]\n    param bias[3H]\n"
    "    gates = linear(x, weight_ih) + linear(h, weight_hh) + bias\n"
    "    f, g, o = chunk(gates, 3)\n"
    "    fs = sigmoid(f)\n"
    "    c_next = fs * c + (1 - fs) * tanh(g)\n"
    "    h_next = sigmoid(o) * tanh(c_next)\n"
    "    next h = h_next\n    next c = c_next\n    output h_next\n}\n";

typedef struct mcase {
    const char *cell;
    int64_t T, B, I, H;
    int layers;
    rnnc_math math;
    bool bi;   /* bidirectional */
    bool lens; /* random lengths in [1, T] (PyTorch's packed semantics) */
} mcase;

static rnnc_model *make(const mcase *mc, rnnc_backend be)
{
    rnnc_cell *c = NULL;
    if (strcmp(mc->cell, "cifg") == 0)
        assert_ok(rnnc_cell_parse(&c, k_cifg, strlen(k_cifg), "cifg.cell", NULL, NULL));
    else
        assert_ok(rnnc_cell_builtin(&c, mc->cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = mc->I;
    d.hidden_size = mc->H;
    d.num_layers = mc->layers;
    d.bidirectional = mc->bi;
    d.math = mc->math;
    d.backend = be;
    rnnc_model *m = NULL;
    if (rnnc_model_create(&m, &d))
        fail_msg("%s: model: %s", mc->cell, rnnc_last_error());
    rnnc_cell_destroy(c);
    return m;
}

static double rel_err(const float *out, const float *ref, size_t n)
{
    double *r = malloc(n * sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; i++)
        r[i] = ref[i];
    double e = tu_rel_err_f32(out, r, n);
    free(r);
    return e;
}

static void run_case(const mcase *mc, uint64_t *rng, double tol)
{
    rnnc_model *f = make(mc, RNNC_BACKEND_FUSED), *r = make(mc, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {f, r};
    double k = 1.0 / sqrt((double)mc->H);
    tu_set_random_weights_on(both, 2, rng, -k, k);
    int64_t hout = 0;
    assert_ok(rnnc_model_output_size(f, &hout));
    /* y has both directions' features */
    size_t nx = (size_t)(mc->T * mc->B * mc->I), ny = (size_t)(mc->T * mc->B * (mc->bi ? 2 : 1) * hout);
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *yr = malloc(ny * 4);
    float *init[MAX_STATES] = {0}, *fin[MAX_STATES] = {0}, *finr[MAX_STATES] = {0};
    size_t nst[MAX_STATES] = {0};
    int ns = 0;
    for (int64_t n = 0; ns < MAX_STATES && rnnc_model_state_size(f, ns, &n) == RNNC_OK; ns++) {
        nst[ns] = (size_t)((mc->bi ? 2 : 1) * mc->layers * mc->B * n);
        init[ns] = malloc(nst[ns] * 4);
        fin[ns] = malloc(nst[ns] * 4);
        finr[ns] = malloc(nst[ns] * 4);
        tu_fill_f32(init[ns], nst[ns], rng, -0.5, 0.5);
        tu_poison_f32(fin[ns], nst[ns]);
        tu_poison_f32(finr[ns], nst[ns]);
    }
    tu_fill_f32(x, nx, rng, -1, 1);
    tu_poison_f32(y, ny);
    tu_poison_f32(yr, ny);
    int64_t *len = malloc((size_t)mc->B * sizeof *len);
    assert_non_null(len);
    for (int64_t b = 0; b < mc->B; b++)
        len[b] = 1 + (int64_t)tu_uniform(rng, 0, (double)mc->T);
    rnnc_forward_args a = {.seq_len = mc->T, .batch = mc->B, .x = x, .y = yr,
                           .init = (const void *const *)init, .final = (void *const *)finr,
                           .lengths = mc->lens ? len : NULL};
    assert_ok(rnnc_model_forward(r, &a));
    a.y = y;
    a.final = (void *const *)fin;
    if (rnnc_model_forward(f, &a))
        fail_msg("%s: fused forward: %s", mc->cell, rnnc_last_error());
    double ey = rel_err(y, yr, ny), ef = 0;
    for (int s = 0; s < ns; s++) {
        double e = rel_err(fin[s], finr[s], nst[s]);
        ef = e > ef || e != e ? e : ef;
    }
    printf("  %-15s %-6s L=%d%s%s B=%lld H=%lld  y %.2e  final %.2e\n", mc->cell,
           rnnc_math_name(mc->math), mc->layers, mc->bi ? " bi" : "", mc->lens ? " lengths" : "",
           (long long)mc->B, (long long)mc->H, ey, ef);
    fflush(stdout);
    if (!(ey <= tol) || !(ef <= tol))
        fail_msg("%s %s L=%d: rel err y %.3g final %.3g > %g", mc->cell, rnnc_math_name(mc->math),
                 mc->layers, ey, ef, tol);
    for (int s = 0; s < ns; s++) {
        free(init[s]);
        free(fin[s]);
        free(finr[s]);
    }
    free(len);
    free(x);
    free(y);
    free(yr);
    rnnc_model_destroy(f);
    rnnc_model_destroy(r);
}

static void each_cell(rnnc_math math, double tol)
{
    uint64_t rng = tu_seed();
    /* 8 units x 16 rows per block at H = 128, 4 warps: 2 to 4 mma tiles of
     * 16 gate rows x 8 batch rows per linear (GRU's 24 rows: a partial tile) */
    setenv("RNNC_FUSED_TILE", "8,16,128", 1);
    const char *const *names = rnnc_cell_builtin_names();
    for (int i = 0; names[i]; i++)
        for (int layers = 1; layers <= 2; layers++) {
            mcase mc = {names[i], 100, 32, 128, 128, layers, math, false, false};
            run_case(&mc, &rng, tol);
        }
    for (int layers = 1; layers <= 2; layers++) {
        mcase cifg = {"cifg", 100, 32, 128, 128, layers, math, false, false};
        run_case(&cifg, &rng, tol);
    }
    unsetenv("RNNC_FUSED_TILE");
    /* the benchmark width, default tiles (16 units x 16 rows, 8 warps) */
    mcase wide = {"lstm", 20, 64, 512, 512, 1, math, false, false};
    run_case(&wide, &rng, tol);
    /* H = 1024: W_hh on chip leaves room for h in chunks of 256 columns,
     * each loaded while the tensor cores multiply the one before.  The
     * hoisted GEMM's 128 k-steps are where 3xtf32 loses most: adding each
     * k-step's products straight into the accumulator (the tensor cores'
     * adds truncate) gave 7.7e-6 to 1.25e-5 here on the H100, summing them
     * from zero and adding that in fp32 (rnnc_mma3) 4.0e-7.  In TF32 on
     * sm_90 the step splits K over clusters instead (cuda_ksplit.c, N = 64) */
    mcase chunked = {"lstm", 10, 64, 1024, 1024, 1, math, false, false};
    mcase chunked_gru = {"gru", 10, 64, 1024, 1024, 1, math, true, true};
    run_case(&chunked, &rng, tol);
    run_case(&chunked_gru, &rng, tol);
    /* B = 256: h in 32-column chunks, on sm_90 bulk copies from the state's
     * chunk-major copy into three buffers (cuda_bulk.c); in TF32 the step
     * splits K over clusters of two (cuda_ksplit.c), a GRU's and an LSTM's
     * at H = 768 (24 rows a block) with zero rows padding wgmma's 64, and
     * at B = 128 on one warpgroup */
    mcase bulk = {"lstm", 6, 256, 64, 1024, 1, math, false, false};
    mcase bulk_gru = {"gru", 6, 256, 64, 1024, 1, math, false, false};
    mcase bulk_gru_len = {"gru", 8, 256, 64, 1024, 1, math, true, true};
    mcase bulk_768 = {"lstm", 6, 256, 64, 768, 1, math, false, false};
    /* 3H = 2880 columns: the wgmma GEMM's last column tile half past them */
    mcase bulk_gru_960 = {"gru", 6, 256, 64, 960, 1, math, false, false};
    mcase bulk_128 = {"lstm", 6, 128, 64, 1024, 1, math, false, false};
    mcase bulk_gru_128 = {"gru", 6, 128, 64, 1024, 1, math, true, true};
    mcase bulk_peep = {"peephole_lstm", 6, 256, 64, 1024, 1, math, false, false};
    run_case(&bulk, &rng, tol);
    run_case(&bulk_gru, &rng, tol);
    run_case(&bulk_gru_len, &rng, tol);
    run_case(&bulk_768, &rng, tol);
    run_case(&bulk_gru_960, &rng, tol);
    run_case(&bulk_128, &rng, tol);
    run_case(&bulk_gru_128, &rng, tol);
    run_case(&bulk_peep, &rng, tol);
    /* the split's group barrier before step 0, rows ending at their own
     * lengths, the reverse direction, a second layer's K of 1024 */
    mcase bulk_len = {"lstm", 8, 256, 64, 1024, 1, math, true, true};
    mcase bulk_deep = {"lstm", 4, 256, 64, 1024, 2, math, false, false};
    run_case(&bulk_len, &rng, tol);
    run_case(&bulk_deep, &rng, tol);
    /* W_hh on chip in no tiling: in TF32 on sm_90 it streams beside h's
     * chunks (cuda_wstream.c; 3xtf32 streams it on FFMA): four batch groups
     * at B = 512 (a GRU's 96 rows in two 64-row tiles; bidirectional, each
     * direction on half the SMs, 64 units a block), H = 2048 (48 rows, one
     * tile), an LSTM at H = 1536 (24 units) over two layers, one at H = 1088
     * whose last block has 8 units of its 40 */
    mcase ws = {"lstm", 4, 512, 64, 1024, 1, math, false, false};
    mcase ws_gru = {"gru", 4, 512, 64, 1024, 1, math, true, true};
    mcase ws_2048 = {"gru", 3, 64, 64, 2048, 1, math, false, false};
    mcase ws_deep = {"lstm", 3, 256, 64, 1536, 2, math, false, false};
    /* 40 units a block, 160 rows in three tiles: the last block's boxes
     * run 32 units past H (the last gate's into the TMA's zeros) */
    mcase ws_ragged = {"lstm", 3, 512, 64, 1088, 1, math, false, false};
    /* batch rows padded to wgmma's N, a multiple of 32: one group of 100
     * rows (N = 128) with lengths; a GRU's two groups of 96; B = 8 (N = 32) */
    mcase ws_100 = {"lstm", 3, 100, 64, 2048, 1, math, false, true};
    mcase ws_96 = {"gru", 3, 192, 64, 2048, 1, math, false, false};
    mcase ws_8 = {"lstm", 3, 8, 64, 2048, 1, math, false, false};
    run_case(&ws, &rng, tol);
    run_case(&ws_ragged, &rng, tol);
    run_case(&ws_100, &rng, tol);
    run_case(&ws_96, &rng, tol);
    run_case(&ws_8, &rng, tol);
    run_case(&ws_gru, &rng, tol);
    run_case(&ws_2048, &rng, tol);
    run_case(&ws_deep, &rng, tol);
    /* two layers at the benchmark's T * B, so that on sm_90 the wgmma GEMM
     * tiles (cuda_wgmma.c) take both layers' hoisted GEMMs (the upper one
     * reads the lower one's output in the wavefront's chunks), built in
     * and a .cell cell */
    mcase deep = {"lstm", 100, 64, 512, 512, 2, math, false, false};
    mcase deep_cell = {"cifg", 100, 64, 512, 512, 2, math, false, false};
    run_case(&deep, &rng, tol);
    run_case(&deep_cell, &rng, tol);
}

static void test_tf32(void **state)
{
    (void)state;
    each_cell(RNNC_MATH_TF32, 5e-3);
}

static void test_3xtf32(void **state)
{
    (void)state;
    each_cell(RNNC_MATH_3XTF32, 5e-6);
}

/* ---------------------------------------------------------------- outer products */

/* FFMA's outer products (cuda_outer.c, RNNC_FUSED_TILE's seventh field):
 * h in bulk-staged chunks at B = 256 (4 groups of threads splitting K, 3
 * for a GRU's or a .cell cell's 24 rows a block at 384 threads), with
 * lengths; two layers at H = 512 (each on half the SMs); B = 128 at 256
 * threads with lengths, one batch group and (I = H = 512) four.  test_cuda_codegen checks that these tilings take
 * outer products. */
static void test_outer_products(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *tile;
        mcase mc;
        bool two; /* two layers at once on half the SMs each, which B = 256
                     at H = 512 would not take (rt_fused_share_at) */
    } t[] = {
        {"8,256,512,8,8,0,1", {"lstm", 6, 256, 64, 1024, 1, RNNC_MATH_FFMA, false, false}, false},
        {"8,256,512,8,8,0,1", {"lstm", 8, 256, 64, 1024, 1, RNNC_MATH_FFMA, false, true}, false},
        {"8,256,512,8,8,0,1", {"lstm", 4, 256, 64, 512, 2, RNNC_MATH_FFMA, false, false}, true},
        {"8,256,384,8,8,0,1", {"gru", 6, 256, 64, 1024, 1, RNNC_MATH_FFMA, false, true}, false},
        {"8,256,384,8,8,0,1", {"cifg", 6, 256, 64, 1024, 1, RNNC_MATH_FFMA, false, false}, false},
        {"8,128,256,8,8,0,1", {"lstm", 8, 128, 64, 1024, 1, RNNC_MATH_FFMA, false, true}, false},
        /* four batch groups of 32 rows, each its own k-major copies */
        {"16,32,256,8,8,0,1", {"lstm", 8, 128, 512, 512, 1, RNNC_MATH_FFMA, false, true}, false},
        /* B = 64 (the autotuner's candidates there): 512 threads, 4 x 8 in one
         * group of 64 rows or two of 32; a stack's wavefront and a
         * bidirectional stack on half the SMs, and H = 1024 alone */
        {"0,64,512,4,8,0,1", {"lstm", 8, 64, 512, 512, 4, RNNC_MATH_FFMA, false, false}, false},
        {"0,32,512,4,8,0,1", {"lstm", 8, 64, 512, 512, 2, RNNC_MATH_FFMA, true, true}, false},
        {"0,64,512,4,8,0,1", {"lstm", 6, 64, 1024, 1024, 1, RNNC_MATH_FFMA, false, true}, false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        setenv("RNNC_FUSED_TILE", t[i].tile, 1);
        if (t[i].two)
            setenv("RNNC_FUSED_SHARE", "2", 1);
        printf("  tile %s%s\n", t[i].tile, t[i].two ? ", two kernels at once" : "");
        run_case(&t[i].mc, &rng, 1e-5);
        unsetenv("RNNC_FUSED_SHARE");
    }
    unsetenv("RNNC_FUSED_TILE");
}

/* ---------------------------------------------------------------- graphs */

typedef struct graph_api {
    CUresult (*begin)(CUstream, CUstreamCaptureMode);
    CUresult (*end)(CUstream, CUgraph *);
    CUresult (*inst)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*destroy)(CUgraph);
} graph_api;

static bool load_graph_api(graph_api *g)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return false;
    *(void **)&g->begin = dlsym(lib, "cuStreamBeginCapture_v2");
    *(void **)&g->end = dlsym(lib, "cuStreamEndCapture");
    *(void **)&g->inst = dlsym(lib, "cuGraphInstantiateWithFlags");
    *(void **)&g->launch = dlsym(lib, "cuGraphLaunch");
    *(void **)&g->exec_destroy = dlsym(lib, "cuGraphExecDestroy");
    *(void **)&g->destroy = dlsym(lib, "cuGraphDestroy");
    dlclose(lib);
    return g->begin && g->end && g->inst && g->launch && g->exec_destroy && g->destroy;
}

static void cu_ok(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS)
        fail_msg("%s: CUDA error %d", what, (int)r);
}

/* LSTM steps (T = 1, B = 64, I = H = 512, fp32 FFMA) captured and
 * replayed: the graph holds two forwards that pass the states back and
 * forth between two pairs of device buffers (the step kernel reads and
 * writes them directly, no copy nodes), replayed 50 times for 100 steps
 * that must match 100 steps of the interpreter. */
static void test_graph_capture(void **state)
{
    (void)state;
    graph_api g = {0};
    assert_ok(rt_cuda_load());
    assert_true(load_graph_api(&g));
    const rt_cuda_api *cu = rt_cu();
    uint64_t rng = tu_seed();
    mcase mc = {"lstm", 1, 64, 512, 512, 1, RNNC_MATH_FFMA, false, false};
    rnnc_model *f = make(&mc, RNNC_BACKEND_FUSED), *r = make(&mc, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {f, r};
    tu_set_random_weights_on(both, 2, &rng, -1.0 / sqrt(512.0), 1.0 / sqrt(512.0));
    enum { STEPS = 100 };
    size_t nx = 64 * 512, nh = 64 * 512;
    float *x = malloc(nx * 4), *h = malloc(nh * 4), *c = malloc(nh * 4), *y = malloc(nh * 4);
    tu_fill_f32(x, nx, &rng, -1, 1);
    memset(h, 0, nh * 4);
    memset(c, 0, nh * 4);
    /* the reference: STEPS single steps of the interpreter, states carried */
    float *hr = calloc(nh, 4), *cr = calloc(nh, 4), *yr = malloc(nh * 4);
    for (int i = 0; i < STEPS; i++) {
        const void *in[2] = {hr, cr};
        float *hn = malloc(nh * 4), *cn = malloc(nh * 4);
        void *out[2] = {hn, cn};
        rnnc_forward_args a = {.seq_len = 1, .batch = 64, .x = x, .y = yr, .init = in,
                               .final = out};
        assert_ok(rnnc_model_forward(r, &a));
        memcpy(hr, hn, nh * 4);
        memcpy(cr, cn, nh * 4);
        free(hn);
        free(cn);
    }
    assert_ok(rt_cuda_context(0));
    CUdeviceptr dx, dy, dh[2], dc[2];
    assert_ok(rt_dev_alloc(&dx, nx * 4));
    assert_ok(rt_dev_alloc(&dy, nh * 4));
    for (int i = 0; i < 2; i++) {
        assert_ok(rt_dev_alloc(&dh[i], nh * 4));
        assert_ok(rt_dev_alloc(&dc[i], nh * 4));
        assert_ok(rt_dev_zero(dh[i], nh * 4, NULL));
        assert_ok(rt_dev_zero(dc[i], nh * 4, NULL));
    }
    assert_ok(rt_dev_upload(dx, x, nx * 4, NULL));
    assert_ok(rt_dev_sync(NULL));
    CUstream s;
    cu_ok(cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    const void *in[2] = {(void *)(uintptr_t)dh[0], (void *)(uintptr_t)dc[0]};
    void *out[2] = {(void *)(uintptr_t)dh[1], (void *)(uintptr_t)dc[1]};
    const void *in1[2] = {out[0], out[1]};
    void *out1[2] = {(void *)(uintptr_t)dh[0], (void *)(uintptr_t)dc[0]};
    rnnc_forward_args a = {.seq_len = 1, .batch = 64, .x = (void *)(uintptr_t)dx,
                           .y = (void *)(uintptr_t)dy, .init = in, .final = out,
                           .device_pointers = true, .stream = s};
    rnnc_forward_args a1 = a;
    a1.init = in1;
    a1.final = out1;
    /* one plain call first: kernels compiled and loaded, scratch sized */
    assert_ok(rnnc_model_forward(f, &a));
    assert_ok(rt_dev_sync(s));
    assert_ok(rt_dev_zero(dh[1], nh * 4, s));
    assert_ok(rt_dev_zero(dc[1], nh * 4, s));
    CUgraph graph;
    CUgraphExec exec;
    cu_ok(g.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    /* states 0 -> 1, then 1 -> 0: the next replay reads what this one wrote */
    rnnc_status st = rnnc_model_forward(f, &a);
    if (st == RNNC_OK)
        st = rnnc_model_forward(f, &a1);
    CUresult e = g.end(s, &graph);
    if (st)
        fail_msg("forward under capture: %s", rnnc_last_error());
    cu_ok(e, "cuStreamEndCapture");
    cu_ok(g.inst(&exec, graph, 0), "cuGraphInstantiate");
    CUevent e0, e1;
    cu_ok(cu->EventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
    cu_ok(cu->EventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
    cu_ok(cu->EventRecord(e0, s), "cuEventRecord");
    for (int i = 0; i < STEPS / 2; i++)
        cu_ok(g.launch(exec, s), "cuGraphLaunch");
    cu_ok(cu->EventRecord(e1, s), "cuEventRecord");
    cu_ok(cu->EventSynchronize(e1), "cuEventSynchronize");
    float ms = 0;
    cu_ok(cu->EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    tu_poison_f32(y, nh);
    tu_poison_f32(h, nh);
    assert_ok(rt_dev_download(y, dy, nh * 4, s));
    assert_ok(rt_dev_download(h, dh[0], nh * 4, s));
    assert_ok(rt_dev_download(c, dc[0], nh * 4, s));
    assert_ok(rt_dev_sync(s));
    double ey = rel_err(y, yr, nh), eh = rel_err(h, hr, nh), ec = rel_err(c, cr, nh);
    printf("  graph: %d T=1 B=64 H=512 forwards (%d replays of two): %.3f ms (%.1f us each); "
           "y %.2e h %.2e c %.2e\n",
           STEPS, STEPS / 2, ms, 1000.0 * ms / STEPS, ey, eh, ec);
    assert_true(ey <= 1e-5 && eh <= 1e-5 && ec <= 1e-5);
    g.exec_destroy(exec);
    g.destroy(graph);
    cu->EventDestroy(e0);
    cu->EventDestroy(e1);
    cu->StreamDestroy(s);
    rt_dev_free(dx);
    rt_dev_free(dy);
    for (int i = 0; i < 2; i++) {
        rt_dev_free(dh[i]);
        rt_dev_free(dc[i]);
    }
    free(x);
    free(h);
    free(c);
    free(y);
    free(hr);
    free(cr);
    free(yr);
    rnnc_model_destroy(f);
    rnnc_model_destroy(r);
}

int main(void)
{
    tu_require_gpu();
    setenv("RNNC_AUTOTUNE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_capture),
        cmocka_unit_test(test_outer_products),
        cmocka_unit_test(test_tf32),
        cmocka_unit_test(test_3xtf32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
