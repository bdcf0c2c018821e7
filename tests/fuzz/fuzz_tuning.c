/*
 * fuzz_tuning.c: autotuning records as read back from the disk cache
 * (rt_tuning_get) and their text as the fused backend parses it
 * (rt_fused_tuning_parse, for records and bundles; and the loose form of
 * `rnnc dump --tuning`).  The first byte's low
 * bit asks for the record's first line to be the key looked up, so the
 * fuzzer reaches the value.  A value that parses must print and parse back
 * to the same tuning.
 */
#include <dirent.h>

#include "runtime/fused/fused.h"
#include "tests/fuzz/fuzz.h"

static const char k_key[] = "fused lstm#0123456789abcdef I=8 H=8 sm_90 sms=132 B=4";
static char g_record[512];

/* The record's file: rt_tuning_put names it; found once by listing. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char dir[256];
    setenv("RNNC_CACHE_DIR", fuzz_dir(), 1);
    if (rt_tuning_put(k_key, "ut=0 bt=0 nt=0") != RNNC_OK)
        abort();
    snprintf(dir, sizeof dir, "%s/tuning", fuzz_dir());
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".txt"))
            snprintf(g_record, sizeof g_record, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    if (!g_record[0])
        abort();
    return 0;
}

static void check_parse(const char *text)
{
#ifdef RT_HAVE_CUDA_H
    rt_fused_tuning t, u;
    char again[64];
    /* `rnnc dump --tuning`'s form takes every text the strict one does */
    bool loose = rt_fused_tuning_parse_loose(text, &u);
    if (!rt_fused_tuning_parse(text, &t))
        return;
    FUZZ_CHECK(loose && t.unit_tile == u.unit_tile && t.outer == u.outer);
    rt_fused_tuning_text(t, again, sizeof again);
    FUZZ_CHECK(rt_fused_tuning_parse(again, &u));
    FUZZ_CHECK(t.unit_tile == u.unit_tile && t.batch_tile == u.batch_tile &&
               t.threads == u.threads);
#else
    (void)text;
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    char *file = malloc(sizeof k_key + size);
    FUZZ_CHECK(file);
    size_t at = 0;
    if (data[0] & 1) {
        memcpy(file, k_key, sizeof k_key - 1);
        file[sizeof k_key - 1] = '\n';
        at = sizeof k_key;
    }
    memcpy(file + at, data + 1, size - 1);
    FILE *f = fopen(g_record, "wb");
    FUZZ_CHECK(f && (at + size - 1 == 0 || fwrite(file, 1, at + size - 1, f) == at + size - 1) &&
               fclose(f) == 0);
    char tuning[256];
    if (rt_tuning_get(k_key, tuning, sizeof tuning) == RNNC_OK)
        check_parse(tuning);
    /* the raw input as a value, NUL-terminated */
    memcpy(file, data + 1, size - 1);
    file[size - 1] = '\0';
    check_parse(file);
    free(file);
    return 0;
}
