/* probe_check.h: the CUDA runtime check the standalone probes (bench/*_probe.cu,
 * built by hand with nvcc on the GPU machine) share: a failed call prints
 * where and why, and the probe exits. */
#ifndef RNNC_BENCH_PROBE_CHECK_H
#define RNNC_BENCH_PROBE_CHECK_H

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#endif
