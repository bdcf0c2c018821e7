/*
 * fuzz_cache.c: the disk cache's entry reader (rt_cache_read, and
 * rt_cache_peek of `rnnc cache list`) on an entry file made from the
 * input.  The first byte's bits ask the harness to make header fields
 * valid (so the fuzzer gets past the checksums and on to the fields after
 * them): 1 magic, format and header size; 2 the key; 4 the payload size;
 * 8 the payload hash; 16 the header hash (last).  Then a 128-byte header
 * and the payload.  An entry that reads must give back its payload.
 */
#include <sys/stat.h>
#include <xxhash.h>

#include "runtime/cache/cache.h"
#include "tests/fuzz/fuzz.h"

/* Offsets in the 128-byte entry header of runtime/cache_disk.c (docs/cache.md). */
enum { H_MAGIC = 0, H_FORMAT = 8, H_HSIZE = 12, H_KEY_LO = 16, H_KEY_HI = 24, H_PSIZE = 32,
       H_PHASH = 40, H_HHASH = 120, H_SIZE = 128 };

static const rt_cache_key k_key = {0x0123456789abcdefull, 0xfedcba9876543210ull};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char kernels[128];
    setenv("RNNC_CACHE_DIR", fuzz_dir(), 1);
    setenv("RNNC_CACHE_MAX_MB", "1000000", 1);
    snprintf(kernels, sizeof kernels, "%s/kernels", fuzz_dir());
    mkdir(kernels, 0700);
    return 0;
}

static void put32(uint8_t *h, int at, uint32_t v) { memcpy(h + at, &v, 4); }
static void put64(uint8_t *h, int at, uint64_t v) { memcpy(h + at, &v, 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    size_t n = size - 1;
    uint8_t *file = malloc(n > H_SIZE ? n : H_SIZE);
    FUZZ_CHECK(file);
    memset(file, 0, H_SIZE);
    memcpy(file, data + 1, n);
    size_t len = n < H_SIZE && (mode & 31) ? H_SIZE : n;
    uint64_t payload = len > H_SIZE ? len - H_SIZE : 0;
    if (mode & 1) {
        memcpy(file + H_MAGIC, "RNNCCUBN", 8);
        put32(file, H_FORMAT, RT_CACHE_FORMAT);
        put32(file, H_HSIZE, H_SIZE);
    }
    if (mode & 2) {
        put64(file, H_KEY_LO, k_key.lo);
        put64(file, H_KEY_HI, k_key.hi);
    }
    if (mode & 4)
        put64(file, H_PSIZE, payload);
    if (mode & 8)
        put64(file, H_PHASH, XXH3_64bits(file + H_SIZE, payload));
    if (mode & 16)
        put64(file, H_HHASH, XXH3_64bits(file, H_HHASH));
    char path[512];
    FUZZ_CHECK(rt_cache_entry_path(k_key, path, sizeof path));
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f && (len == 0 || fwrite(file, 1, len, f) == len) && fclose(f) == 0);
    void *cubin = NULL;
    size_t got = 0;
    char why[160];
    if (rt_cache_read(k_key, &cubin, &got, why, sizeof why) == RNNC_OK) {
        FUZZ_CHECK(got == payload && (got == 0 || memcmp(cubin, file + H_SIZE, got) == 0));
        free(cubin);
    }
    int sm;
    char name[56];
    int64_t created;
    bool valid;
    rt_cache_peek(path, &sm, name, &created, &valid);
    free(file);
    return 0;
}
