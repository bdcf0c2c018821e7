/*
 * bench_common.h: what the benchmark programs share: their command line
 * ([--json PATH] and one count) and writing their figures as JSON.  A
 * header, not a .c file: each .c file here is a program of its own.
 */
#ifndef RNNC_BENCH_COMMON_H
#define RNNC_BENCH_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* Reads [--json PATH] [--COUNT N] into *json and *n (N < 1 keeps *n); false
 * after a usage line on stderr. */
static inline bool bench_args(int argc, char **argv, const char *count, const char **json, int *n)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            *json = argv[++i];
        else if (!strncmp(argv[i], "--", 2) && !strcmp(argv[i] + 2, count) && i + 1 < argc)
            *n = atoi(argv[++i]) > 0 ? atoi(argv[i]) : *n;
        else {
            fprintf(stderr, "usage: %s [--json PATH] [--%s N]\n", argv[0], count);
            return false;
        }
    }
    return true;
}

/* Writes j to path; 0, or 1 after saying on stderr that it could not. */
static inline int bench_write_json(const char *path, const cJSON *j)
{
    char *text = cJSON_Print(j);
    FILE *fp = fopen(path, "w");
    int rc = fp && text && fputs(text, fp) >= 0 ? 0 : 1;
    if (fp && fclose(fp) != 0)
        rc = 1;
    free(text);
    if (rc)
        fprintf(stderr, "could not write %s\n", path);
    return rc;
}

#endif /* RNNC_BENCH_COMMON_H */
