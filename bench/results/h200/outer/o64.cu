/* rnnc fused kernels: cell lstm, B=64 I=512 H=512 P=512, sm_90, f32 ffma, hoist all, ut=16 bt=16 nt=512 rr=4 bb=4 grid=128 kc=128 outer */
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
#define N_ 2048
/* rows of M the large tiles take: whole waves of 264 blocks (a last wave under */
/* half full is left to the tail's small tiles) */
__device__ __forceinline__ int rnnc_rows7(int M)
{
    const int tiles = (M + 127) / 128 * 16, rem = tiles % 264;
    return rem == 0 || rem * 2 > 264 ? M : min(M, (tiles - rem) / 16 * 128);
}
/* %7 linear(x, weight_ih) over the rows of whole waves: tiles of 128 x 128 */
extern "C" __global__ void __launch_bounds__(256, 2) rnnc_gemm7(const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io)
{
    __shared__ __align__(16) float As[2][8][132];
    __shared__ __align__(16) float Ws[2][8][132];
    rnnc_pdl();
    const int M = rnnc_rows7(T * 64), tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.x * 128, n0 = blockIdx.y * 128;
    if (m0 >= M) return; /* the tail's rows */
    const size_t TB = (size_t)T * 64;
    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;
    float c_[8][8];
    for (int i = 0; i < 8; ++i) for (int j = 0; j < 8; ++j) c_[i][j] = 0.f;
    float4 ra, rw[1];
    int k0 = 0;
    {
        const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
        ra = make_float4(0.f, 0.f, 0.f, 0.f);
        if (m0 + lr < M && k0 + lk < 512) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 512 + k0 + lk));
    }
    {
        const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
        rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + lr < N_ && k0 + lk < 512) rw[0] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
    }
#define STORE_(buf) { \
    { const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4; As[buf][lk][lr] = ra.x; As[buf][lk + 1][lr] = ra.y; As[buf][lk + 2][lr] = ra.z; As[buf][lk + 3][lr] = ra.w; } \
    { const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4; Ws[buf][lk][lr] = rw[0].x; Ws[buf][lk + 1][lr] = rw[0].y; Ws[buf][lk + 2][lr] = rw[0].z; Ws[buf][lk + 3][lr] = rw[0].w; } \
}
    STORE_(0);
    __syncthreads();
    for (int it = 0; k0 < 512; ++it) {
        const int cb = it & 1;
        k0 += 8;
        const bool more = k0 < 512;
        if (more) {
            {
                const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
                ra = make_float4(0.f, 0.f, 0.f, 0.f);
                if (m0 + lr < M && k0 + lk < 512) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 512 + k0 + lk));
            }
            {
                const int lr = (tid + 0) / 2, lk = ((tid + 0) % 2) * 4;
                rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n0 + lr < N_ && k0 + lk < 512) rw[0] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
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
                float *const p_ = hz + (size_t)0 * TB + (size_t)m * 2048 + col0;
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
    const int M = T * 64, R_ = rnnc_rows7(M), tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int tl_ = blockIdx.x; ; tl_ += gridDim.x) {
        const int m0 = R_ + tl_ / 32 * 32, n0 = tl_ % 32 * 64;
        if (m0 >= M) break;
        const size_t TB = (size_t)T * 64;
        (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;
        float c_[2][4];
        for (int i = 0; i < 2; ++i) for (int j = 0; j < 4; ++j) c_[i][j] = 0.f;
        float4 ra, rw[2];
        int k0 = 0;
        {
            const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
            ra = make_float4(0.f, 0.f, 0.f, 0.f);
            if (m0 + lr < M && k0 + lk < 512) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 512 + k0 + lk));
        }
        {
            const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
            rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (n0 + lr < N_ && k0 + lk < 512) rw[0] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
        }
        {
            const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
            rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (n0 + lr < N_ && k0 + lk < 512) rw[1] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
        }
#define STORE_(buf) { \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; As[buf][lk][lr] = ra.x; As[buf][lk + 1][lr] = ra.y; As[buf][lk + 2][lr] = ra.z; As[buf][lk + 3][lr] = ra.w; } \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; Ws[buf][lk][lr] = rw[0].x; Ws[buf][lk + 1][lr] = rw[0].y; Ws[buf][lk + 2][lr] = rw[0].z; Ws[buf][lk + 3][lr] = rw[0].w; } \
    { const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4; Ws[buf][lk][lr] = rw[1].x; Ws[buf][lk + 1][lr] = rw[1].y; Ws[buf][lk + 2][lr] = rw[1].z; Ws[buf][lk + 3][lr] = rw[1].w; } \
}
        STORE_(0);
        __syncthreads();
        for (int it = 0; k0 < 512; ++it) {
            const int cb = it & 1;
            k0 += 32;
            const bool more = k0 < 512;
            if (more) {
                {
                    const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                    ra = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (m0 + lr < M && k0 + lk < 512) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 512 + k0 + lk));
                }
                {
                    const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                    rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (n0 + lr < N_ && k0 + lk < 512) rw[0] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
                }
                {
                    const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
                    rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (n0 + lr < N_ && k0 + lk < 512) rw[1] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
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
                    float *const p_ = hz + (size_t)0 * TB + (size_t)m * 2048 + col0;
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
    const int M = T * 64, tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.x * 32, n0 = blockIdx.y * 64;
    const size_t TB = (size_t)T * 64;
    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;
    float c_[2][4];
    for (int i = 0; i < 2; ++i) for (int j = 0; j < 4; ++j) c_[i][j] = 0.f;
    float4 ra, rw[2];
    int k0 = 0;
    {
        const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
        ra = make_float4(0.f, 0.f, 0.f, 0.f);
        if (m0 + lr < M && k0 + lk < 512) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 512 + k0 + lk));
    }
    {
        const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
        rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + lr < N_ && k0 + lk < 512) rw[0] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
    }
    {
        const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
        rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + lr < N_ && k0 + lk < 512) rw[1] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
    }
#define STORE_(buf) { \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; As[buf][lk][lr] = ra.x; As[buf][lk + 1][lr] = ra.y; As[buf][lk + 2][lr] = ra.z; As[buf][lk + 3][lr] = ra.w; } \
    { const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4; Ws[buf][lk][lr] = rw[0].x; Ws[buf][lk + 1][lr] = rw[0].y; Ws[buf][lk + 2][lr] = rw[0].z; Ws[buf][lk + 3][lr] = rw[0].w; } \
    { const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4; Ws[buf][lk][lr] = rw[1].x; Ws[buf][lk + 1][lr] = rw[1].y; Ws[buf][lk + 2][lr] = rw[1].z; Ws[buf][lk + 3][lr] = rw[1].w; } \
}
    STORE_(0);
    __syncthreads();
    for (int it = 0; k0 < 512; ++it) {
        const int cb = it & 1;
        k0 += 32;
        const bool more = k0 < 512;
        if (more) {
            {
                const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                ra = make_float4(0.f, 0.f, 0.f, 0.f);
                if (m0 + lr < M && k0 + lk < 512) ra = __ldg((const float4 *)(x + (size_t)(m0 + lr) * 512 + k0 + lk));
            }
            {
                const int lr = (tid + 0) / 8, lk = ((tid + 0) % 8) * 4;
                rw[0] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n0 + lr < N_ && k0 + lk < 512) rw[0] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
            }
            {
                const int lr = (tid + 256) / 8, lk = ((tid + 256) % 8) * 4;
                rw[1] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n0 + lr < N_ && k0 + lk < 512) rw[1] = __ldg((const float4 *)((wts + 1048576) + (size_t)(n0 + lr) * 512 + k0 + lk));
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
                float *const p_ = hz + (size_t)0 * TB + (size_t)m * 2048 + col0;
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
    enum { KP = 68, K_ = 512 };
    const int M = T * 64, tid = threadIdx.x, w = tid >> 5, l = tid & 31;
    const int ty = l >> 2, tx = l & 3;
    const int m0 = blockIdx.x * 32, n0 = blockIdx.y * 32;
    const size_t TB = (size_t)T * 64;
    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)len; (void)rev;
    const float *const wsrc = wts + 1048576;
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
            hz[(size_t)0 * TB + (size_t)m * 2048 + col] = (acc) + (fold[0 + col]); /* %10 add(%7, %9) */
        }
    }
}
#undef N_
/* the step kernel: all T steps in one cooperative launch; a block owns UT hidden units x BT batch rows; blocks exchange states through global memory and a barrier per phase */
#define B 64
#define H 512
#define UT 16
#define BT 16
#define BTP 16
#define NUB 32
#define NT 512
#define E (UT * BTP)
#define STF 65536
#define ROWT(gb, tt) ((size_t)(tt) * B + (gb))
#define LEN(gb) (len ? len[gb] : T)
#define TR(gb, s) ((rev && (s) < LEN(gb)) ? LEN(gb) - 1 - (s) : (s))
#define ROW(gb) ROWT(gb, TR(gb, t))
#define YLD 512
#define FIN (st + 2 * (size_t)STF)
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
#define SM_W8 8192 /* %8 linear(h, weight_hh): weight slice */
#define SM_L8 0 /* %8 linear(h, weight_hh): result */
/* bulk staging (cuda_bulk.c): 4 chunks of 128 columns, 4 buffers; the state's chunk-major copy cp, chunk ch of this block's rows, and the place of (gb, cc) */
#define NSB 4
#define KCB 128
#define NCHB 4
#define CHF 2048
#define SM_MB 40960
#define BSRC(cp, ch) (xb + 0 + (size_t)(cp) * 32768 + ((size_t)(ch) * 4 + bb) * CHF)
#define BPUT(cp, gb, cc) (xb + 0 + (size_t)(cp) * 32768 + (((size_t)((cc) / KCB) * 4 + (gb) / BT) * KCB + (cc) % KCB) * BTP + (gb) % BT)
#define BSW(r, g) (((g) + (r) * 8) & 31)
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
    const float *const si1_ = io.in[1] ? io.in[1] : st + 32768; /* state c */
    float *const so1_ = io.out[1] ? io.out[1] : FIN + 32768;
    (void)si1_; (void)so1_;
    float r1_0 = 0.f; /* state h */
    float r2_0 = 0.f; /* state c */
    float r10_0 = 0.f; /* %10 add(%7, %9) */
    float r10_1 = 0.f;
    float r10_2 = 0.f;
    float r10_3 = 0.f;
#pragma unroll 4
    for (int i = tid; i < 8192; i += NT) {
        const int r = i % 64, k4 = i / 64, s = r / UT, gu = u0 + r % UT;
        float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);
        if (gu < H) v_ = __ldg((const float4 *)(wts + 0 + (size_t)(s * H + gu) * 512 + k4 * 4));
        float *const d_ = &sm_[SM_W8 + k4 * 256 + r];
        d_[0] = v_.x; d_[64] = v_.y; d_[128] = v_.z; d_[192] = v_.w;
    }
    unsigned long long *const mb_ = (unsigned long long *)(sm_ + SM_MB);
    const unsigned bn_ = (unsigned)(BTP * KCB * 4);
    unsigned ph_ = 0u, eph_ = 0u;
    (void)bn_; (void)ph_; (void)eph_;
    if (tid == 0) {
        for (int s_ = 0; s_ < NSB; ++s_) rnnc_mb_init(mb_ + s_, 1);
        for (int s_ = 0; s_ < NSB; ++s_) rnnc_mb_init(mb_ + NSB + s_, NT / 32);
        asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
    }
    rnnc_pdl();
    if (tid < E) {
        const int e = tid, u = e % UT, b = e / UT, gu = u0 + u, gb = b0 + b;
        if (b < BT && gu < H && gb < B) {
            const size_t row = ROWT(gb, TR(gb, 0));
            (void)row; (void)u;
            const float *const s0_ = si0_; (void)s0_;
            const float *const s1_ = si1_; (void)s1_;
            r1_0 = __ldcg(s0_ + gb * 512 + 0 + gu);
            r2_0 = __ldcg(s1_ + gb * 512 + 0 + gu);
            r10_0 = __ldg(hz + (size_t)0 * TB + row * 2048 + 0 + gu);
            r10_1 = __ldg(hz + (size_t)0 * TB + row * 2048 + 512 + gu);
            r10_2 = __ldg(hz + (size_t)0 * TB + row * 2048 + 1024 + gu);
            r10_3 = __ldg(hz + (size_t)0 * TB + row * 2048 + 1536 + gu);
        }
    }
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
        const float *const s1_ = t == 0 ? si1_ : cur + 32768; (void)s1_;
        /* phase 0 */
        /* %8 linear(h, weight_hh): outer products (cuda_outer.c), threads own 4 x 4 outputs, each chunk's K split over 8 groups */
        {
            const int g_ = tid / 64, lt_ = tid % 64, rc_ = lt_ % 16, bc_ = lt_ / 16;
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
            if (t > 0 && tid == 0) {
                asm volatile("fence.proxy.async.global;" : : : "memory");
                for (int s_ = 0; s_ < min(NSB, NCHB); ++s_)
                    rnnc_bulk_get(sm_ + s_ * CHF, BSRC(t & 1, s_), bn_, mb_ + s_);
            }
            for (int ch_ = 0; ch_ < NCHB; ++ch_) {
                const int xo_ = ch_ % NSB * CHF;
                if (t == 0) {
                    for (int i = tid; i < BTP * (KCB / 4); i += NT) {
                        const int b = i % BTP, c4 = i / BTP, gb = b0 + b;
                        float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);
                        if (b < BT && gb < B) v_ = __ldcg((const float4 *)(s0_ + (size_t)gb * 512 + ch_ * KCB + c4 * 4));
                        float *const d_ = &sm_[xo_ + c4 * 4 * BTP + b];
                        d_[0] = v_.x; d_[BTP] = v_.y; d_[2 * BTP] = v_.z; d_[3 * BTP] = v_.w;
                    }
                    __syncthreads();
                } else {
                    rnnc_mb_wait(mb_ + ch_ % NSB, (ph_ >> (ch_ % NSB)) & 1u);
                    ph_ ^= 1u << (ch_ % NSB);
                }
                const float *const wc_ = sm_ + SM_W8 + ch_ * KCB * 64, *const xc_ = sm_ + xo_;
#pragma unroll
                for (int kq_ = 0; kq_ < 16; ++kq_) {
                    const int k = g_ * 16 + kq_;
                    const float4 w0 = *(const float4 *)&wc_[k * 64 + 0 + rc_ * 4];
                    const float4 x0 = *(const float4 *)&xc_[k * BTP + 0 + bc_ * 4];
                    a0_0 = fmaf(w0.x, x0.x, a0_0);
                    a0_1 = fmaf(w0.x, x0.y, a0_1);
                    a0_2 = fmaf(w0.x, x0.z, a0_2);
                    a0_3 = fmaf(w0.x, x0.w, a0_3);
                    a1_0 = fmaf(w0.y, x0.x, a1_0);
                    a1_1 = fmaf(w0.y, x0.y, a1_1);
                    a1_2 = fmaf(w0.y, x0.z, a1_2);
                    a1_3 = fmaf(w0.y, x0.w, a1_3);
                    a2_0 = fmaf(w0.z, x0.x, a2_0);
                    a2_1 = fmaf(w0.z, x0.y, a2_1);
                    a2_2 = fmaf(w0.z, x0.z, a2_2);
                    a2_3 = fmaf(w0.z, x0.w, a2_3);
                    a3_0 = fmaf(w0.w, x0.x, a3_0);
                    a3_1 = fmaf(w0.w, x0.y, a3_1);
                    a3_2 = fmaf(w0.w, x0.z, a3_2);
                    a3_3 = fmaf(w0.w, x0.w, a3_3);
                }
                if (t == 0) {
                    __syncthreads();
                } else {
                    __syncwarp();
                    if ((tid & 31) == 0) rnnc_mb_arrive(mb_ + NSB + ch_ % NSB);
                    if (tid == 0) {
                        if (ch_ + NSB < NCHB) {
                            rnnc_mb_wait(mb_ + NSB + ch_ % NSB, (eph_ >> (ch_ % NSB)) & 1u);
                            rnnc_bulk_get(sm_ + xo_, BSRC(t & 1, ch_ + NSB), bn_, mb_ + ch_ % NSB);
                        }
                        eph_ ^= 1u << (ch_ % NSB);
                    }
                }
            }
            __syncthreads();
            if (g_ > 0) {
                float *const p_ = sm_ + (g_ - 1) * 1024;
                *(float4 *)&p_[(0 + rc_ * 4) * BTP + 0 + bc_ * 4] = make_float4(a0_0, a0_1, a0_2, a0_3);
                *(float4 *)&p_[(1 + rc_ * 4) * BTP + 0 + bc_ * 4] = make_float4(a1_0, a1_1, a1_2, a1_3);
                *(float4 *)&p_[(2 + rc_ * 4) * BTP + 0 + bc_ * 4] = make_float4(a2_0, a2_1, a2_2, a2_3);
                *(float4 *)&p_[(3 + rc_ * 4) * BTP + 0 + bc_ * 4] = make_float4(a3_0, a3_1, a3_2, a3_3);
            }
            __syncthreads();
            if (g_ == 0) {
                for (int p_ = 0; p_ < 7; ++p_) {
                    const float *const q_ = sm_ + p_ * 1024;
                    { const float4 v_ = *(const float4 *)&q_[(0 + rc_ * 4) * BTP + 0 + bc_ * 4]; a0_0 += v_.x; a0_1 += v_.y; a0_2 += v_.z; a0_3 += v_.w; }
                    { const float4 v_ = *(const float4 *)&q_[(1 + rc_ * 4) * BTP + 0 + bc_ * 4]; a1_0 += v_.x; a1_1 += v_.y; a1_2 += v_.z; a1_3 += v_.w; }
                    { const float4 v_ = *(const float4 *)&q_[(2 + rc_ * 4) * BTP + 0 + bc_ * 4]; a2_0 += v_.x; a2_1 += v_.y; a2_2 += v_.z; a2_3 += v_.w; }
                    { const float4 v_ = *(const float4 *)&q_[(3 + rc_ * 4) * BTP + 0 + bc_ * 4]; a3_0 += v_.x; a3_1 += v_.y; a3_2 += v_.z; a3_3 += v_.w; }
                }
            }
            __syncthreads();
            if (g_ == 0) {
                sm_[SM_L8 + (0 + rc_ * 4) * (BTP + 1) + 0 + bc_ * 4] = a0_0;
                sm_[SM_L8 + (0 + rc_ * 4) * (BTP + 1) + 1 + bc_ * 4] = a0_1;
                sm_[SM_L8 + (0 + rc_ * 4) * (BTP + 1) + 2 + bc_ * 4] = a0_2;
                sm_[SM_L8 + (0 + rc_ * 4) * (BTP + 1) + 3 + bc_ * 4] = a0_3;
                sm_[SM_L8 + (1 + rc_ * 4) * (BTP + 1) + 0 + bc_ * 4] = a1_0;
                sm_[SM_L8 + (1 + rc_ * 4) * (BTP + 1) + 1 + bc_ * 4] = a1_1;
                sm_[SM_L8 + (1 + rc_ * 4) * (BTP + 1) + 2 + bc_ * 4] = a1_2;
                sm_[SM_L8 + (1 + rc_ * 4) * (BTP + 1) + 3 + bc_ * 4] = a1_3;
                sm_[SM_L8 + (2 + rc_ * 4) * (BTP + 1) + 0 + bc_ * 4] = a2_0;
                sm_[SM_L8 + (2 + rc_ * 4) * (BTP + 1) + 1 + bc_ * 4] = a2_1;
                sm_[SM_L8 + (2 + rc_ * 4) * (BTP + 1) + 2 + bc_ * 4] = a2_2;
                sm_[SM_L8 + (2 + rc_ * 4) * (BTP + 1) + 3 + bc_ * 4] = a2_3;
                sm_[SM_L8 + (3 + rc_ * 4) * (BTP + 1) + 0 + bc_ * 4] = a3_0;
                sm_[SM_L8 + (3 + rc_ * 4) * (BTP + 1) + 1 + bc_ * 4] = a3_1;
                sm_[SM_L8 + (3 + rc_ * 4) * (BTP + 1) + 2 + bc_ * 4] = a3_2;
                sm_[SM_L8 + (3 + rc_ * 4) * (BTP + 1) + 3 + bc_ * 4] = a3_3;
            }
        }
        __syncthreads();
        for (int e = tid; e < E; e += NT) {
            const int u = e % UT, b = e / UT, gu = u0 + u, gb = b0 + b;
            if (b >= BT || gu >= H || gb >= B) continue;
            const size_t row = ROW(gb);
            const bool act_ = t < LEN(gb);
            (void)row; (void)u; (void)act_;
            const float v11_0 = (sm_[SM_L8 + (0 * UT + u) * (BTP + 1) + b]) + (r10_0); /* %11 gates = add(%8, %10) */
            const float v11_1 = (sm_[SM_L8 + (1 * UT + u) * (BTP + 1) + b]) + (r10_1);
            const float v11_2 = (sm_[SM_L8 + (2 * UT + u) * (BTP + 1) + b]) + (r10_2);
            const float v11_3 = (sm_[SM_L8 + (3 * UT + u) * (BTP + 1) + b]) + (r10_3);
            const float v12_0 = v11_0; /* %12 i = chunk(gates, 4, 0) */
            const float v13_0 = v11_1; /* %13 f = chunk(gates, 4, 1) */
            const float v14_0 = v11_2; /* %14 g = chunk(gates, 4, 2) */
            const float v15_0 = v11_3; /* %15 o = chunk(gates, 4, 3) */
            const float v16_0 = 1.f / (1.f + expf(-(v13_0))); /* %16 sigmoid(f) */
            const float v17_0 = (r2_0) * (v16_0); /* %17 mul(c, %16) */
            const float v18_0 = 1.f / (1.f + expf(-(v12_0))); /* %18 sigmoid(i) */
            const float v19_0 = tanhf(v14_0); /* %19 tanh(g) */
            const float v20_0 = (v18_0) * (v19_0); /* %20 mul(%18, %19) */
            const float v21_0 = (v17_0) + (v20_0); /* %21 c_next = add(%17, %20) */
            const float v22_0 = 1.f / (1.f + expf(-(v15_0))); /* %22 sigmoid(o) */
            const float v23_0 = tanhf(v21_0); /* %23 tanh(c_next) */
            const float v24_0 = (v22_0) * (v23_0); /* %24 h_next = mul(%22, %23) */
            const float n0_0 = act_ ? (v24_0) : (r1_0); /* next h */
            const float n1_0 = act_ ? (v21_0) : (r2_0); /* next c */
            __stcg(BPUT((t + 1) & 1, gb, 0 + gu), n0_0);
            if (t == tend_ - 1) __stcg(so0_ + (size_t)gb * 512 + 0 + gu, n0_0);
            r1_0 = n0_0;
            if (t == tend_ - 1) __stcg(so1_ + (size_t)gb * 512 + 0 + gu, n1_0);
            r2_0 = n1_0;
            y[ROW(gb) * YLD + 0 + gu] = act_ ? (v24_0) : 0.f;
        }
        if (t + 1 < tend_) {
            __syncthreads();
            ++epoch;
            if (tid == 0) rnnc_arrive(bar + bb);
            if (tid < E) {
                const int e = tid, u = e % UT, b = e / UT, gu = u0 + u, gb = b0 + b;
                if (b < BT && gu < H && gb < B) {
                    const size_t row = ROWT(gb, TR(gb, t + 1));
                    (void)row; (void)u;
                    r10_0 = __ldg(hz + (size_t)0 * TB + row * 2048 + 0 + gu);
                    r10_1 = __ldg(hz + (size_t)0 * TB + row * 2048 + 512 + gu);
                    r10_2 = __ldg(hz + (size_t)0 * TB + row * 2048 + 1024 + gu);
                    r10_3 = __ldg(hz + (size_t)0 * TB + row * 2048 + 1536 + gu);
                }
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
