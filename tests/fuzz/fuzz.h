/*
 * fuzz.h: what the libFuzzer targets of tests/fuzz share.  The readers
 * under test take paths, so each input is written to a private file first
 * (in /dev/shm where there is one: no disk traffic for millions of inputs).
 */
#ifndef RNNC_FUZZ_H
#define RNNC_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A directory of this process's own, made once. */
static inline const char *fuzz_dir(void)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/rnnc-fuzz-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir))
            abort();
    }
    return dir;
}

/* dir/name, written with the n bytes at p. */
static inline const char *fuzz_file(const char *name, const void *p, size_t n)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
        abort();
    return path;
}

/* A crash of the harness's own expectation: libFuzzer saves the input. */
#define FUZZ_CHECK(c)                                                                         \
    do {                                                                                      \
        if (!(c)) {                                                                           \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);       \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

#endif
