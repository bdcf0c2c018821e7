/*
 * philox.c: the Philox4x32-10 counter-based generator (Salmon et al., SC'11,
 * as in Random123 and curand) and the dropout decision built on it.  A
 * counter-based stream lets every backend compute any element's mask bit
 * on its own, in any order, and agree bit for bit (docs/dropout.md).
 */
#include "common/common.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static void philox_round(uint32_t ctr[4], const uint32_t key[2])
{
    uint64_t p0 = (uint64_t)PHILOX_M0 * ctr[0];
    uint64_t p1 = (uint64_t)PHILOX_M1 * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = hi1 ^ c1 ^ key[0];
    ctr[1] = lo1;
    ctr[2] = hi0 ^ c3 ^ key[1];
    ctr[3] = lo0;
}

void rnnc_philox4x32_10(uint64_t seed, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4])
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {(uint32_t)counter_lo, (uint32_t)(counter_lo >> 32), (uint32_t)counter_hi,
                       (uint32_t)(counter_hi >> 32)};
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            key[0] += PHILOX_W0;
            key[1] += PHILOX_W1;
        }
        philox_round(ctr, key);
    }
    for (int i = 0; i < 4; i++)
        out[i] = ctr[i];
}

bool cm_dropout_keep(uint64_t seed, uint64_t site, uint64_t index, double p)
{
    if (p <= 0.0)
        return true;
    if (p >= 1.0)
        return false;
    uint32_t w[4];
    rnnc_philox4x32_10(seed, site, index / 4, w);
    /* w * 2^-32 is exact in double, so every backend compares the same numbers. */
    double u = (double)w[index % 4] * (1.0 / 4294967296.0);
    return u >= p;
}

double cm_dropout_scale(double p)
{
    if (p <= 0.0)
        return 1.0;
    if (p >= 1.0)
        return 0.0;
    return 1.0 / (1.0 - p);
}
