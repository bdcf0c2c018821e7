/*
 * cpu_target.c: the CPUs the cpu backend makes code for.  In a process it
 * is this machine's ("native": LLVM's name for the CPU and every feature
 * it reports); a bundle made for other machines names an x86-64 level
 * instead ("x86-64-v2", "-v3", "-v4": the psABI's levels, which any CPU
 * of that level runs), so one file serves a fleet of different CPUs.  A
 * target's text, stored with each object file in a bundle, says all the
 * code depends on; rt_cpu_target_runs_here decides from it whether this
 * machine may run that code: the same triple, and every feature the code
 * may use is one the host has.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#ifdef RNNC_HAVE_LLVM
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h> /* LLVMDisposeMessage */
#include <llvm-c/TargetMachine.h>

#include "runtime/cpu/cpu.h"

/* The x86-64 levels as LLVM names their features (x86-64 psABI). */
#define X86_BASE "+64bit,+cmov,+cx8,+fxsr,+mmx,+sse,+sse2"
#define X86_V2 X86_BASE ",+cx16,+popcnt,+sahf,+sse3,+sse4.1,+sse4.2,+ssse3"
#define X86_V3 X86_V2 ",+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe,+xsave"
#define X86_V4 X86_V3 ",+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512vl"

static const struct {
    const char *name, *features;
} k_levels[] = {{"x86-64-v2", X86_V2}, {"x86-64-v3", X86_V3}, {"x86-64-v4", X86_V4}};

/* Floats per vector the code of these features uses: 512-, 256- or 128-bit. */
static int width_of(const char *features)
{
    return strstr(features, "+avx512f") ? 16 : strstr(features, "+avx") ? 8 : 4;
}

static bool copy(char *dst, size_t n, const char *src)
{
    return src && (size_t)snprintf(dst, n, "%s", src) < n;
}

static rnnc_status host(rt_cpu_target *t)
{
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    char *triple = LLVMGetDefaultTargetTriple();
    bool fits = copy(t->name, sizeof t->name, "native") && copy(t->cpu, sizeof t->cpu, cpu) &&
                copy(t->features, sizeof t->features, features) &&
                copy(t->triple, sizeof t->triple, triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    LLVMDisposeMessage(triple);
    if (!fits)
        return err_fail(RNNC_ERR_INTERNAL, "cpu: the host's CPU description is too long");
    int vw = width_of(t->features);
    int want = (int)cm_env_long("RNNC_CPU_VW", vw);
    t->vw = (want == 4 || want == 8 || want == 16) && want <= vw ? want : vw;
    return RNNC_OK;
}

rnnc_status rt_cpu_target_get(const char *name, rt_cpu_target *out)
{
    rt_cpu_target h;
    rnnc_status st = host(&h);
    if (st != RNNC_OK || !name || strcmp(name, "native") == 0) {
        if (st == RNNC_OK)
            *out = h;
        return st;
    }
    for (size_t i = 0; i < sizeof k_levels / sizeof *k_levels; i++) {
        if (strcmp(name, k_levels[i].name) != 0)
            continue;
        if (strncmp(h.triple, "x86_64-", 7) != 0)
            return err_fail(RNNC_ERR_UNSUPPORTED, "cpu target %s: this machine (%s) is not x86-64",
                            name, h.triple);
        *out = h;
        copy(out->name, sizeof out->name, name);
        copy(out->cpu, sizeof out->cpu, name);
        copy(out->features, sizeof out->features, k_levels[i].features);
        out->vw = width_of(out->features);
        return RNNC_OK;
    }
    return err_fail(RNNC_ERR_INVALID_ARG,
                    "unknown cpu target '%s': want native, x86-64-v2, x86-64-v3 or x86-64-v4",
                    name);
}

void rt_cpu_target_text(const rt_cpu_target *t, char *buf, size_t n)
{
    snprintf(buf, n, "%s %d %s %s %s", t->name, t->vw, t->triple, t->cpu, t->features);
}

bool rt_cpu_target_parse(const char *text, rt_cpu_target *out)
{
    char buf[RT_CPU_TARGET_TEXT_MAX], *save = NULL;
    if (!copy(buf, sizeof buf, text))
        return false;
    char *f[5];
    for (int i = 0; i < 5; i++)
        if (!(f[i] = strtok_r(i ? NULL : buf, " ", &save)))
            return false;
    char *end = NULL;
    long vw = strtol(f[1], &end, 10);
    if (*end || (vw != 4 && vw != 8 && vw != 16) || strtok_r(NULL, " ", &save))
        return false;
    out->vw = (int)vw;
    return copy(out->name, sizeof out->name, f[0]) && copy(out->triple, sizeof out->triple, f[2]) &&
           copy(out->cpu, sizeof out->cpu, f[3]) &&
           copy(out->features, sizeof out->features, f[4]);
}

/* Feature `f` ("+avx2") is an item of the comma list `list`. */
static bool has_feature(const char *list, const char *f, size_t len)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, f, len) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

bool rt_cpu_target_runs_here(const rt_cpu_target *t, const rt_cpu_target *host)
{
    if (strcmp(t->triple, host->triple) != 0)
        return false;
    for (const char *p = t->features; *p;) {
        size_t n = strcspn(p, ",");
        if (n && p[0] == '+' && !has_feature(host->features, p, n))
            return false;
        p += n + (p[n] == ',');
    }
    return true;
}
#endif /* RNNC_HAVE_LLVM */
