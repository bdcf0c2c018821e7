/*
 * step_probe.cu: where a generated step kernel's time goes, step by step.
 *
 * rnnc's FFMA LSTM at B = 256, I = H = 1024 takes about 65 us a step
 * against 33 us of multiply-adds at the SM's rate, and Nsight Compute's
 * samples only say "before", "in" and "after" the multiply.  This harness
 * runs the generated rnnc_step (`rnnc dump --stage cuda`, instrumented by
 * bench/step_probe.py, included as STEP_SRC) on random weights, state and
 * hoisted values, and reads back the SM clock thread 0 of each block
 * recorded at the marks the instrumenter put in (TS(i): the step's start,
 * chunk 0 landed, the chunk loop's end, the element phase's start and end,
 * the barrier's arrival and its end), for steps 20 to 83.
 *
 * Build and run (GPU machine), p.cu being step_probe.py's output in the
 * current directory: nvcc -O3 -gencode arch=compute_90a,code=sm_90a -I.
 * -DSTEP_SRC='"p.cu"' -o probe bench/step_probe.cu && ./probe NAME.
 * Prints the kernel's median time over 10 launches after 3 (CUDA events),
 * and the mean over blocks and steps of each interval between marks.
 */
#include "probe_check.h"

#define PROF_STEPS 64
#define PROF_MARKS 8
__device__ unsigned long long prof_[256 * PROF_STEPS * PROF_MARKS];
#define TS(i)                                                                             \
    do {                                                                                  \
        if (tid == 0 && t >= 20 && t < 20 + PROF_STEPS)                                   \
            prof_[((size_t)blockIdx.x * PROF_STEPS + (t - 20)) * PROF_MARKS + (i)] = clock64(); \
    } while (0)

#include STEP_SRC

static float *dev_random(size_t n, float scale)
{
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++)
        h[i] = scale * ((float)rand() / RAND_MAX * 2.f - 1.f);
    float *d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess)
        return nullptr;
    cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    return d;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "probe";
    int T = 100, grid = NUB * ((B + BT - 1) / BT);
    /* one block an SM either way: all of it (the plan's size is not in
     * the source) */
    size_t smem = 227 * 1024;
    float *y, *st, *xb, *dummy;
    unsigned *bar;
    float *hz = dev_random((size_t)T * B * 4 * H, 1.f);
    float *wts = dev_random((size_t)4 * H * H, 0.03f);
    CK(cudaMalloc(&y, (size_t)T * B * H * 4));
    st = dev_random((size_t)4 * STF, 0.5f);
    CK(cudaMalloc(&xb, (size_t)4 * B * H * 4));
    CK(cudaMalloc(&dummy, 1 << 20));
    CK(cudaMalloc(&bar, 4096));
    CK(cudaMemset(bar, 0, 4096));
    if (!hz || !wts || !st)
        return 1;
    CK(cudaFuncSetAttribute(rnnc_step, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    rnnc_io io = {};
    const float *cx = dummy, *cfold = dummy, *cw = wts;
    const int *len = nullptr;
    int rev = 0;
    void *args[] = {&cx, &y, &st, &hz, &cfold, &cw, &xb, &dummy, &bar, &T, &len, &rev, &io};
    const double ms = median_ms(
        [&] { CK(cudaLaunchCooperativeKernel((void *)rnnc_step, grid, NT, args, smem, 0)); }, 3, 10);
    std::vector<unsigned long long> p((size_t)grid * PROF_STEPS * PROF_MARKS);
    CK(cudaMemcpyFromSymbol(p.data(), prof_, p.size() * sizeof p[0]));
    /* the mean of each interval between consecutive marks a step recorded
     * (a mark set before the one numbered before it, as the `fused`
     * variant's 7, from the step's start), and the whole step (mark 0 to
     * the next step's mark 0), in cycles */
    double sum[PROF_MARKS] = {0}, whole = 0;
    long n[PROF_MARKS] = {0}, nw = 0;
    for (int b = 0; b < grid; b++)
        for (int s = 0; s < PROF_STEPS; s++) {
            const unsigned long long *m = &p[((size_t)b * PROF_STEPS + s) * PROF_MARKS];
            int prev = 0;
            for (int i = 1; i < PROF_MARKS; i++) {
                if (!m[i])
                    continue;
                sum[i] += (double)(m[i] - (m[i] >= m[prev] ? m[prev] : m[0]));
                n[i]++;
                prev = i;
            }
            if (s + 1 < PROF_STEPS) {
                whole += (double)(m[PROF_MARKS] - m[0]);
                nw++;
            }
        }
    printf("%s: %.3f ms (median of 10), %.1f us a step; cycles a step %.0f:", name,
           ms, ms * 1000.0 / T, whole / (nw ? nw : 1));
    for (int i = 1; i < PROF_MARKS; i++)
        if (n[i])
            printf(" [%d] %.0f", i, sum[i] / n[i]);
    printf("\n");
    return 0;
}
