/* rnnc fused kernels: cell lstm, B=256 I=1024 H=1024 P=1024, sm_90, f32 ffma, hoist all, ut=8 bt=256 nt=256 rr=8 bb=4 grid=128 kc=32 */
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
#define NT 256
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
#define SM_MB 57472
#define BSRC(cp, ch) (xb + 0 + (size_t)(cp) * B * 1024 + ((size_t)(ch) * B + b0) * KCB)
#define BPUT(cp, gb, cc) (xb + 0 + (size_t)(cp) * B * 1024 + ((size_t)((cc) / KCB) * B + (gb)) * KCB + (BSW(gb, ((cc) % KCB) >> 2) << 2) + ((cc) & 3))
#define BSW(r, g) (((g) + (r) * 1) & 7)
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
    for (int i = tid; i < 8224; i += NT) {
        const int r = i / 257, k4 = i % 257, s = r / UT, gu = u0 + r % UT;
        const bool ok = gu < H && k4 * 4 < 1024;
        rnnc_cp16(&sm_[SM_W8 + r * 1028 + k4 * 4], ok ? wts + 0 + (size_t)(s * H + gu) * 1024 + k4 * 4 : wts, ok);
    }
    unsigned long long *const mb_ = (unsigned long long *)(sm_ + SM_MB);
    const unsigned bn_ = (unsigned)(min(BT, B - b0) * KCB * 4);
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
        /* %8 linear(h, weight_hh): lanes own 8 x 4 outputs, K split 1 ways */
        {
            const int ks = tid % 1, cell = tid / 1, tb = cell % 64, tr0 = cell / 64;
            const int tr = tr0 < 4 ? tr0 : 3;
            float a0_0 = 0.f;
            float a0_1 = 0.f;
            float a0_2 = 0.f;
            float a0_3 = 0.f;
            float a1_0 = 0.f;
            float a1_1 = 0.f;
            float a1_2 = 0.f;
            float a1_3 = 0.f;
            float a2_0 = 0.f;
            float a2_1 = 0.f;
            float a2_2 = 0.f;
            float a2_3 = 0.f;
            float a3_0 = 0.f;
            float a3_1 = 0.f;
            float a3_2 = 0.f;
            float a3_3 = 0.f;
            float a4_0 = 0.f;
            float a4_1 = 0.f;
            float a4_2 = 0.f;
            float a4_3 = 0.f;
            float a5_0 = 0.f;
            float a5_1 = 0.f;
            float a5_2 = 0.f;
            float a5_3 = 0.f;
            float a6_0 = 0.f;
            float a6_1 = 0.f;
            float a6_2 = 0.f;
            float a6_3 = 0.f;
            float a7_0 = 0.f;
            float a7_1 = 0.f;
            float a7_2 = 0.f;
            float a7_3 = 0.f;
            if (t > 0 && (tid & 31) == 0) asm volatile("fence.proxy.async.global;" : : : "memory");
            if (t > 0 && tid == 0) {
                for (int s_ = 0; s_ < min(NSB, NCHB); ++s_)
                    rnnc_bulk_get(sm_ + s_ * CHF, BSRC(t & 1, s_), bn_, mb_ + s_);
            }
            for (int ch_ = 0; ch_ < NCHB; ++ch_) {
                const int xo_ = ch_ % NSB * CHF;
                if (t == 0) {
                    for (int i = tid; i < BTP * (KCB / 4); i += NT) {
                        const int b = i / (KCB / 4), c4 = i % (KCB / 4), gb = b0 + b;
                        float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);
                        if (b < BT && gb < B)
                            v_ = __ldcg((const float4 *)(s0_ + (size_t)gb * 1024 + ch_ * KCB + c4 * 4));
                        *(float4 *)&sm_[xo_ + b * KCB + (BSW(b, c4) << 2)] = v_;
                    }
                    __syncthreads();
                } else {
                    rnnc_mb_wait(mb_ + ch_ % NSB, (ph_ >> (ch_ % NSB)) & 1u);
                    ph_ ^= 1u << (ch_ % NSB);
                }
                const int kn_ = min(32, 1024 - ch_ * 32), k0_ = ch_ * 32;
#pragma unroll 4
                for (int k = ks * 4; k < kn_; k += 4) {
                    const int kk = k0_ + k;
                    const float4 w0 = *(const float4 *)&sm_[SM_W8 + (tr + 0) * 1028 + kk];
                    const float4 w1 = *(const float4 *)&sm_[SM_W8 + (tr + 4) * 1028 + kk];
                    const float4 w2 = *(const float4 *)&sm_[SM_W8 + (tr + 8) * 1028 + kk];
                    const float4 w3 = *(const float4 *)&sm_[SM_W8 + (tr + 12) * 1028 + kk];
                    const float4 w4 = *(const float4 *)&sm_[SM_W8 + (tr + 16) * 1028 + kk];
                    const float4 w5 = *(const float4 *)&sm_[SM_W8 + (tr + 20) * 1028 + kk];
                    const float4 w6 = *(const float4 *)&sm_[SM_W8 + (tr + 24) * 1028 + kk];
                    const float4 w7 = *(const float4 *)&sm_[SM_W8 + (tr + 28) * 1028 + kk];
                    const float4 x0 = *(const float4 *)&sm_[xo_ + (tb + 0) * KCB + (BSW(tb + 0, k >> 2) << 2)];
                    const float4 x1 = *(const float4 *)&sm_[xo_ + (tb + 64) * KCB + (BSW(tb + 64, k >> 2) << 2)];
                    const float4 x2 = *(const float4 *)&sm_[xo_ + (tb + 128) * KCB + (BSW(tb + 128, k >> 2) << 2)];
                    const float4 x3 = *(const float4 *)&sm_[xo_ + (tb + 192) * KCB + (BSW(tb + 192, k >> 2) << 2)];
                    a0_0 = fmaf(w0.x, x0.x, a0_0);
                    a0_1 = fmaf(w0.x, x1.x, a0_1);
                    a0_2 = fmaf(w0.x, x2.x, a0_2);
                    a0_3 = fmaf(w0.x, x3.x, a0_3);
                    a1_0 = fmaf(w1.x, x0.x, a1_0);
                    a1_1 = fmaf(w1.x, x1.x, a1_1);
                    a1_2 = fmaf(w1.x, x2.x, a1_2);
                    a1_3 = fmaf(w1.x, x3.x, a1_3);
                    a2_0 = fmaf(w2.x, x0.x, a2_0);
                    a2_1 = fmaf(w2.x, x1.x, a2_1);
                    a2_2 = fmaf(w2.x, x2.x, a2_2);
                    a2_3 = fmaf(w2.x, x3.x, a2_3);
                    a3_0 = fmaf(w3.x, x0.x, a3_0);
                    a3_1 = fmaf(w3.x, x1.x, a3_1);
                    a3_2 = fmaf(w3.x, x2.x, a3_2);
                    a3_3 = fmaf(w3.x, x3.x, a3_3);
                    a4_0 = fmaf(w4.x, x0.x, a4_0);
                    a4_1 = fmaf(w4.x, x1.x, a4_1);
                    a4_2 = fmaf(w4.x, x2.x, a4_2);
                    a4_3 = fmaf(w4.x, x3.x, a4_3);
                    a5_0 = fmaf(w5.x, x0.x, a5_0);
                    a5_1 = fmaf(w5.x, x1.x, a5_1);
                    a5_2 = fmaf(w5.x, x2.x, a5_2);
                    a5_3 = fmaf(w5.x, x3.x, a5_3);
                    a6_0 = fmaf(w6.x, x0.x, a6_0);
                    a6_1 = fmaf(w6.x, x1.x, a6_1);
                    a6_2 = fmaf(w6.x, x2.x, a6_2);
                    a6_3 = fmaf(w6.x, x3.x, a6_3);
                    a7_0 = fmaf(w7.x, x0.x, a7_0);
                    a7_1 = fmaf(w7.x, x1.x, a7_1);
                    a7_2 = fmaf(w7.x, x2.x, a7_2);
                    a7_3 = fmaf(w7.x, x3.x, a7_3);
                    a0_0 = fmaf(w0.y, x0.y, a0_0);
                    a0_1 = fmaf(w0.y, x1.y, a0_1);
                    a0_2 = fmaf(w0.y, x2.y, a0_2);
                    a0_3 = fmaf(w0.y, x3.y, a0_3);
                    a1_0 = fmaf(w1.y, x0.y, a1_0);
                    a1_1 = fmaf(w1.y, x1.y, a1_1);
                    a1_2 = fmaf(w1.y, x2.y, a1_2);
                    a1_3 = fmaf(w1.y, x3.y, a1_3);
                    a2_0 = fmaf(w2.y, x0.y, a2_0);
                    a2_1 = fmaf(w2.y, x1.y, a2_1);
                    a2_2 = fmaf(w2.y, x2.y, a2_2);
                    a2_3 = fmaf(w2.y, x3.y, a2_3);
                    a3_0 = fmaf(w3.y, x0.y, a3_0);
                    a3_1 = fmaf(w3.y, x1.y, a3_1);
                    a3_2 = fmaf(w3.y, x2.y, a3_2);
                    a3_3 = fmaf(w3.y, x3.y, a3_3);
                    a4_0 = fmaf(w4.y, x0.y, a4_0);
                    a4_1 = fmaf(w4.y, x1.y, a4_1);
                    a4_2 = fmaf(w4.y, x2.y, a4_2);
                    a4_3 = fmaf(w4.y, x3.y, a4_3);
                    a5_0 = fmaf(w5.y, x0.y, a5_0);
                    a5_1 = fmaf(w5.y, x1.y, a5_1);
                    a5_2 = fmaf(w5.y, x2.y, a5_2);
                    a5_3 = fmaf(w5.y, x3.y, a5_3);
                    a6_0 = fmaf(w6.y, x0.y, a6_0);
                    a6_1 = fmaf(w6.y, x1.y, a6_1);
                    a6_2 = fmaf(w6.y, x2.y, a6_2);
                    a6_3 = fmaf(w6.y, x3.y, a6_3);
                    a7_0 = fmaf(w7.y, x0.y, a7_0);
                    a7_1 = fmaf(w7.y, x1.y, a7_1);
                    a7_2 = fmaf(w7.y, x2.y, a7_2);
                    a7_3 = fmaf(w7.y, x3.y, a7_3);
                    a0_0 = fmaf(w0.z, x0.z, a0_0);
                    a0_1 = fmaf(w0.z, x1.z, a0_1);
                    a0_2 = fmaf(w0.z, x2.z, a0_2);
                    a0_3 = fmaf(w0.z, x3.z, a0_3);
                    a1_0 = fmaf(w1.z, x0.z, a1_0);
                    a1_1 = fmaf(w1.z, x1.z, a1_1);
                    a1_2 = fmaf(w1.z, x2.z, a1_2);
                    a1_3 = fmaf(w1.z, x3.z, a1_3);
                    a2_0 = fmaf(w2.z, x0.z, a2_0);
                    a2_1 = fmaf(w2.z, x1.z, a2_1);
                    a2_2 = fmaf(w2.z, x2.z, a2_2);
                    a2_3 = fmaf(w2.z, x3.z, a2_3);
                    a3_0 = fmaf(w3.z, x0.z, a3_0);
                    a3_1 = fmaf(w3.z, x1.z, a3_1);
                    a3_2 = fmaf(w3.z, x2.z, a3_2);
                    a3_3 = fmaf(w3.z, x3.z, a3_3);
                    a4_0 = fmaf(w4.z, x0.z, a4_0);
                    a4_1 = fmaf(w4.z, x1.z, a4_1);
                    a4_2 = fmaf(w4.z, x2.z, a4_2);
                    a4_3 = fmaf(w4.z, x3.z, a4_3);
                    a5_0 = fmaf(w5.z, x0.z, a5_0);
                    a5_1 = fmaf(w5.z, x1.z, a5_1);
                    a5_2 = fmaf(w5.z, x2.z, a5_2);
                    a5_3 = fmaf(w5.z, x3.z, a5_3);
                    a6_0 = fmaf(w6.z, x0.z, a6_0);
                    a6_1 = fmaf(w6.z, x1.z, a6_1);
                    a6_2 = fmaf(w6.z, x2.z, a6_2);
                    a6_3 = fmaf(w6.z, x3.z, a6_3);
                    a7_0 = fmaf(w7.z, x0.z, a7_0);
                    a7_1 = fmaf(w7.z, x1.z, a7_1);
                    a7_2 = fmaf(w7.z, x2.z, a7_2);
                    a7_3 = fmaf(w7.z, x3.z, a7_3);
                    a0_0 = fmaf(w0.w, x0.w, a0_0);
                    a0_1 = fmaf(w0.w, x1.w, a0_1);
                    a0_2 = fmaf(w0.w, x2.w, a0_2);
                    a0_3 = fmaf(w0.w, x3.w, a0_3);
                    a1_0 = fmaf(w1.w, x0.w, a1_0);
                    a1_1 = fmaf(w1.w, x1.w, a1_1);
                    a1_2 = fmaf(w1.w, x2.w, a1_2);
                    a1_3 = fmaf(w1.w, x3.w, a1_3);
                    a2_0 = fmaf(w2.w, x0.w, a2_0);
                    a2_1 = fmaf(w2.w, x1.w, a2_1);
                    a2_2 = fmaf(w2.w, x2.w, a2_2);
                    a2_3 = fmaf(w2.w, x3.w, a2_3);
                    a3_0 = fmaf(w3.w, x0.w, a3_0);
                    a3_1 = fmaf(w3.w, x1.w, a3_1);
                    a3_2 = fmaf(w3.w, x2.w, a3_2);
                    a3_3 = fmaf(w3.w, x3.w, a3_3);
                    a4_0 = fmaf(w4.w, x0.w, a4_0);
                    a4_1 = fmaf(w4.w, x1.w, a4_1);
                    a4_2 = fmaf(w4.w, x2.w, a4_2);
                    a4_3 = fmaf(w4.w, x3.w, a4_3);
                    a5_0 = fmaf(w5.w, x0.w, a5_0);
                    a5_1 = fmaf(w5.w, x1.w, a5_1);
                    a5_2 = fmaf(w5.w, x2.w, a5_2);
                    a5_3 = fmaf(w5.w, x3.w, a5_3);
                    a6_0 = fmaf(w6.w, x0.w, a6_0);
                    a6_1 = fmaf(w6.w, x1.w, a6_1);
                    a6_2 = fmaf(w6.w, x2.w, a6_2);
                    a6_3 = fmaf(w6.w, x3.w, a6_3);
                    a7_0 = fmaf(w7.w, x0.w, a7_0);
                    a7_1 = fmaf(w7.w, x1.w, a7_1);
                    a7_2 = fmaf(w7.w, x2.w, a7_2);
                    a7_3 = fmaf(w7.w, x3.w, a7_3);
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
            if (tr0 < 4 && (ks & 0) == 0) {
                const int v0_ = (ks >> 0) * 32; (void)v0_;
                { const int v = v0_ + 0; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a0_0; }
                { const int v = v0_ + 1; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a0_1; }
                { const int v = v0_ + 2; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a0_2; }
                { const int v = v0_ + 3; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a0_3; }
                { const int v = v0_ + 4; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a1_0; }
                { const int v = v0_ + 5; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a1_1; }
                { const int v = v0_ + 6; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a1_2; }
                { const int v = v0_ + 7; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a1_3; }
                { const int v = v0_ + 8; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a2_0; }
                { const int v = v0_ + 9; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a2_1; }
                { const int v = v0_ + 10; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a2_2; }
                { const int v = v0_ + 11; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a2_3; }
                { const int v = v0_ + 12; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a3_0; }
                { const int v = v0_ + 13; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a3_1; }
                { const int v = v0_ + 14; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a3_2; }
                { const int v = v0_ + 15; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a3_3; }
                { const int v = v0_ + 16; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a4_0; }
                { const int v = v0_ + 17; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a4_1; }
                { const int v = v0_ + 18; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a4_2; }
                { const int v = v0_ + 19; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a4_3; }
                { const int v = v0_ + 20; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a5_0; }
                { const int v = v0_ + 21; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a5_1; }
                { const int v = v0_ + 22; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a5_2; }
                { const int v = v0_ + 23; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a5_3; }
                { const int v = v0_ + 24; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a6_0; }
                { const int v = v0_ + 25; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a6_1; }
                { const int v = v0_ + 26; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a6_2; }
                { const int v = v0_ + 27; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a6_3; }
                { const int v = v0_ + 28; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a7_0; }
                { const int v = v0_ + 29; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a7_1; }
                { const int v = v0_ + 30; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a7_2; }
                { const int v = v0_ + 31; sm_[SM_L8 + (tr + v / 4 * 4) * (BTP + 1) + tb + v % 4 * 64] = a7_3; }
            }
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
