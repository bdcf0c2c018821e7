/* probe_check.h: what the standalone probes (bench/*_probe.cu, built by
 * hand with nvcc on the GPU machine) share: the CUDA runtime check (a
 * failed call prints where and why, and the probe exits) and the median
 * time of a launch. */
#ifndef RNNC_BENCH_PROBE_CHECK_H
#define RNNC_BENCH_PROBE_CHECK_H

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* Median ms of `runs` runs of run() after `warm` (CUDA events around each). */
template <class F> static double median_ms(F run, int warm, int runs)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int it = 0; it < warm + runs; ++it) {
        CK(cudaEventRecord(a));
        run();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (it >= warm)
            t.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

#endif
