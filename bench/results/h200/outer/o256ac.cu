/* rnnc fused kernels: cell lstm, B=256 I=1024 H=1024 P=1024, sm_90, f32 ffma, hoist all, ut=8 bt=256 nt=512 rr=8 bb=8 grid=128 kc=32 outer */
struct rnnc_io { const float *in[4]; float *out[4]; };
/* cp.async (sm_80+): 16-byte copies global -> shared, zero-filled where !ok */
__device__ __forceinline__ void rnnc_cp16(float *dst, const float *src, bool ok)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" : : "r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
/* cp.async.wait_group takes a constant: n is one once the loop is unrolled */
__device__ __forceinline__ void rnnc_cp_wait(int n)
{
    switch (n) {
        case 0: asm volatile("cp.async.wait_group 0;" : : : "memory"); break;
        case 1: asm volatile("cp.async.wait_group 1;" : : : "memory"); break;
        case 2: asm volatile("cp.async.wait_group 2;" : : : "memory"); break;
        default: asm volatile("cp.async.wait_group 3;" : : : "memory"); break;
    }
}
/* programmatic dependent launch: wait for the work before this grid, then let the next grid start */
__device__ __forceinline__ void rnnc_pdl(void)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" : : : "memory");
    asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
#endif
}
__device__ __forceinline__ void rnnc_pdl_go(void)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
#endif
}
__device__ __forceinline__ void rnnc_pdl_wait(void)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" : : : "memory");
#endif
}
#define N_ 4096
/* rows of M the large tiles take: whole waves of 264 blocks (a last wave under */
/* half full is left to the tail's small tiles) */
__device__ __forceinline__ int rnnc_rows7(int M)
{
    const int tiles = (M + 127) / 128 * 32, rem = tiles % 264;
    return rem == 0 || rem * 2 > 264 ? M : min(M, (tiles - rem) / 32 * 128);
}
/* %7 linear(x, weight_ih) over the rows of whole waves: tiles of 128 x 128 */
extern "C" __global__ void __launch_bounds__(256, 2) rnnc_gemm7(const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io)
{
    __shared__ __align__(16) float As[2][8][132];
    __shared__ __align__(16) float Ws[2][8][132];
    rnnc_pdl();
    const int M = rnnc_rows7(T * 256), tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.x * 128, n0 = blockIdx.y * 128;
    if (m0 >= M) return; /* the tail's rows */
    const size_t TB = (size_t)T * 256;
    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;
    float c_[8][8];
    for (int i = 0; i < 8; ++i) for (int j = 0; j < 8; ++j) c_[i][j] = 0.f;
    float4 ra, rw[1];
    int k0 = 0;
    {
        const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
        ra = make_float4(0.f, 0.f, 0.f, 0.f);
        if (m0 + lr < M && k0 + lk < 1024) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 1024 + k0 + lk));
    }
    {
        const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
        rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + lr < N_ && k0 + lk < 1024) rw[0] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
    }
#define STORE_(buf) { \
    { const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4; As[buf][lk][lr] = ra.x; As[buf][lk + 1][lr] = ra.y; As[buf][lk + 2][lr] = ra.z; As[buf][lk + 3][lr] = ra.w; } \
    { const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4; Ws[buf][lk][lr] = rw[0].x; Ws[buf][lk + 1][lr] = rw[0].y; Ws[buf][lk + 2][lr] = rw[0].z; Ws[buf][lk + 3][lr] = rw[0].w; } \
}
    STORE_(0);
    __syncthreads();
    for (int it = 0; k0 < 1024; ++it) {
        const int cb = it & 1;
        k0 += 8;
        const bool more = k0 < 1024;
        if (more) {
            {
                const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
                ra = make_float4(0.f, 0.f, 0.f, 0.f);
                if (m0 + lr < M && k0 + lk < 1024) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 1024 + k0 + lk));
            }
            {
                const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
                rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n0 + lr < N_ && k0 + lk < 1024) rw[0] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
            }
        }
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            const float4 a0 = *(const float4 *)&As[cb][kk][0 + ty * 4];
            const float4 a1 = *(const float4 *)&As[cb][kk][64 + ty * 4];
            const float a_[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float4 b0 = *(const float4 *)&Ws[cb][kk][0 + tx * 4];
            const float4 b1 = *(const float4 *)&Ws[cb][kk][64 + tx * 4];
            const float b_[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) c_[i][j] = fmaf(a_[i], b_[j], c_[i][j]);
        }
        if (more) STORE_(cb ^ 1);
        __syncthreads();
    }
#undef STORE_
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + (i / 4) * 64 + ty * 4 + i % 4;
        if (m >= M) continue;
#pragma unroll
        for (int jv = 0; jv < 2; ++jv) {
            const int j = jv * 4, col0 = n0 + (j / 4) * 64 + tx * 4 + j % 4;
            if (col0 >= N_) continue;
            { /* %10 add(%7, %9) */
                float v_[4];
#pragma unroll
                for (int e_ = 0; e_ < 4; ++e_) {
                    const int col = min(col0 + e_, N_ - 1);
                    const float acc = c_[i][j + e_];
                    (void)acc; (void)col;
                    v_[e_] = (acc) + (fold[0 + col]);
                }
                float *const p_ = hz + (size_t)0 * TB + (size_t)m * 4096 + col0;
                if (col0 + 4 <= N_ && ((size_t)p_ & 15) == 0)
                    *(float4 *)p_ = make_float4(v_[0], v_[1], v_[2], v_[3]);
                else
                    for (int e_ = 0; e_ < 4 && col0 + e_ < N_; ++e_) p_[e_] = v_[e_];
            }
        }
    }
}
/* %7 linear(x, weight_ih) over the rows its large tiles leave: tiles of 32 x 64 */
extern "C" __global__ void __launch_bounds__(256) rnnc_gemm7t(const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io)
{
    __shared__ __align__(16) float As[2][32][36];
    __shared__ __align__(16) float Ws[2][32][68];
    rnnc_pdl_go();
    const int M = T * 256, R_ = rnnc_rows7(M), tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int tl_ = blockIdx.x; ; tl_ += gridDim.x) {
        const int m0 = R_ + tl_ / 64 * 32, n0 = tl_ % 64 * 64;
        if (m0 >= M) break;
        const size_t TB = (size_t)T * 256;
        (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;
        float c_[2][4];
        for (int i = 0; i < 2; ++i) for (int j = 0; j < 4; ++j) c_[i][j] = 0.f;
        float4 ra, rw[2];
        int k0 = 0;
        {
            const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
            ra = make_float4(0.f, 0.f, 0.f, 0.f);
            if (m0 + lr < M && k0 + lk < 1024) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 1024 + k0 + lk));
        }
        {
            const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
            rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (n0 + lr < N_ && k0 + lk < 1024) rw[0] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
        }
        {
            const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
            rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (n0 + lr < N_ && k0 + lk < 1024) rw[1] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
        }
#define STORE_(buf) { \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; As[buf][lk][lr] = ra.x; As[buf][lk + 1][lr] = ra.y; As[buf][lk + 2][lr] = ra.z; As[buf][lk + 3][lr] = ra.w; } \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; Ws[buf][lk][lr] = rw[0].x; Ws[buf][lk + 1][lr] = rw[0].y; Ws[buf][lk + 2][lr] = rw[0].z; Ws[buf][lk + 3][lr] = rw[0].w; } \
    { const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4; Ws[buf][lk][lr] = rw[1].x; Ws[buf][lk + 1][lr] = rw[1].y; Ws[buf][lk + 2][lr] = rw[1].z; Ws[buf][lk + 3][lr] = rw[1].w; } \
}
        STORE_(0);
        __syncthreads();
        for (int it = 0; k0 < 1024; ++it) {
            const int cb = it & 1;
            k0 += 32;
            const bool more = k0 < 1024;
            if (more) {
                {
                    const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                    ra = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (m0 + lr < M && k0 + lk < 1024) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 1024 + k0 + lk));
                }
                {
                    const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                    rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (n0 + lr < N_ && k0 + lk < 1024) rw[0] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
                }
                {
                    const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
                    rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (n0 + lr < N_ && k0 + lk < 1024) rw[1] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
                }
            }
#pragma unroll
            for (int kk = 0; kk < 32; ++kk) {
                const float2 a0 = *(const float2 *)&As[cb][kk][ty * 2];
                const float a_[2] = {a0.x, a0.y};
                const float4 b0 = *(const float4 *)&Ws[cb][kk][0 + tx * 4];
                const float b_[4] = {b0.x, b0.y, b0.z, b0.w};
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) c_[i][j] = fmaf(a_[i], b_[j], c_[i][j]);
            }
            if (more) STORE_(cb ^ 1);
            __syncthreads();
        }
#undef STORE_
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int m = m0 + ty * 2 + i;
            if (m >= M) continue;
#pragma unroll
            for (int jv = 0; jv < 1; ++jv) {
                const int j = jv * 4, col0 = n0 + (j / 4) * 64 + tx * 4 + j % 4;
                if (col0 >= N_) continue;
                { /* %10 add(%7, %9) */
                    float v_[4];
#pragma unroll
                    for (int e_ = 0; e_ < 4; ++e_) {
                        const int col = min(col0 + e_, N_ - 1);
                        const float acc = c_[i][j + e_];
                        (void)acc; (void)col;
                        v_[e_] = (acc) + (fold[0 + col]);
                    }
                    float *const p_ = hz + (size_t)0 * TB + (size_t)m * 4096 + col0;
                    if (col0 + 4 <= N_ && ((size_t)p_ & 15) == 0)
                        *(float4 *)p_ = make_float4(v_[0], v_[1], v_[2], v_[3]);
                    else
                        for (int e_ = 0; e_ < 4 && col0 + e_ < N_; ++e_) p_[e_] = v_[e_];
                }
            }
        }
    }
    rnnc_pdl_wait();
}
/* %7 linear(x, weight_ih) over all T*B rows: tiles of 32 x 64 for few rows */
extern "C" __global__ void __launch_bounds__(256) rnnc_gemm7s(const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io)
{
    __shared__ __align__(16) float As[2][32][36];
    __shared__ __align__(16) float Ws[2][32][68];
    rnnc_pdl();
    const int M = T * 256, tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.x * 32, n0 = blockIdx.y * 64;
    const size_t TB = (size_t)T * 256;
    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;
    float c_[2][4];
    for (int i = 0; i < 2; ++i) for (int j = 0; j < 4; ++j) c_[i][j] = 0.f;
    float4 ra, rw[2];
    int k0 = 0;
    {
        const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
        ra = make_float4(0.f, 0.f, 0.f, 0.f);
        if (m0 + lr < M && k0 + lk < 1024) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 1024 + k0 + lk));
    }
    {
        const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
        rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + lr < N_ && k0 + lk < 1024) rw[0] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
    }
    {
        const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
        rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + lr < N_ && k0 + lk < 1024) rw[1] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
    }
#define STORE_(buf) { \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; As[buf][lk][lr] = ra.x; As[buf][lk + 1][lr] = ra.y; As[buf][lk + 2][lr] = ra.z; As[buf][lk + 3][lr] = ra.w; } \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; Ws[buf][lk][lr] = rw[0].x; Ws[buf][lk + 1][lr] = rw[0].y; Ws[buf][lk + 2][lr] = rw[0].z; Ws[buf][lk + 3][lr] = rw[0].w; } \
    { const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4; Ws[buf][lk][lr] = rw[1].x; Ws[buf][lk + 1][lr] = rw[1].y; Ws[buf][lk + 2][lr] = rw[1].z; Ws[buf][lk + 3][lr] = rw[1].w; } \
}
    STORE_(0);
    __syncthreads();
    for (int it = 0; k0 < 1024; ++it) {
        const int cb = it & 1;
        k0 += 32;
        const bool more = k0 < 1024;
        if (more) {
            {
                const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                ra = make_float4(0.f, 0.f, 0.f, 0.f);
                if (m0 + lr < M && k0 + lk < 1024) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 1024 + k0 + lk));
            }
            {
                const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n0 + lr < N_ && k0 + lk < 1024) rw[0] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
            }
            {
                const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
                rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n0 + lr < N_ && k0 + lk < 1024) rw[1] = __ldg((const float4 *)((wts + 4194304) + (size_t)(n0 + lr) * 1024 + k0 + lk));
            }
        }
#pragma unroll
        for (int kk = 0; kk < 32; ++kk) {
            const float2 a0 = *(const float2 *)&As[cb][kk][ty * 2];
            const float a_[2] = {a0.x, a0.y};
            const float4 b0 = *(const float4 *)&Ws[cb][kk][0 + tx * 4];
            const float b_[4] = {b0.x, b0.y, b0.z, b0.w};
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) c_[i][j] = fmaf(a_[i], b_[j], c_[i][j]);
        }
        if (more) STORE_(cb ^ 1);
        __syncthreads();
    }
#undef STORE_
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int m = m0 + ty * 2 + i;
        if (m >= M) continue;
#pragma unroll
        for (int jv = 0; jv < 1; ++jv) {
            const int j = jv * 4, col0 = n0 + (j / 4) * 64 + tx * 4 + j % 4;
            if (col0 >= N_) continue;
            { /* %10 add(%7, %9) */
                float v_[4];
#pragma unroll
                for (int e_ = 0; e_ < 4; ++e_) {
                    const int col = min(col0 + e_, N_ - 1);
                    const float acc = c_[i][j + e_];
                    (void)acc; (void)col;
                    v_[e_] = (acc) + (fold[0 + col]);
                }
                float *const p_ = hz + (size_t)0 * TB + (size_t)m * 4096 + col0;
                if (col0 + 4 <= N_ && ((size_t)p_ & 15) == 0)
                    *(float4 *)p_ = make_float4(v_[0], v_[1], v_[2], v_[3]);
                else
                    for (int e_ = 0; e_ < 4 && col0 + e_ < N_; ++e_) p_[e_] = v_[e_];
            }
        }
    }
}
/* %7 linear(x, weight_ih) over few rows of T*B: tiles of 32 x 32, K split over 8 warps (64 columns each per pass), partial tiles summed in shared memory */
extern "C" __global__ void __launch_bounds__(256) rnnc_gemm7k(const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io)
{
    extern __shared__ float4 smem4_[];
    float *sm_ = (float *)smem4_;
    rnnc_pdl();
    enum { KP = 68, K_ = 1024 };
    const int M = T * 256, tid = threadIdx.x, w = tid >> 5, l = tid & 31;
    const int ty = l >> 2, tx = l & 3;
    const int m0 = blockIdx.x * 32, n0 = blockIdx.y * 32;
    const size_t TB = (size_t)T * 256;
    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)len; (void)rev;
    const float *const wsrc = wts + 4194304;
    float *const sl = sm_ + w * (64 * KP); /* this warp's 32 rows of x, then 32 of W */
    float c_[4][8];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) c_[i][j] = 0.f;
    for (int k0 = 0; k0 < K_; k0 += 512) {
        const int kw = k0 + w * 64;
#pragma unroll
        for (int g = 0; g < 4; ++g) {
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const int i = q * 32 + l, r = i / 4, kq = (g * 4 + i % 4) * 4;
                const bool isx = r < 32;
                const int gr = isx ? m0 + r : n0 + r - 32;
                const bool ok = (isx ? gr < M : gr < N_) && kw + kq < K_;
                const float *src = (isx ? x : wsrc) + (size_t)(ok ? gr : 0) * K_ + (ok ? kw + kq : 0);
                rnnc_cp16(sl + r * KP + kq, src, ok);
            }
            asm volatile("cp.async.commit_group;" : : : "memory");
        }
#pragma unroll
        for (int g = 0; g < 4; ++g) {
            rnnc_cp_wait(3 - g);
            __syncwarp();
            if (kw >= K_) continue;
#pragma unroll
            for (int kk = g * 16; kk < g * 16 + 16; kk += 4) {
                float4 a[4], b[8];
#pragma unroll
                for (int i = 0; i < 4; ++i) a[i] = *(const float4 *)(sl + (ty + 8 * i) * KP + kk);
#pragma unroll
                for (int j = 0; j < 8; ++j) b[j] = *(const float4 *)(sl + (32 + tx + 4 * j) * KP + kk);
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 8; ++j) {
                        c_[i][j] = fmaf(a[i].x, b[j].x, c_[i][j]);
                        c_[i][j] = fmaf(a[i].y, b[j].y, c_[i][j]);
                        c_[i][j] = fmaf(a[i].z, b[j].z, c_[i][j]);
                        c_[i][j] = fmaf(a[i].w, b[j].w, c_[i][j]);
                    }
            }
        }
        __syncwarp();
    }
    __syncthreads();
    /* the warps' partial tiles, rows padded to 36 floats (conflict-free stores) */
    float *const red = sm_;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) red[(w * 32 + ty + 8 * i) * 36 + tx + 4 * j] = c_[i][j];
    __syncthreads();
    for (int e = tid; e < 1024; e += 256) {
        const int m = m0 + e / 32, col = n0 + e % 32;
        if (m >= M || col >= N_) continue;
        float acc = 0.f;
#pragma unroll
        for (int v = 0; v < 8; ++v) acc += red[(v * 32 + e / 32) * 36 + e % 32];
        {
            hz[(size_t)0 * TB + (size_t)m * 4096 + col] = (acc) + (fold[0 + col]); /* %10 add(%7, %9) */
        }
    }
}
#undef N_
/* the step kernel: all T steps in one cooperative launch; a block owns UT hidden units x BT batch rows; blocks exchange states through global memory and a barrier per phase */
#define B 256
#define H 1024
#define UT 8
#define BT 256
#define BTP 256
#define NUB 128
#define NT 512
#define E (UT * BTP)
#define STF 524288
#define ROWT(gb, tt) ((size_t)(tt) * B + (gb))
#define LEN(gb) (len ? len[gb] : T)
#define TR(gb, s) ((rev && (s) < LEN(gb)) ? LEN(gb) - 1 - (s) : (s))
#define ROW(gb) ROWT(gb, TR(gb, t))
#define YLD 1024
#define FIN (st + 2 * (size_t)STF)
__device__ __forceinline__ void rnnc_pfl2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];" : : "l"(p));
}
__device__ __forceinline__ void rnnc_arrive(unsigned *n)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" : : "l"(n) : "memory");
}
__device__ __forceinline__ void rnnc_wait(const unsigned *n, unsigned v)
{
    if ((threadIdx.x & 31) == 0) {
        unsigned a;
        do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(a) : "l"(n) : "memory");
        while ((int)(a - v) < 0);
    }
    __syncwarp();
}
__device__ __forceinline__ void rnnc_chan(float &n, float &m, float &q, float nb, float mb, float qb)
{
    const float nn = n + nb;
    if (nn == 0.f) return;
    const float d = mb - m, f = nb / nn;
    m += d * f;
    q += qb + d * d * n * f;
    n = nn;
}
/* shared memory of a step block (floats): x of the step's linears, staged at 0 */
#define SM_W8 24576 /* %8 linear(h, weight_hh): weight slice */
#define SM_L8 0 /* %8 linear(h, weight_hh): result */
/* bulk staging (cuda_bulk.c): 32 chunks of 32 columns, 3 buffers; the state's chunk-major copy cp, chunk ch of this block's rows, and the place of (gb, cc) */
#define NSB 3
#define KCB 32
#define NCHB 32
#define CHF 8192
#define SM_MB 57344
#define BSRC(cp, ch) (xb + 0 + (size_t)(cp) * 262144 + ((size_t)(ch) * 1 + bb) * CHF)
#define BPUT(cp, gb, cc) (xb + 0 + (size_t)(cp) * 262144 + (((size_t)((cc) / KCB) * 1 + (gb) / BT) * KCB + (cc) % KCB) * BTP + (gb) % BT)
#define BSW(r, g) (((g) + (r) * 4) & 7)
__device__ __forceinline__ void rnnc_mb_init(unsigned long long *mb, unsigned n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"((unsigned)__cvta_generic_to_shared(mb)), "r"(n) : "memory");
}
/* bytes from global to shared memory, completing on mbarrier mb (one arrival that expects them) */
__device__ __forceinline__ void rnnc_bulk_get(float *dst, const float *src, unsigned bytes, unsigned long long *mb)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst), m = (unsigned)__cvta_generic_to_shared(mb);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(m), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" : : "r"(d), "l"(src), "r"(bytes), "r"(m) : "memory");
}
__device__ __forceinline__ void rnnc_mb_arrive(unsigned long long *mb)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" : : "r"((unsigned)__cvta_generic_to_shared(mb)) : "memory");
}
__device__ __forceinline__ void rnnc_mb_wait(unsigned long long *mb, unsigned ph)
{
    const unsigned m = (unsigned)__cvta_generic_to_shared(mb);
    unsigned ok;
    do asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(m), "r"(ph) : "memory");
    while (!ok);
}
/* one more on the count at n; the count before (acquire and release) */
__device__ __forceinline__ unsigned rnnc_count(unsigned *n)
{
    unsigned v;
    asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(v) : "r"((unsigned)__cvta_generic_to_shared(n)) : "memory");
    return v;
}
extern "C" __global__ void __launch_bounds__(NT, 1) rnnc_step(const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io)
{
    extern __shared__ float4 smem4_[];
    float *sm_ = (float *)smem4_;
    const int tid = threadIdx.x, ub = blockIdx.x % NUB, bb = blockIdx.x / NUB;
    const int u0 = ub * UT, b0 = bb * BT;
    const size_t TB = (size_t)T * B;
    (void)x; (void)y; (void)hz; (void)fold; (void)wts; (void)xb; (void)part; (void)TB; (void)ub; (void)len; (void)rev;
    const float *const si0_ = io.in[0] ? io.in[0] : st + 0; /* state h */
    float *const so0_ = io.out[0] ? io.out[0] : FIN + 0;
    (void)si0_; (void)so0_;
    const float *const si1_ = io.in[1] ? io.in[1] : st + 262144; /* state c */
    float *const so1_ = io.out[1] ? io.out[1] : FIN + 262144;
    (void)si1_; (void)so1_;
#pragma unroll 4
    for (int i = tid; i < 8192; i += NT) {
        const int r = i % 32, k4 = i / 32, s = r / UT, gu = u0 + r % UT;
        float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);
        if (gu < H) v_ = __ldg((const float4 *)(wts + 0 + (size_t)(s * H + gu) * 1024 + k4 * 4));
        float *const d_ = &sm_[SM_W8 + k4 * 128 + r];
        d_[0] = v_.x; d_[32] = v_.y; d_[64] = v_.z; d_[96] = v_.w;
    }
    unsigned long long *const mb_ = (unsigned long long *)(sm_ + SM_MB);
    const unsigned bn_ = (unsigned)(BTP * KCB * 4);
    unsigned ph_ = 0u, eph_ = 0u;
    (void)bn_; (void)ph_; (void)eph_;
    if (tid == 0) {
        for (int s_ = 0; s_ < NSB; ++s_) rnnc_mb_init(mb_ + s_, 1);
        for (int s_ = 0; s_ < NSB; ++s_) mb_[NSB + s_] = 0ull;
        asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
    }
    rnnc_pdl();
    int tend_ = 0;
    for (int b = 0; b < BT && b0 + b < B; ++b) tend_ = max(tend_, LEN(b0 + b));
    asm volatile("cp.async.wait_all;" : : : "memory"); /* the weights */
    __syncthreads();
    unsigned epoch = 0;
    for (int t = 0; t < tend_; ++t) {
        const float *const cur = st + (size_t)(t & 1) * STF;
        float *const nxt = st + (size_t)((t + 1) & 1) * STF;
        (void)cur; (void)nxt;
        const float *const s0_ = t == 0 ? si0_ : cur + 0; (void)s0_;
        const float *const s1_ = t == 0 ? si1_ : cur + 262144; (void)s1_;
        /* phase 0 */
        /* %8 linear(h, weight_hh): outer products (cuda_outer.c), threads own 8 x 8 outputs, each chunk's K split over 4 groups */
        {
            const int g_ = tid / 128, lt_ = tid % 128, rc_ = lt_ % 4, bc_ = lt_ / 4;
            float a0_0 = 0.f;
            float a0_1 = 0.f;
            float a0_2 = 0.f;
            float a0_3 = 0.f;
            float a0_4 = 0.f;
            float a0_5 = 0.f;
            float a0_6 = 0.f;
            float a0_7 = 0.f;
            float a1_0 = 0.f;
            float a1_1 = 0.f;
            float a1_2 = 0.f;
            float a1_3 = 0.f;
            float a1_4 = 0.f;
            float a1_5 = 0.f;
            float a1_6 = 0.f;
            float a1_7 = 0.f;
            float a2_0 = 0.f;
            float a2_1 = 0.f;
            float a2_2 = 0.f;
            float a2_3 = 0.f;
            float a2_4 = 0.f;
            float a2_5 = 0.f;
            float a2_6 = 0.f;
            float a2_7 = 0.f;
            float a3_0 = 0.f;
            float a3_1 = 0.f;
            float a3_2 = 0.f;
            float a3_3 = 0.f;
            float a3_4 = 0.f;
            float a3_5 = 0.f;
            float a3_6 = 0.f;
            float a3_7 = 0.f;
            float a4_0 = 0.f;
            float a4_1 = 0.f;
            float a4_2 = 0.f;
            float a4_3 = 0.f;
            float a4_4 = 0.f;
            float a4_5 = 0.f;
            float a4_6 = 0.f;
            float a4_7 = 0.f;
            float a5_0 = 0.f;
            float a5_1 = 0.f;
            float a5_2 = 0.f;
            float a5_3 = 0.f;
            float a5_4 = 0.f;
            float a5_5 = 0.f;
            float a5_6 = 0.f;
            float a5_7 = 0.f;
            float a6_0 = 0.f;
            float a6_1 = 0.f;
            float a6_2 = 0.f;
            float a6_3 = 0.f;
            float a6_4 = 0.f;
            float a6_5 = 0.f;
            float a6_6 = 0.f;
            float a6_7 = 0.f;
            float a7_0 = 0.f;
            float a7_1 = 0.f;
            float a7_2 = 0.f;
            float a7_3 = 0.f;
            float a7_4 = 0.f;
            float a7_5 = 0.f;
            float a7_6 = 0.f;
            float a7_7 = 0.f;
            if (t > 0 && (tid & 31) == 0) asm volatile("fence.proxy.async.global;" : : : "memory");
            if (t > 0 && tid == 0) {
                for (int s_ = 0; s_ < min(NSB, NCHB); ++s_)
                    rnnc_bulk_get(sm_ + s_ * CHF, BSRC(t & 1, s_), bn_, mb_ + s_);
            }
            for (int ch_ = 0; ch_ < NCHB; ++ch_) {
                const int xo_ = ch_ % NSB * CHF;
                if (t == 0) {
                    for (int i = tid; i < BTP * (KCB / 4); i += NT) {
                        const int b = i % BTP, c4 = i / BTP, gb = b0 + b;
                        float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);
                        if (b < BT && gb < B) v_ = __ldcg((const float4 *)(s0_ + (size_t)gb * 1024 + ch_ * KCB + c4 * 4));
                        float *const d_ = &sm_[xo_ + c4 * 4 * BTP + b];
                        d_[0] = v_.x; d_[BTP] = v_.y; d_[2 * BTP] = v_.z; d_[3 * BTP] = v_.w;
                    }
                    __syncthreads();
                } else {
                    rnnc_mb_wait(mb_ + ch_ % NSB, (ph_ >> (ch_ % NSB)) & 1u);
                    ph_ ^= 1u << (ch_ % NSB);
                }
                const float *const wc_ = sm_ + SM_W8 + ch_ * KCB * 32, *const xc_ = sm_ + xo_;
#pragma unroll
                for (int kq_ = 0; kq_ < 8; ++kq_) {
                    const int k = g_ * 8 + kq_;
                    const float4 w0 = *(const float4 *)&wc_[k * 32 + 0 + rc_ * 4];
                    const float4 w1 = *(const float4 *)&wc_[k * 32 + 16 + rc_ * 4];
                    const float4 x0 = *(const float4 *)&xc_[k * BTP + 0 + bc_ * 4];
                    const float4 x1 = *(const float4 *)&xc_[k * BTP + 128 + bc_ * 4];
                    a0_0 = fmaf(w0.x, x0.x, a0_0);
                    a0_1 = fmaf(w0.x, x0.y, a0_1);
                    a0_2 = fmaf(w0.x, x0.z, a0_2);
                    a0_3 = fmaf(w0.x, x0.w, a0_3);
                    a0_4 = fmaf(w0.x, x1.x, a0_4);
                    a0_5 = fmaf(w0.x, x1.y, a0_5);
                    a0_6 = fmaf(w0.x, x1.z, a0_6);
                    a0_7 = fmaf(w0.x, x1.w, a0_7);
                    a1_0 = fmaf(w0.y, x0.x, a1_0);
                    a1_1 = fmaf(w0.y, x0.y, a1_1);
                    a1_2 = fmaf(w0.y, x0.z, a1_2);
                    a1_3 = fmaf(w0.y, x0.w, a1_3);
                    a1_4 = fmaf(w0.y, x1.x, a1_4);
                    a1_5 = fmaf(w0.y, x1.y, a1_5);
                    a1_6 = fmaf(w0.y, x1.z, a1_6);
                    a1_7 = fmaf(w0.y, x1.w, a1_7);
                    a2_0 = fmaf(w0.z, x0.x, a2_0);
                    a2_1 = fmaf(w0.z, x0.y, a2_1);
                    a2_2 = fmaf(w0.z, x0.z, a2_2);
                    a2_3 = fmaf(w0.z, x0.w, a2_3);
                    a2_4 = fmaf(w0.z, x1.x, a2_4);
                    a2_5 = fmaf(w0.z, x1.y, a2_5);
                    a2_6 = fmaf(w0.z, x1.z, a2_6);
                    a2_7 = fmaf(w0.z, x1.w, a2_7);
                    a3_0 = fmaf(w0.w, x0.x, a3_0);
                    a3_1 = fmaf(w0.w, x0.y, a3_1);
                    a3_2 = fmaf(w0.w, x0.z, a3_2);
                    a3_3 = fmaf(w0.w, x0.w, a3_3);
                    a3_4 = fmaf(w0.w, x1.x, a3_4);
                    a3_5 = fmaf(w0.w, x1.y, a3_5);
                    a3_6 = fmaf(w0.w, x1.z, a3_6);
                    a3_7 = fmaf(w0.w, x1.w, a3_7);
                    a4_0 = fmaf(w1.x, x0.x, a4_0);
                    a4_1 = fmaf(w1.x, x0.y, a4_1);
                    a4_2 = fmaf(w1.x, x0.z, a4_2);
                    a4_3 = fmaf(w1.x, x0.w, a4_3);
                    a4_4 = fmaf(w1.x, x1.x, a4_4);
                    a4_5 = fmaf(w1.x, x1.y, a4_5);
                    a4_6 = fmaf(w1.x, x1.z, a4_6);
                    a4_7 = fmaf(w1.x, x1.w, a4_7);
                    a5_0 = fmaf(w1.y, x0.x, a5_0);
                    a5_1 = fmaf(w1.y, x0.y, a5_1);
                    a5_2 = fmaf(w1.y, x0.z, a5_2);
                    a5_3 = fmaf(w1.y, x0.w, a5_3);
                    a5_4 = fmaf(w1.y, x1.x, a5_4);
                    a5_5 = fmaf(w1.y, x1.y, a5_5);
                    a5_6 = fmaf(w1.y, x1.z, a5_6);
                    a5_7 = fmaf(w1.y, x1.w, a5_7);
                    a6_0 = fmaf(w1.z, x0.x, a6_0);
                    a6_1 = fmaf(w1.z, x0.y, a6_1);
                    a6_2 = fmaf(w1.z, x0.z, a6_2);
                    a6_3 = fmaf(w1.z, x0.w, a6_3);
                    a6_4 = fmaf(w1.z, x1.x, a6_4);
                    a6_5 = fmaf(w1.z, x1.y, a6_5);
                    a6_6 = fmaf(w1.z, x1.z, a6_6);
                    a6_7 = fmaf(w1.z, x1.w, a6_7);
                    a7_0 = fmaf(w1.w, x0.x, a7_0);
                    a7_1 = fmaf(w1.w, x0.y, a7_1);
                    a7_2 = fmaf(w1.w, x0.z, a7_2);
                    a7_3 = fmaf(w1.w, x0.w, a7_3);
                    a7_4 = fmaf(w1.w, x1.x, a7_4);
                    a7_5 = fmaf(w1.w, x1.y, a7_5);
                    a7_6 = fmaf(w1.w, x1.z, a7_6);
                    a7_7 = fmaf(w1.w, x1.w, a7_7);
                }
                if (t == 0) {
                    __syncthreads();
                } else {
                    __syncwarp();
                    if ((tid & 31) == 0) {
                        unsigned *const n_ = (unsigned *)(mb_ + NSB + ch_ % NSB);
                        if (rnnc_count(n_) == NT / 32 - 1) {
                            *n_ = 0u;
                            if (ch_ + NSB < NCHB)
                                rnnc_bulk_get(sm_ + xo_, BSRC(t & 1, ch_ + NSB), bn_, mb_ + ch_ % NSB);
                        }
                    }
                }
            }
            __syncthreads();
            {
                const bool hi_ = (g_ & 2) != 0;
                float *const out_ = sm_ + 0 + tid * 4;
                const float *const in_ = sm_ + 0 + (hi_ ? tid - 256 : tid + 256) * 4;
                *(float4 *)&out_[0 * 4 * NT] = make_float4(hi_ ? a0_0 : a4_0, hi_ ? a0_1 : a4_1, hi_ ? a0_2 : a4_2, hi_ ? a0_3 : a4_3);
                *(float4 *)&out_[1 * 4 * NT] = make_float4(hi_ ? a0_4 : a4_4, hi_ ? a0_5 : a4_5, hi_ ? a0_6 : a4_6, hi_ ? a0_7 : a4_7);
                *(float4 *)&out_[2 * 4 * NT] = make_float4(hi_ ? a1_0 : a5_0, hi_ ? a1_1 : a5_1, hi_ ? a1_2 : a5_2, hi_ ? a1_3 : a5_3);
                *(float4 *)&out_[3 * 4 * NT] = make_float4(hi_ ? a1_4 : a5_4, hi_ ? a1_5 : a5_5, hi_ ? a1_6 : a5_6, hi_ ? a1_7 : a5_7);
                *(float4 *)&out_[4 * 4 * NT] = make_float4(hi_ ? a2_0 : a6_0, hi_ ? a2_1 : a6_1, hi_ ? a2_2 : a6_2, hi_ ? a2_3 : a6_3);
                *(float4 *)&out_[5 * 4 * NT] = make_float4(hi_ ? a2_4 : a6_4, hi_ ? a2_5 : a6_5, hi_ ? a2_6 : a6_6, hi_ ? a2_7 : a6_7);
                *(float4 *)&out_[6 * 4 * NT] = make_float4(hi_ ? a3_0 : a7_0, hi_ ? a3_1 : a7_1, hi_ ? a3_2 : a7_2, hi_ ? a3_3 : a7_3);
                *(float4 *)&out_[7 * 4 * NT] = make_float4(hi_ ? a3_4 : a7_4, hi_ ? a3_5 : a7_5, hi_ ? a3_6 : a7_6, hi_ ? a3_7 : a7_7);
                __syncthreads();
                { const float4 v_ = *(const float4 *)&in_[0 * 4 * NT];
                    a0_0 = (hi_ ? a4_0 : a0_0) + v_.x;
                    a0_1 = (hi_ ? a4_1 : a0_1) + v_.y;
                    a0_2 = (hi_ ? a4_2 : a0_2) + v_.z;
                    a0_3 = (hi_ ? a4_3 : a0_3) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[1 * 4 * NT];
                    a0_4 = (hi_ ? a4_4 : a0_4) + v_.x;
                    a0_5 = (hi_ ? a4_5 : a0_5) + v_.y;
                    a0_6 = (hi_ ? a4_6 : a0_6) + v_.z;
                    a0_7 = (hi_ ? a4_7 : a0_7) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[2 * 4 * NT];
                    a1_0 = (hi_ ? a5_0 : a1_0) + v_.x;
                    a1_1 = (hi_ ? a5_1 : a1_1) + v_.y;
                    a1_2 = (hi_ ? a5_2 : a1_2) + v_.z;
                    a1_3 = (hi_ ? a5_3 : a1_3) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[3 * 4 * NT];
                    a1_4 = (hi_ ? a5_4 : a1_4) + v_.x;
                    a1_5 = (hi_ ? a5_5 : a1_5) + v_.y;
                    a1_6 = (hi_ ? a5_6 : a1_6) + v_.z;
                    a1_7 = (hi_ ? a5_7 : a1_7) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[4 * 4 * NT];
                    a2_0 = (hi_ ? a6_0 : a2_0) + v_.x;
                    a2_1 = (hi_ ? a6_1 : a2_1) + v_.y;
                    a2_2 = (hi_ ? a6_2 : a2_2) + v_.z;
                    a2_3 = (hi_ ? a6_3 : a2_3) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[5 * 4 * NT];
                    a2_4 = (hi_ ? a6_4 : a2_4) + v_.x;
                    a2_5 = (hi_ ? a6_5 : a2_5) + v_.y;
                    a2_6 = (hi_ ? a6_6 : a2_6) + v_.z;
                    a2_7 = (hi_ ? a6_7 : a2_7) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[6 * 4 * NT];
                    a3_0 = (hi_ ? a7_0 : a3_0) + v_.x;
                    a3_1 = (hi_ ? a7_1 : a3_1) + v_.y;
                    a3_2 = (hi_ ? a7_2 : a3_2) + v_.z;
                    a3_3 = (hi_ ? a7_3 : a3_3) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[7 * 4 * NT];
                    a3_4 = (hi_ ? a7_4 : a3_4) + v_.x;
                    a3_5 = (hi_ ? a7_5 : a3_5) + v_.y;
                    a3_6 = (hi_ ? a7_6 : a3_6) + v_.z;
                    a3_7 = (hi_ ? a7_7 : a3_7) + v_.w;
                }
            }
            {
                const bool hi_ = (g_ & 1) != 0;
                float *const out_ = sm_ + 16384 + tid * 4;
                const float *const in_ = sm_ + 16384 + (hi_ ? tid - 128 : tid + 128) * 4;
                *(float4 *)&out_[0 * 4 * NT] = make_float4(hi_ ? a0_0 : a2_0, hi_ ? a0_1 : a2_1, hi_ ? a0_2 : a2_2, hi_ ? a0_3 : a2_3);
                *(float4 *)&out_[1 * 4 * NT] = make_float4(hi_ ? a0_4 : a2_4, hi_ ? a0_5 : a2_5, hi_ ? a0_6 : a2_6, hi_ ? a0_7 : a2_7);
                *(float4 *)&out_[2 * 4 * NT] = make_float4(hi_ ? a1_0 : a3_0, hi_ ? a1_1 : a3_1, hi_ ? a1_2 : a3_2, hi_ ? a1_3 : a3_3);
                *(float4 *)&out_[3 * 4 * NT] = make_float4(hi_ ? a1_4 : a3_4, hi_ ? a1_5 : a3_5, hi_ ? a1_6 : a3_6, hi_ ? a1_7 : a3_7);
                __syncthreads();
                { const float4 v_ = *(const float4 *)&in_[0 * 4 * NT];
                    a0_0 = (hi_ ? a2_0 : a0_0) + v_.x;
                    a0_1 = (hi_ ? a2_1 : a0_1) + v_.y;
                    a0_2 = (hi_ ? a2_2 : a0_2) + v_.z;
                    a0_3 = (hi_ ? a2_3 : a0_3) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[1 * 4 * NT];
                    a0_4 = (hi_ ? a2_4 : a0_4) + v_.x;
                    a0_5 = (hi_ ? a2_5 : a0_5) + v_.y;
                    a0_6 = (hi_ ? a2_6 : a0_6) + v_.z;
                    a0_7 = (hi_ ? a2_7 : a0_7) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[2 * 4 * NT];
                    a1_0 = (hi_ ? a3_0 : a1_0) + v_.x;
                    a1_1 = (hi_ ? a3_1 : a1_1) + v_.y;
                    a1_2 = (hi_ ? a3_2 : a1_2) + v_.z;
                    a1_3 = (hi_ ? a3_3 : a1_3) + v_.w;
                }
                { const float4 v_ = *(const float4 *)&in_[3 * 4 * NT];
                    a1_4 = (hi_ ? a3_4 : a1_4) + v_.x;
                    a1_5 = (hi_ ? a3_5 : a1_5) + v_.y;
                    a1_6 = (hi_ ? a3_6 : a1_6) + v_.z;
                    a1_7 = (hi_ ? a3_7 : a1_7) + v_.w;
                }
            }
            { const int i_ = (g_ * 16 + 0) / 8, j_ = (g_ * 16 + 0) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_0; }
            { const int i_ = (g_ * 16 + 1) / 8, j_ = (g_ * 16 + 1) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_1; }
            { const int i_ = (g_ * 16 + 2) / 8, j_ = (g_ * 16 + 2) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_2; }
            { const int i_ = (g_ * 16 + 3) / 8, j_ = (g_ * 16 + 3) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_3; }
            { const int i_ = (g_ * 16 + 4) / 8, j_ = (g_ * 16 + 4) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_4; }
            { const int i_ = (g_ * 16 + 5) / 8, j_ = (g_ * 16 + 5) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_5; }
            { const int i_ = (g_ * 16 + 6) / 8, j_ = (g_ * 16 + 6) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_6; }
            { const int i_ = (g_ * 16 + 7) / 8, j_ = (g_ * 16 + 7) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a0_7; }
            { const int i_ = (g_ * 16 + 8) / 8, j_ = (g_ * 16 + 8) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_0; }
            { const int i_ = (g_ * 16 + 9) / 8, j_ = (g_ * 16 + 9) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_1; }
            { const int i_ = (g_ * 16 + 10) / 8, j_ = (g_ * 16 + 10) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_2; }
            { const int i_ = (g_ * 16 + 11) / 8, j_ = (g_ * 16 + 11) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_3; }
            { const int i_ = (g_ * 16 + 12) / 8, j_ = (g_ * 16 + 12) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_4; }
            { const int i_ = (g_ * 16 + 13) / 8, j_ = (g_ * 16 + 13) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_5; }
            { const int i_ = (g_ * 16 + 14) / 8, j_ = (g_ * 16 + 14) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_6; }
            { const int i_ = (g_ * 16 + 15) / 8, j_ = (g_ * 16 + 15) % 8;
                sm_[SM_L8 + (i_ / 4 * 16 + rc_ * 4 + i_ % 4) * (BTP + 1) + j_ / 4 * 128 + bc_ * 4 + j_ % 4] = a1_7; }
        }
        __syncthreads();
        for (int e = tid; e < E; e += NT) {
            const int u = e % UT, b = e / UT, gu = u0 + u, gb = b0 + b;
            if (b >= BT || gu >= H || gb >= B) continue;
            const size_t row = ROW(gb);
            const bool act_ = t < LEN(gb);
            (void)row; (void)u; (void)act_;
            const float v11_0 = (sm_[SM_L8 + (0 * UT + u) * (BTP + 1) + b]) + (__ldg(hz + (size_t)0 * TB + row * 4096 + 0 + gu)); /* %11 gates = add(%8, %10) */
            const float v11_1 = (sm_[SM_L8 + (1 * UT + u) * (BTP + 1) + b]) + (__ldg(hz + (size_t)0 * TB + row * 4096 + 1024 + gu));
            const float v11_2 = (sm_[SM_L8 + (2 * UT + u) * (BTP + 1) + b]) + (__ldg(hz + (size_t)0 * TB + row * 4096 + 2048 + gu));
            const float v11_3 = (sm_[SM_L8 + (3 * UT + u) * (BTP + 1) + b]) + (__ldg(hz + (size_t)0 * TB + row * 4096 + 3072 + gu));
            const float v12_0 = v11_0; /* %12 i = chunk(gates, 4, 0) */
            const float v13_0 = v11_1; /* %13 f = chunk(gates, 4, 1) */
            const float v14_0 = v11_2; /* %14 g = chunk(gates, 4, 2) */
            const float v15_0 = v11_3; /* %15 o = chunk(gates, 4, 3) */
            const float v16_0 = 1.f / (1.f + expf(-(v13_0))); /* %16 sigmoid(f) */
            const float v17_0 = (__ldcg(s1_ + gb * 1024 + 0 + gu)) * (v16_0); /* %17 mul(c, %16) */
            const float v18_0 = 1.f / (1.f + expf(-(v12_0))); /* %18 sigmoid(i) */
            const float v19_0 = tanhf(v14_0); /* %19 tanh(g) */
            const float v20_0 = (v18_0) * (v19_0); /* %20 mul(%18, %19) */
            const float v21_0 = (v17_0) + (v20_0); /* %21 c_next = add(%17, %20) */
            const float v22_0 = 1.f / (1.f + expf(-(v15_0))); /* %22 sigmoid(o) */
            const float v23_0 = tanhf(v21_0); /* %23 tanh(c_next) */
            const float v24_0 = (v22_0) * (v23_0); /* %24 h_next = mul(%22, %23) */
            const float n0_0 = act_ ? (v24_0) : (__ldcg(s0_ + gb * 1024 + 0 + gu)); /* next h */
            const float n1_0 = act_ ? (v21_0) : (__ldcg(s1_ + gb * 1024 + 0 + gu)); /* next c */
            __stcg(BPUT((t + 1) & 1, gb, 0 + gu), n0_0);
            __stcg(nxt + 0 + (size_t)gb * 1024 + 0 + gu, n0_0);
            if (t == tend_ - 1) __stcg(so0_ + (size_t)gb * 1024 + 0 + gu, n0_0);
            __stcg(nxt + 262144 + (size_t)gb * 1024 + 0 + gu, n1_0);
            if (t == tend_ - 1) __stcg(so1_ + (size_t)gb * 1024 + 0 + gu, n1_0);
            y[ROW(gb) * YLD + 0 + gu] = act_ ? (v24_0) : 0.f;
        }
        if (t + 1 < tend_) {
            __syncthreads();
            ++epoch;
            if (tid == 0) rnnc_arrive(bar + bb);
            for (int e = tid; e < E; e += NT) {
                const int u = e % UT, b = e / UT, gu = u0 + u, gb = b0 + b;
                if (b >= BT || gu >= H || gb >= B) continue;
                const size_t row = ROWT(gb, TR(gb, t + 1));
                (void)row;
                rnnc_pfl2(hz + (size_t)0 * TB + row * 4096 + 0 + gu);
                rnnc_pfl2(hz + (size_t)0 * TB + row * 4096 + 1024 + gu);
                rnnc_pfl2(hz + (size_t)0 * TB + row * 4096 + 2048 + gu);
                rnnc_pfl2(hz + (size_t)0 * TB + row * 4096 + 3072 + gu);
            }
            if (tid >= NT - 32) rnnc_wait(bar + bb, epoch * NUB);
            __syncthreads();
        }
    }
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        if (atomicAdd(bar + gridDim.x, 1u) == gridDim.x - 1) {
            __threadfence();
            for (unsigned i = 0; i < gridDim.x / NUB; ++i) bar[i] = 0u;
            bar[gridDim.x] = 0u;
        }
    }
}
